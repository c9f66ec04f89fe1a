# Inference runtime (docs/serving.md): paged KV block manager, continuous and static batch
# schedulers, LLM request trace readers, the trace-driven serving simulator and the online
# precision probe (A/B experiments on precision plans played through it).
target_sources(seedance_serving PRIVATE
  kv_block_manager.cc
  batch_scheduler.cc
  request_trace.cc
  serving_sim.cc
  probe.cc)
target_link_libraries(seedance_serving PUBLIC absl::flat_hash_map absl::flat_hash_set)

seedance_add_test(kv_block_manager_test SOURCES kv_block_manager_test.cc LIBS seedance_serving)
seedance_add_test(batch_scheduler_test SOURCES batch_scheduler_test.cc LIBS seedance_serving)
seedance_add_test(request_trace_test SOURCES request_trace_test.cc
                  LIBS seedance_serving seedance_trace)
seedance_add_test(serving_sim_test SOURCES serving_sim_test.cc LIBS seedance_serving seedance_trace)
seedance_add_test(probe_test SOURCES probe_test.cc LIBS seedance_serving)

if(SEEDANCE_BUILD_TESTS)
  # `seedance serve-sim` end to end: good traces give the JSON contract, bad ones exit 2 with
  # file and line.
  add_test(NAME serve_sim_cli COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/serve_sim_cli_test.sh
                                      $<TARGET_FILE:seedance>)
endif()

if(SEEDANCE_BUILD_FUZZ)
  # Trace parsers and a short replay of what they accept (`make fuzz`, FUZZ_TARGETS). The fuzz
  # build instruments every library (fuzzer-no-link), so linking seedance_serving gives coverage.
  add_executable(request_trace_fuzz request_trace_fuzz.cc)
  target_compile_options(request_trace_fuzz PRIVATE -fsanitize=fuzzer,address,undefined
                                                    -fno-omit-frame-pointer)
  target_link_options(request_trace_fuzz PRIVATE -fsanitize=fuzzer,address,undefined)
  target_link_libraries(request_trace_fuzz PRIVATE seedance_serving)
endif()
