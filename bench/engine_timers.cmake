# TimerWheel vs Boost.Asio, libevent and a std heap (pairs with 1M resident timers, expiry rate,
# wall-clock lateness); NanoScheduler spawn+join, yield, checkpoint cost, preemption latency.
#   build/bench/timer_bench --benchmark_repetitions=5 --benchmark_report_aggregates_only=true
#   build/bench/nano_bench  --benchmark_repetitions=5 --benchmark_report_aggregates_only=true
add_executable(timer_bench timer_bench.cc)
target_link_libraries(timer_bench PRIVATE benchmark::benchmark seedance_engine)

add_executable(nano_bench nano_bench.cc)
target_link_libraries(nano_bench PRIVATE benchmark::benchmark seedance_engine)
