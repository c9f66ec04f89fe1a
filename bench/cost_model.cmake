# StepSeconds of the GPU cost model (called once per simulated iteration by serve-sim).
add_executable(cost_model_bench cost_model_bench.cc)
target_link_libraries(cost_model_bench PRIVATE benchmark::benchmark seedance_model_cost)
