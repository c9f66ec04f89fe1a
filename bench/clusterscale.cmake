# Cluster autoscaler: one scale-up decision at 1,000 pods x 50 groups. (Churn of both
# autoscalers is `seedance simulate --mode autoscale`.)
add_executable(clusterscale_bench clusterscale_bench.cc)
target_link_libraries(clusterscale_bench PRIVATE benchmark::benchmark seedance_clusterscale
                                                 seedance_sim seedance_trace)
