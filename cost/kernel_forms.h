#pragma once
// The loop forms of eqfuse's generated CUDA kernels where the form decides how fast a kernel
// runs. The printer (codegen) prints these forms and the cost model prices them, both from
// here, so that what is priced is what runs.
#include <cstdint>
#include <vector>

namespace eqfuse::cost {

// A 2-D convolution with at least kConvTileMinChannels output channels per group runs as an
// implicit GEMM per group in tiles of `m` output channels by `p` output pixels (codegen's
// body_conv_gemm); with fewer it runs one output per thread.
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

// The tiles a convolution with `channels_per_group` output channels per group may take,
// largest first; empty below kConvTileMinChannels.
std::vector<ConvTile> conv_tiles(int64_t channels_per_group);

// A tile's compute efficiency relative to the 128x64 tile's (the profile's `convolution`): a
// thread of the 128x64 tile sums 8x4 outputs in registers, of the 64x64 tile 4x4 and of the
// 32x64 tile 2x4, so the smaller tiles do fewer multiply-adds per value read from shared memory.
// Fitted to the per-stage times of every convolution of resnet18, squeezenet1_1 and mobilenet_v2
// at batch 1 and 64 on an H200 (README, "The cost model against the kernels").
double conv_tile_relative_efficiency(ConvTile tile);

// How many tiles of `tile` cover `groups` groups of `channels_per_group` channels by `pixels`
// output pixels (batch included).
int64_t conv_tile_count(ConvTile tile, int64_t groups, int64_t channels_per_group, int64_t pixels);

// The tile a run takes among `tiles` (conv_tiles' list, not empty), as the generated code picks.
ConvTile pick_conv_tile(const std::vector<ConvTile>& tiles, int64_t groups,
                        int64_t channels_per_group, int64_t pixels);

}  // namespace eqfuse::cost
