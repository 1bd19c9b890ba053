#include "cost/wave_quantization.h"

#include <algorithm>

#include "cost/kernel_forms.h"

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

std::optional<ConvForm> conv_form(const ir::OpContext& ctx,
                                  const std::vector<ir::TensorType>& outputs, int sm_count) {
  if (ctx.node.op_type != "Conv" || outputs.empty() || !outputs[0].shape.is_static() ||
      ctx.input_types.size() < 2 || !ctx.input_types[1] || !ctx.input_types[1]->shape.is_static())
    return std::nullopt;
  const std::vector<int64_t> dims = outputs[0].shape.static_dims();
  const std::vector<int64_t> ws = ctx.input_types[1]->shape.static_dims();
  if (dims.size() < 3 || ws.size() != dims.size()) return std::nullopt;
  const int64_t groups = std::max<int64_t>(1, ctx.node.attrs.get_int("group", 1));
  const int64_t channels = std::max<int64_t>(1, dims[1] / groups);
  int64_t pixels = dims[0], k = 1;
  for (size_t i = 2; i < dims.size(); ++i) pixels *= dims[i];
  for (size_t i = 1; i < ws.size(); ++i) k *= ws[i];
  pixels = std::max<int64_t>(1, pixels);
  k = std::max<int64_t>(1, k);
  const ir::DType t = outputs[0].dtype;
  const std::vector<ConvTile> tiles =
      conv_tiles(static_cast<int64_t>(dims.size()) - 2,
                 t == ir::DType::f32 || t == ir::DType::f16 || t == ir::DType::bf16, channels);
  ConvForm form;
  if (tiles.empty()) {
    // Each output reads its k inputs itself: an input element once for every output pixel
    // whose window covers it (a stride-2 3x3 about 9 / 4 times; taps in the padding counted
    // too). The other output channels of its group read it again, taken to hit the cache.
    const ir::TensorType* x = ctx.input_types[0];
    if (x && x->shape.is_static()) {
      const double input = static_cast<double>(x->shape.numel().value_or(1));
      form.input_reads =
          std::max(1.0, static_cast<double>(groups * pixels) * k / std::max(1.0, input));
    }
    return form;
  }
  if (sm_count <= 0) return form;
  const ConvTile tile = pick_conv_tile(tiles, groups, channels, pixels);
  const int64_t waves = ceil_div(conv_tile_count(tile, groups, channels, pixels), sm_count);
  const double slots = static_cast<double>(waves * sm_count) *
                       static_cast<double>(tile.m * tile.p) *
                       static_cast<double>(ceil_div(k, kConvSliceK) * kConvSliceK);
  form.compute_factor = static_cast<double>(groups * channels * pixels) * static_cast<double>(k) /
                        slots * conv_tile_relative_efficiency(tile);
  return form;
}

double wave_efficiency(int64_t tiles, int sm_count) {
  if (tiles <= 0 || sm_count <= 0) return 1.0;
  int64_t waves = ceil_div(tiles, sm_count);
  return static_cast<double>(tiles) / static_cast<double>(waves * sm_count);
}

}  // namespace eqfuse::cost
