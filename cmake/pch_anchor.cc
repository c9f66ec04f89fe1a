// The translation unit a precompiled header is built with (cmake/SeedancePch.cmake).
