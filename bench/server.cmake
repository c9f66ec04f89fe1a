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
# The kubelet device plugin (BENCHMARKS.md, "Kubelet device plugin"): Allocate latency and
# re-registration after a kubelet restart, the kubelet played in-process.
add_executable(device_plugin_load device_plugin_load.cc)
target_include_directories(device_plugin_load PRIVATE ${PROJECT_SOURCE_DIR}/src)
target_link_libraries(device_plugin_load PRIVATE seedance_deviceplugin seedance_deviceplugin_api
                      Threads::Threads)
