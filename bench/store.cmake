# seedance_store: durable commits per second (batches of 1 and 64 pods, each fsync'd) and the
# restart cost (Open + Load of 100,000 pods). Writes under $SEEDANCE_BENCH_DIR (default: the
# current directory, which must be on a real disk: tmpfs makes fsync free).
#   build/bench/store_bench --benchmark_min_time=2
add_executable(store_bench store_bench.cc)
target_link_libraries(store_bench PRIVATE benchmark::benchmark seedance_store)
