# Cluster autoscaler: one scale-up decision at 1,000 pods x 50 groups; churn of both expanders.
add_executable(clusterscale_bench clusterscale_bench.cc)
target_link_libraries(clusterscale_bench PRIVATE benchmark::benchmark seedance_clusterscale
                                                 seedance_sim seedance_trace)
add_executable(clusterscale_churn clusterscale_churn.cc)
target_link_libraries(clusterscale_churn PRIVATE seedance_clusterscale seedance_sim seedance_trace)
