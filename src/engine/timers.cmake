# TimerWheel, its thread-safe front (TimerService), NanoScheduler and the side-by-side timer
# benchmark with its baselines (docs/engine.md).
find_package(PkgConfig REQUIRED)
pkg_check_modules(LIBEVENT REQUIRED IMPORTED_TARGET libevent)  # the libevent baseline only
find_package(Boost REQUIRED)                                   # Boost.Asio baseline (headers)
find_package(absl REQUIRED)

target_sources(seedance_engine PRIVATE
  timer_wheel.cc
  timer_service.cc
  nano_scheduler.cc
  timer_bench.cc     # `seedance bench timers`: wheel vs Boost.Asio, libevent, std heap
)
target_link_libraries(seedance_engine
  PUBLIC absl::status absl::statusor
  PRIVATE absl::flat_hash_map Boost::headers PkgConfig::LIBEVENT)

seedance_add_test(timer_wheel_test SOURCES timer_wheel_test.cc LIBS seedance_engine)
seedance_add_test(timer_service_test SOURCES timer_service_test.cc LIBS seedance_engine)
seedance_add_test(nano_scheduler_test SOURCES nano_scheduler_test.cc LIBS seedance_engine)
