# Placeholder: KV block manager, batch schedulers, traces and serving simulator go here.
target_sources(seedance_serving PRIVATE kv_block_manager.cc)
