# The live scheduler under load (BENCHMARKS.md, "Live scheduler"): server_load is the load
# generator; bench/server_bench.sh starts `seedance server` and drives it.
find_package(PkgConfig REQUIRED)
pkg_check_modules(HTTPLIB_BENCH REQUIRED IMPORTED_TARGET cpp-httplib)
add_executable(server_load server_load.cc)
target_link_libraries(server_load PRIVATE PkgConfig::HTTPLIB_BENCH nlohmann_json::nlohmann_json
                      Threads::Threads)
# The kube-scheduler extender under load (BENCHMARKS.md, "Kubernetes extender"):
# bench/extender_bench.sh starts `seedance server` with the trace's nodes and drives it.
add_executable(extender_load extender_load.cc)
target_link_libraries(extender_load PRIVATE PkgConfig::HTTPLIB_BENCH nlohmann_json::nlohmann_json
                      Threads::Threads)
