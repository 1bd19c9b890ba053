#pragma once
// The loop forms of eqfuse's generated CUDA kernels where the form decides how fast a kernel
// runs. The printer (codegen) prints these forms and the cost model prices them, both from
// here, so that the model prices the kernels a tree generates (a tree built with cuDNN may run a
// convolution through cuDNN instead, where that measures faster at run time). Header-only: the
// printer needs no more of the cost model than this.
#include <cstdint>
#include <vector>

namespace eqfuse::cost {

// A 2-D convolution of f32, f16 or bf16 elements with at least kConvTileMinChannels output
// channels per group runs as an implicit GEMM per group in tiles of `m` output channels by `p`
// output pixels (codegen's body_conv_gemm); any other convolution runs one output per thread.
struct ConvTile {
  int64_t m, p;
};
inline constexpr int64_t kConvTileMinChannels = 16;
// Each tile steps through k (input channels a group by taps) in slices of this many, staged in
// shared memory; a last partial slice costs a whole one.
inline constexpr int64_t kConvSliceK = 16;
// A run takes the largest tile of which there are at least this many, one per SM of an H200
// (the target device), so that small batches still fill the GPU; else the smallest.
inline constexpr int64_t kConvFullWave = 132;

// The tiles a convolution may take, largest first: `spatial_dims` its spatial rank,
// `float_elements` whether its output is f32, f16 or bf16. Empty where it runs one output per
// thread. Tiles of 128 pixels measured slower than tiles of 64 on the H200 (README); a tile of
// 64 channels only where 128 would be mostly empty.
inline std::vector<ConvTile> conv_tiles(int64_t spatial_dims, bool float_elements,
                                        int64_t channels_per_group) {
  if (spatial_dims != 2 || !float_elements || channels_per_group < kConvTileMinChannels) return {};
  if (channels_per_group > 64) return {{128, 64}, {32, 64}};
  if (channels_per_group > 32) return {{64, 64}, {32, 64}};
  return {{32, 64}};
}

// A tile's compute efficiency relative to the 128x64 tile's (the profile's `convolution`): a
// thread of the 128x64 tile sums 8x4 outputs in registers, of the 64x64 tile 4x4 and of the
// 32x64 tile 2x4, so the smaller tiles do fewer multiply-adds per value read from shared memory.
// Fitted to the per-stage times of every tiled convolution of resnet18, squeezenet1_1,
// mobilenet_v2 (batch 1 and 64) and vit_tiny (batch 1) on an H200 (bench/gpu/fit_conv_tiles.py;
// README, "The cost model against the kernels").
inline double conv_tile_relative_efficiency(ConvTile tile) {
  if (tile.m >= 128) return 1.0;
  return tile.m >= 64 ? 0.92 : 0.57;
}

// How many tiles of `tile` cover `groups` groups of `channels_per_group` channels by `pixels`
// output pixels (batch included).
inline int64_t conv_tile_count(ConvTile tile, int64_t groups, int64_t channels_per_group,
                               int64_t pixels) {
  return groups * ((channels_per_group + tile.m - 1) / tile.m) * ((pixels + tile.p - 1) / tile.p);
}

// The tile a run takes among `tiles` (conv_tiles' list, not empty), as the generated code picks
// it: the first of which there are at least kConvFullWave, else the last.
inline ConvTile pick_conv_tile(const std::vector<ConvTile>& tiles, int64_t groups,
                               int64_t channels_per_group, int64_t pixels) {
  for (const ConvTile& t : tiles)
    if (conv_tile_count(t, groups, channels_per_group, pixels) >= kConvFullWave) return t;
  return tiles.back();
}

}  // namespace eqfuse::cost
