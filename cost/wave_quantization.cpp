#include "cost/wave_quantization.h"

#include <algorithm>

namespace eqfuse::cost {
namespace {

int64_t ceil_div(int64_t a, int64_t b) {
  return (a + b - 1) / b;
}

}  // namespace

int64_t gemm_tiles(int64_t batch, int64_t m, int64_t n, int tile_m, int tile_n) {
  return std::max<int64_t>(1, batch) * ceil_div(std::max<int64_t>(1, m), tile_m) *
         ceil_div(std::max<int64_t>(1, n), tile_n);
}

std::optional<int64_t> gemm_output_tiles(const ir::OpContext& ctx,
                                         const std::vector<ir::TensorType>& outputs, int tile_m,
                                         int tile_n) {
  if (outputs.empty() || !outputs[0].shape.is_static()) return std::nullopt;
  std::vector<int64_t> dims = outputs[0].shape.static_dims();
  const std::string& op = ctx.node.op_type;
  if (op == "MatMul" || op == "Gemm") {
    // [..., M, N]; a vector result is a 1 x N (or M x 1) GEMM.
    if (dims.empty()) return 1;
    if (dims.size() == 1) return gemm_tiles(1, 1, dims[0], tile_m, tile_n);
    int64_t batch = 1;
    for (size_t i = 0; i + 2 < dims.size(); ++i) batch *= dims[i];
    return gemm_tiles(batch, dims[dims.size() - 2], dims.back(), tile_m, tile_n);
  }
  if (op == "Conv" || op == "ConvTranspose") {
    // [N, C_out, spatial...] as `group` implicit GEMMs of (N x pixels) x (C_out / group).
    if (dims.size() < 2) return std::nullopt;
    int64_t group = std::max<int64_t>(1, ctx.node.attrs.get_int("group", 1));
    int64_t m = dims[0];
    for (size_t i = 2; i < dims.size(); ++i) m *= dims[i];
    return gemm_tiles(group, m, dims[1] / group, tile_m, tile_n);
  }
  return std::nullopt;
}

double wave_efficiency(int64_t tiles, int sm_count) {
  if (tiles <= 0 || sm_count <= 0) return 1.0;
  int64_t waves = ceil_div(tiles, sm_count);
  return static_cast<double>(tiles) / static_cast<double>(waves * sm_count);
}

}  // namespace eqfuse::cost
