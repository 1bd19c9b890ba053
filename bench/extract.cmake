# Extraction benchmarks (see bench/extract_bench.cpp); they read ../shared/egraphs/tensat.
eqfuse_bench(extract_bench SOURCES ${CMAKE_CURRENT_LIST_DIR}/extract_bench.cpp DEPS eqfuse_extract)
