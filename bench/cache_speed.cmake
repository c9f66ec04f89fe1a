# Replay speed of the cache-policy simulator against a plain unordered_map + list LRU floor, one
# thread, medians of 5 runs (issue 40's "Speed" line; BENCHMARKS.md). Release only:
#   build/bench/cache_replay [--traces P6,orm-busy,cloudphysics] [--policies lru,arc,...]
add_executable(cache_replay cache_replay.cc)
target_link_libraries(cache_replay PRIVATE seedance_cache seedance_trace CLI11::CLI11
                                           absl::strings absl::str_format)
