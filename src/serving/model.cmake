# GPU cost model, its calibration against operator profiles, precision binding, the APDF breaker
# and the memory-pressure controller (docs/serving-model.md).
target_sources(seedance_serving PRIVATE cost_model.cc profile_csv.cc calibration.cc precision.cc apdf.cc
                                        memory_pressure.cc)

seedance_add_test(cost_model_test SOURCES cost_model_test.cc LIBS seedance_serving)
seedance_add_test(calibration_test SOURCES calibration_test.cc LIBS seedance_serving seedance_trace)
seedance_add_test(precision_test SOURCES precision_test.cc LIBS seedance_serving)
seedance_add_test(apdf_test SOURCES apdf_test.cc LIBS seedance_serving)
seedance_add_test(memory_pressure_test SOURCES memory_pressure_test.cc LIBS seedance_serving)
