# seedance_model: the precision planner against a Neural-Compressor-like fallback search and an
# exhaustive search, on the torch fixtures (tools/model_fixtures/make_fixtures.sh).
add_executable(model_plan_compare model_plan_compare.cc)
target_link_libraries(model_plan_compare PRIVATE seedance_model absl::strings)

# FP32 inference time on a fixture, beside onnxruntime's (bench/model_speed.sh).
add_executable(model_infer_time model_infer_time.cc)
target_link_libraries(model_infer_time PRIVATE seedance_model absl::strings)
