# Precompiled headers for the sanitizer and fuzz builds (`make asan`, `make fuzz`: what `make
# test` and CI compile).
#
# Nearly every test source includes GoogleTest, GoogleMock, nlohmann/json and Abseil's status and
# strings; parsing them and instantiating json's templates is most of a test's compile time at -O0
# (a one-line test with those headers: 3.8 s of CPU under clang with ASan, 1.4 s with this PCH,
# on the 2-core session machine). One PCH per flag set is built once and reused by every target
# of that set (REUSE_FROM): one for the tests (-O0, see seedance_add_test), one for the product
# libraries (the build's -O1). Only third-party headers are precompiled, so that editing a
# project header rebuilds what it did before, no more.
#
# Clang only (gcc ignores a PCH whose flags differ instead of failing), and only with
# SEEDANCE_SANITIZE or SEEDANCE_BUILD_FUZZ: the release build compiles as before. A source whose
# own options change what the PCH was made with (the model kernels without sanitizers in the
# fuzz build) sets SKIP_PRECOMPILE_HEADERS.
if(CMAKE_CXX_COMPILER_ID STREQUAL "Clang" AND (SEEDANCE_SANITIZE OR SEEDANCE_BUILD_FUZZ))
  set(seedance_pch_default ON)
else()
  set(seedance_pch_default OFF)
endif()
option(SEEDANCE_PCH "Precompiled third-party headers for tests and libraries (clang + sanitizers)"
       ${seedance_pch_default})

set(SEEDANCE_PCH_HEADERS
  <algorithm> <cstdint> <functional> <map> <memory> <optional> <string> <string_view>
  <unordered_map> <utility> <vector>
  <nlohmann/json.hpp>
  <absl/status/status.h> <absl/status/statusor.h> <absl/strings/str_cat.h>
  <absl/strings/str_format.h>)

if(SEEDANCE_PCH)
  add_library(seedance_lib_pch OBJECT ${PROJECT_SOURCE_DIR}/cmake/pch_anchor.cc)
  target_link_libraries(seedance_lib_pch PRIVATE nlohmann_json::nlohmann_json absl::status
                        absl::statusor absl::strings absl::str_format)
  target_precompile_headers(seedance_lib_pch PRIVATE ${SEEDANCE_PCH_HEADERS})
  if(SEEDANCE_BUILD_TESTS)
    find_package(GTest REQUIRED)
    add_library(seedance_test_pch OBJECT ${PROJECT_SOURCE_DIR}/cmake/pch_anchor.cc)
    target_link_libraries(seedance_test_pch PRIVATE GTest::gtest GTest::gmock
                          nlohmann_json::nlohmann_json absl::status absl::statusor absl::strings
                          absl::str_format)
    # The tests' own sources compile at -O0 under the sanitizers (seedance_add_test): the PCH
    # must be made with the same optimisation level (clang refuses a mismatch).
    target_compile_options(seedance_test_pch PRIVATE -O0)
    target_precompile_headers(seedance_test_pch PRIVATE ${SEEDANCE_PCH_HEADERS} <gtest/gtest.h>
                              <gmock/gmock.h>)
  endif()
endif()

# Makes the product libraries of SEEDANCE_LIBRARIES (but `except`) reuse the libraries' PCH.
# Called once every library exists.
function(seedance_use_library_pch)
  cmake_parse_arguments(P "" "" "EXCEPT" ${ARGN})
  if(NOT SEEDANCE_PCH)
    return()
  endif()
  foreach(lib IN LISTS SEEDANCE_LIBRARIES)
    if(NOT lib IN_LIST P_EXCEPT AND TARGET seedance_${lib})
      target_precompile_headers(seedance_${lib} REUSE_FROM seedance_lib_pch)
    endif()
  endforeach()
endfunction()
