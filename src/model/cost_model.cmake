# seedance_model_cost: the GPU cost model of a transformer's forward iteration, its calibration
# against measured operator profiles and precision binding per layer class
# (docs/gpu-cost-model.md). A library of its own beside seedance_model because none of it reads
# ONNX or runs oneDNN (the narrow float formats, float_formats.h, live here too, for seedance_train's
# FP16/BF16 casts): seedance_serving links only this, so a serving program or test neither
# loads libonnx, protobuf and oneDNN nor carries objects of the executor (an archive pulled in for
# the cost model gave the linker seedance_model's objects for the C++ library symbols the test
# framework needed: 2x the serving test binaries, 4 more shared libraries at every start).
add_library(seedance_model_cost STATIC cost_model.cc profile_csv.cc calibration.cc precision.cc
                                       plan_file.cc float_formats.cc)
target_include_directories(seedance_model_cost PUBLIC $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}/include>)
target_link_libraries(seedance_model_cost PUBLIC seedance_base absl::status absl::statusor
                                          PRIVATE seedance_hw absl::strings)

seedance_add_test(model_cost_model_test SOURCES cost_model_test.cc LIBS seedance_model_cost)
seedance_add_test(model_calibration_test SOURCES calibration_test.cc
                  LIBS seedance_model_cost seedance_trace)
seedance_add_test(model_precision_test SOURCES precision_test.cc LIBS seedance_model_cost)
# `model plan` JSON for serving: classes, formats, error feedback, the pod's GPU memory.
seedance_add_test(model_plan_file_test SOURCES plan_file_test.cc LIBS seedance_model_cost)

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
