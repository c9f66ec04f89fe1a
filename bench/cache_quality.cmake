# Seedance's cache policy against the six published ones on every shipped cache trace, and its
# recovery after a restart (docs/cache.md, "Seedance's policy and prewarming"). Release only:
#   build/bench/cache_quality [--traces gli,P6] [--sizes 0.01,0.05,0.1,0.25]
add_executable(cache_quality cache_quality.cc)
target_link_libraries(cache_quality PRIVATE seedance_cache seedance_trace CLI11::CLI11
                                            absl::flat_hash_set)
