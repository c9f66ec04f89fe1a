# Controllers that act on a running server (docs/serving.md): the APDF breaker (precision level
# from each window's error rate, P99 latency and QPS) and the memory-pressure controller
# (micro-batch and accumulation steps from observed memory use).
target_sources(seedance_serving PRIVATE apdf.cc memory_pressure.cc)

seedance_add_test(apdf_test SOURCES apdf_test.cc LIBS seedance_serving)
seedance_add_test(memory_pressure_test SOURCES memory_pressure_test.cc LIBS seedance_serving)
