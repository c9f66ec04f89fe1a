# Mixed-precision gradient clipping and the loss scaler (clip.h), their unit tests, and the C
# interface Python loads (c_api.h) with its comparison against torch.nn.utils.clip_grad_norm_.
target_sources(seedance_train PRIVATE clip.cc)
seedance_add_test(train_clip_test PREFIX "train." SOURCES clip_test.cc LIBS seedance_train)

# seedance_train_c: the shared library a ctypes caller loads. Built from the sources (not from
# the static libraries, which are neither position-independent nor, under SEEDANCE_SANITIZE,
# loadable into an uninstrumented python), without MPI. check.cc is all of seedance_base that
# check.h needs.
set(SEEDANCE_TRAIN_C_SOURCES
    ${CMAKE_CURRENT_SOURCE_DIR}/compress.cc clip.cc c_api_clip.cc
    ${PROJECT_SOURCE_DIR}/src/model/float_formats.cc ${PROJECT_SOURCE_DIR}/src/base/check.cc)
if(EXISTS ${CMAKE_CURRENT_SOURCE_DIR}/c_api_compress.cc)
  list(APPEND SEEDANCE_TRAIN_C_SOURCES c_api_compress.cc)
endif()
add_library(seedance_train_c SHARED ${SEEDANCE_TRAIN_C_SOURCES})
target_include_directories(seedance_train_c PRIVATE ${PROJECT_SOURCE_DIR}/include)
target_link_libraries(seedance_train_c PRIVATE absl::status absl::statusor absl::strings)
# Only the C API leaves the library: C++ internals are hidden, the C wrappers (which c_api.h
# declares without a visibility attribute) compile with default visibility, and the version
# script keeps every symbol but seedance_train_* local (inline C++ from headers included).
set(SEEDANCE_TRAIN_C_MAP ${CMAKE_CURRENT_BINARY_DIR}/seedance_train_c.map)
file(WRITE ${SEEDANCE_TRAIN_C_MAP} "{\n  global: seedance_train_*;\n  local: *;\n};\n")
set_target_properties(seedance_train_c PROPERTIES CXX_VISIBILITY_PRESET hidden
                                                  VISIBILITY_INLINES_HIDDEN ON
                                                  LINK_DEPENDS ${SEEDANCE_TRAIN_C_MAP})
set_source_files_properties(c_api_clip.cc c_api_compress.cc TARGET_DIRECTORY seedance_train_c
                            PROPERTIES COMPILE_OPTIONS -fvisibility=default)
target_link_options(seedance_train_c PRIVATE -Wl,--version-script=${SEEDANCE_TRAIN_C_MAP}
                    -Wl,--no-undefined)
# Under the sanitizers the library is still loaded by an uninstrumented /usr/bin/python3, which
# has no sanitizer runtime: this target opts out (after the global -fsanitize flags, so it wins).
if(SEEDANCE_SANITIZE)
  target_compile_options(seedance_train_c PRIVATE -fno-sanitize=all)
  target_link_options(seedance_train_c PRIVATE -fno-sanitize=all)
endif()

if(SEEDANCE_BUILD_TESTS)
  # Exits 77 (skipped) when torch is not importable, unless SEEDANCE_REQUIRE_DATA=1.
  add_test(NAME train_mpgc_torch_test
           COMMAND /usr/bin/python3 ${CMAKE_CURRENT_SOURCE_DIR}/mpgc_torch_test.py
                   $<TARGET_FILE:seedance_train_c>)
  set_tests_properties(train_mpgc_torch_test PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 300)
endif()
