# Clock sync (SNTP client, offset/frequency estimators, drifting-clock simulator) and the adaptive
# control period (docs/clock.md).
target_sources(seedance_engine PRIVATE sntp.cc clock_sync.cc period_controller.cc)
target_link_libraries(seedance_engine PUBLIC absl::status absl::statusor absl::strings)

seedance_add_test(sntp_test SOURCES sntp_test.cc LIBS seedance_engine)
seedance_add_test(clock_sync_test SOURCES clock_sync_test.cc LIBS seedance_engine)
seedance_add_test(period_controller_test SOURCES period_controller_test.cc LIBS seedance_engine)
# Starts a real chronyd on a loopback port (never touching the system clock) and queries it.
seedance_add_test(chronyd_integration_test SOURCES chronyd_integration_test.cc
                  LIBS seedance_engine seedance_trace LABELS integration)

if(SEEDANCE_BUILD_FUZZ)
  # The packet code is compiled into the fuzzer itself so that it gets coverage instrumentation.
  add_executable(ntp_fuzz ntp_fuzz.cc sntp.cc clock_sync.cc)
  target_include_directories(ntp_fuzz PRIVATE ${PROJECT_SOURCE_DIR}/include)
  target_compile_options(ntp_fuzz PRIVATE -fsanitize=fuzzer,address,undefined
                                          -fno-omit-frame-pointer)
  target_link_options(ntp_fuzz PRIVATE -fsanitize=fuzzer,address,undefined)
  target_link_libraries(ntp_fuzz PRIVATE absl::status absl::statusor absl::strings Threads::Threads
                                         seedance_base)
endif()

if(SEEDANCE_BUILD_TESTS)
  # `seedance clock probe|simulate` and `bench timers` flags and outputs end to end, including a
  # probe against a UDP server on 127.0.0.1 whose first reply is impossible.
  add_test(NAME clock_bench_cli COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/clock_bench_cli_test.sh
                                        $<TARGET_FILE:seedance>)
endif()
