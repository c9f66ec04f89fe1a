# Placeholder: cost model, precision binding, APDF breaker sources and tests go here.
target_sources(seedance_serving PRIVATE cost_model.cc)
