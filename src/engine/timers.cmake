# Placeholder: TimerWheel and NanoScheduler add target_sources(seedance_engine ...) and tests here.
target_sources(seedance_engine PRIVATE timer_wheel.cc)
