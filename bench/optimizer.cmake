# optimize() on the shared models (see bench/optimizer_bench.cpp).
eqfuse_bench(optimizer_bench SOURCES ${CMAKE_CURRENT_LIST_DIR}/optimizer_bench.cpp
  DEPS eqfuse_optimizer eqfuse_frontend)
