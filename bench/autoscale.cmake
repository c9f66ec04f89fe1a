# Azure LLM trace replay of the container autoscaler's modes (hpa, seed, predictive) and an oracle,
# each replica priced by the serving simulator (docs/autoscale.md). Not a Google Benchmark: it
# prints a table (or --json). Needs the public data (trace::DataDir()); skips a missing trace.
add_executable(autoscale_replay autoscale_replay.cc)
target_link_libraries(autoscale_replay PRIVATE seedance_autoscale seedance_engine
                                               seedance_model_cost seedance_serving seedance_trace)
