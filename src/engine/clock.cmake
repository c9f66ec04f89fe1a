# Placeholder: clock sync, SNTP and PeriodController add target_sources(seedance_engine ...) here.
target_sources(seedance_engine PRIVATE clock_sync.cc)
