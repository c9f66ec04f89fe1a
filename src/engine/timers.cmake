# TimerWheel, its thread-safe front (TimerService), NanoScheduler and the side-by-side timer
# baselines (docs/engine.md).
target_sources(seedance_engine PRIVATE
  timer_wheel.cc
)

seedance_add_test(timer_wheel_test SOURCES timer_wheel_test.cc LIBS seedance_engine)
