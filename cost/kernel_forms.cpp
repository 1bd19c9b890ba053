#include "cost/kernel_forms.h"

namespace eqfuse::cost {

std::vector<ConvTile> conv_tiles(int64_t channels_per_group) {
  // Tiles of 128 pixels measured slower than tiles of 64 on the H200 (README); a tile of 64
  // channels only where 128 would be mostly empty.
  if (channels_per_group < kConvTileMinChannels) return {};
  if (channels_per_group > 64) return {{128, 64}, {32, 64}};
  if (channels_per_group > 32) return {{64, 64}, {32, 64}};
  return {{32, 64}};
}

double conv_tile_relative_efficiency(ConvTile tile) {
  if (tile.m >= 128) return 1.0;
  return tile.m >= 64 ? 0.92 : 0.57;
}

int64_t conv_tile_count(ConvTile tile, int64_t groups, int64_t channels_per_group, int64_t pixels) {
  return groups * ((channels_per_group + tile.m - 1) / tile.m) * ((pixels + tile.p - 1) / tile.p);
}

ConvTile pick_conv_tile(const std::vector<ConvTile>& tiles, int64_t groups,
                        int64_t channels_per_group, int64_t pixels) {
  for (const ConvTile& t : tiles)
    if (conv_tile_count(t, groups, channels_per_group, pixels) >= kConvFullWave) return t;
  return tiles.back();
}

}  // namespace eqfuse::cost
