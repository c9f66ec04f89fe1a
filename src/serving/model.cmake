# GPU cost model, its calibration against operator profiles, precision binding, the APDF breaker
# and the memory-pressure controller (docs/serving-model.md).
target_sources(seedance_serving PRIVATE cost_model.cc profile_csv.cc calibration.cc precision.cc apdf.cc
                                        memory_pressure.cc)

seedance_add_test(cost_model_test SOURCES cost_model_test.cc LIBS seedance_serving)
seedance_add_test(calibration_test SOURCES calibration_test.cc LIBS seedance_serving seedance_trace)
seedance_add_test(precision_test SOURCES precision_test.cc LIBS seedance_serving)
seedance_add_test(apdf_test SOURCES apdf_test.cc LIBS seedance_serving)
seedance_add_test(memory_pressure_test SOURCES memory_pressure_test.cc LIBS seedance_serving)

if(SEEDANCE_BUILD_FUZZ)
  # The reader is compiled into the fuzzer itself so that it gets coverage instrumentation.
  add_executable(profile_csv_fuzz profile_csv_fuzz.cc profile_csv.cc calibration.cc cost_model.cc)
  target_include_directories(profile_csv_fuzz PRIVATE ${PROJECT_SOURCE_DIR}/include)
  target_compile_options(profile_csv_fuzz PRIVATE -fsanitize=fuzzer,address,undefined
                                                  -fno-omit-frame-pointer)
  target_link_options(profile_csv_fuzz PRIVATE -fsanitize=fuzzer,address,undefined)
  target_link_libraries(profile_csv_fuzz PRIVATE absl::status absl::statusor absl::strings
                                              seedance_base seedance_hw)
endif()

if(SEEDANCE_BUILD_TESTS)
  # `seedance costmodel check|fit` end to end: bad profiles and flags exit 2 naming them.
  add_test(NAME costmodel_cli COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/costmodel_cli_test.sh
                                      $<TARGET_FILE:seedance>)
endif()
