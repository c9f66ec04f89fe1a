# Azure LLM trace replay of the adaptive control period against a fixed period and the Kubernetes
# HPA rule (docs/clock.md). Not a Google Benchmark: it prints a table (or --json) of decisions,
# reaction times and overload. Needs the public data (trace::DataDir()).
add_executable(period_replay period_replay.cc)
target_link_libraries(period_replay PRIVATE seedance_engine seedance_trace)

# Cost of one estimator update (the regression refits its window on every sample).
add_executable(clock_bench clock_bench.cc)
target_link_libraries(clock_bench PRIVATE benchmark::benchmark seedance_engine)
