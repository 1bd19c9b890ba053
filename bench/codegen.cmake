# The C++ twin against the interpreter on the shared models (see bench/codegen_bench.cpp).
eqfuse_bench(codegen_bench SOURCES ${CMAKE_CURRENT_LIST_DIR}/codegen_bench.cpp
  DEPS eqfuse_codegen eqfuse_optimizer eqfuse_frontend)
