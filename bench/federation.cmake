# Placement across member clusters (BENCHMARKS.md, "Federation: placement across members"): the
# trace replayed through three in-process members (sched::Scheduler each), dispatched by the
# federation library's cost, first-to-admit and static-weight policies; seedance_server only for
# the GET /v1/cluster body a member serves (server::ClusterSummaryJson).
add_executable(federation_cost federation_cost.cc)
target_link_libraries(federation_cost PRIVATE seedance_federation seedance_server seedance_sched
                                              seedance_trace seedance_hw CLI11::CLI11)
