#pragma once
// Wave quantization of GEMM-shaped kernels. A GEMM kernel cuts its output into tiles and runs
// one tile per SM at a time; when the tile count is not a multiple of the SM count the last wave
// leaves SMs idle, so a 133-tile GEMM on 132 SMs takes two full waves. Convolutions run as
// implicit GEMMs and quantize the same way, in the tiles they run in (cost/kernel_forms.h). Skinny
// and small GEMMs are where this matters, and where a plain roofline is most optimistic.
#include <cstdint>
#include <optional>
#include <vector>

#include "ir/op_table.h"

namespace eqfuse::cost {

// Output tiles of a MatMul, Gemm, Conv or ConvTranspose (`outputs` statically shaped); nullopt
// for any other op.
std::optional<int64_t> gemm_output_tiles(const ir::OpContext& ctx,
                                         const std::vector<ir::TensorType>& outputs, int tile_m,
                                         int tile_n);

// How generated code runs a Conv (cost/kernel_forms.h), for pricing it.
struct ConvForm {
  // Tiles: the SMs' busy fraction in the tile the run picks, its tiles in waves of one per SM,
  // the tiles' unused channels, pixels and k counted as idle, times the tile's relative
  // efficiency. One output per thread: 1.
  double compute_factor = 1.0;
  // How many times the input's bytes count: one output per thread reads its own inputs (no
  // tile stages them in shared memory), so an input element is read once for every output
  // pixel whose window covers it (the other output channels of its group taken to hit the
  // cache); tiles read it once.
  double input_reads = 1.0;
};
// nullopt for any other op or a shape that is not static (the caller then takes
// gemm_output_tiles').
std::optional<ConvForm> conv_form(const ir::OpContext& ctx,
                                  const std::vector<ir::TensorType>& outputs, int sm_count);

// Output tiles of `batch` GEMMs of m x n cut into tile_m x tile_n tiles (each count at least 1).
int64_t gemm_tiles(int64_t batch, int64_t m, int64_t n, int tile_m, int tile_n);

// tiles / (waves x SMs) with waves = ceil(tiles / SMs): the busy fraction of the SMs, in (0, 1].
double wave_efficiency(int64_t tiles, int sm_count);

}  // namespace eqfuse::cost
