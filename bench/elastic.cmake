# The dynamic SliceManager against static slices of size 8 at 10,000 containers (seed A 2.2), and
# TryAcquire+release pairs per second from many threads (docs/elastic.md). Prints a table.
add_executable(slice_bench slice_bench.cc)
target_link_libraries(slice_bench PRIVATE seedance_elastic CLI11::CLI11 Threads::Threads)

# GPU memory compaction in churn on the Alibaba trace's GPU-sharing pods (docs/elastic.md).
add_executable(defrag_churn defrag_churn.cc)
target_link_libraries(defrag_churn PRIVATE seedance_elastic seedance_trace CLI11::CLI11)

# Training-job re-placement in churn on the Alibaba trace (docs/elastic.md).
add_executable(replacement_churn replacement_churn.cc)
target_link_libraries(replacement_churn PRIVATE seedance_elastic seedance_trace CLI11::CLI11)
