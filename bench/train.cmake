# seedance_train: the gradient all-reduces where the network is the bottleneck (issue 38). The
# all-reduce driver runs under mpirun, normally inside bench/train_netns.sh's rate-limited network
# namespaces; the compress benchmark is a Google Benchmark on one core.
add_executable(train_allreduce_bench train_allreduce_bench.cc)
target_link_libraries(train_allreduce_bench PRIVATE seedance_train CLI11::CLI11 absl::strings
                                                    absl::time)

add_executable(train_compress_bench train_compress_bench.cc)
target_link_libraries(train_compress_bench PRIVATE benchmark::benchmark seedance_train)
