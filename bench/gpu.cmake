# The GPU benchmark's bandwidth micro-models (bench/gpu/prepare.sh runs it).
eqfuse_bench(gpu_micro_models SOURCES ${CMAKE_CURRENT_LIST_DIR}/gpu/micro_models.cpp
  DEPS eqfuse_frontend eqfuse_ir)
