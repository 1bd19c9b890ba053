# E-graph engine benchmarks (see bench/egraph_bench.cpp).
eqfuse_bench(egraph_bench SOURCES ${CMAKE_CURRENT_LIST_DIR}/egraph_bench.cpp DEPS eqfuse_egraph)
