# `seedance analyze` on a large profile: parse + analyze of 1,000 nodes x 300 samples.
add_executable(analyze_bench analyze_bench.cc)
target_link_libraries(analyze_bench PRIVATE benchmark::benchmark seedance_cost seedance_telemetry)
# Writes the synthetic profile used for the timed CLI run in BENCHMARKS.md.
add_executable(gen_profile gen_profile.cc)
target_link_libraries(gen_profile PRIVATE seedance_telemetry)
