# Tiering with money (issue 40 item 3): the seed's rule, the cost policy and the offline optimum on
# the shipped timed-and-sized cache traces, as recorded and stretched (a labelled sensitivity
# study). Run: build/bench/cache_tiering [--data DIR] [--span-days 30]
add_executable(cache_tiering cache_tiering.cc)
target_link_libraries(cache_tiering PRIVATE seedance_cache seedance_trace seedance_hw
                                            absl::flat_hash_set)
