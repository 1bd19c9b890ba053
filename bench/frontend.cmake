# Import and interpreter benchmarks (see bench/frontend_bench.cpp); they read ../shared/models.
eqfuse_bench(frontend_bench SOURCES ${CMAKE_CURRENT_LIST_DIR}/frontend_bench.cpp
  DEPS eqfuse_frontend)
