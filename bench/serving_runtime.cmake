# Inference runtime: KV block allocate/free and prefix lookup, one continuous-batching scheduler
# step with 256 running sequences (docs/serving.md, BENCHMARKS.md#serving-runtime).
add_executable(serving_runtime_bench kv_block_bench.cc batch_scheduler_bench.cc)
target_link_libraries(serving_runtime_bench PRIVATE benchmark::benchmark benchmark::benchmark_main
                                                    seedance_serving)
