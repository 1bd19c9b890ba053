#pragma once
// Winograd's minimal filtering F(m x m, 3 x 3) (Lavin and Gray, "Fast Algorithms for
// Convolutional Neural Networks"): an m x m tile of a 3x3 convolution's outputs (a correlation, as
// ONNX's Conv) is Y = A^T [U (.) V] A, where V = B^T d B transforms the tile's (m + 2) x (m + 2)
// input patch d, U = G g G^T the filter g, and (.) multiplies elementwise (summed over input
// channels). The matrices are here once, for the plan (which transforms the filters) and the
// twin's printer (which prints the input and output transforms from them).
namespace eqfuse::codegen {

struct WinogradTransform {
  int m = 0;             // the output tile's size
  int alpha = 0;         // the input tile's, m + 2
  double BT[6][6] = {};  // alpha x alpha
  double G[6][3] = {};   // alpha x 3
  double AT[4][6] = {};  // m x alpha
};

// F(2x2, 3x3): 16 products a tile of 4 outputs (the direct sum's 36), interpolating at 0, 1, -1
// and infinity.
inline constexpr WinogradTransform kWinograd2 = {
    2,
    4,
    {{1, 0, -1, 0}, {0, 1, 1, 0}, {0, -1, 1, 0}, {0, 1, 0, -1}},
    {{1, 0, 0}, {0.5, 0.5, 0.5}, {0.5, -0.5, 0.5}, {0, 0, 1}},
    {{1, 1, 1, 0}, {0, 1, -1, -1}}};

// F(4x4, 3x3): 36 products a tile of 16 outputs (the direct sum's 144), at 0, 1, -1, 2, -2 and
// infinity. Its transforms' larger coefficients round more than F(2x2, 3x3)'s.
inline constexpr WinogradTransform kWinograd4 = {
    4,
    6,
    {{4, 0, -5, 0, 1, 0},
     {0, -4, -4, 1, 1, 0},
     {0, 4, -4, -1, 1, 0},
     {0, -2, -1, 2, 1, 0},
     {0, 2, -1, -2, 1, 0},
     {0, 4, 0, -5, 0, 1}},
    {{1.0 / 4, 0, 0},
     {-1.0 / 6, -1.0 / 6, -1.0 / 6},
     {-1.0 / 6, 1.0 / 6, -1.0 / 6},
     {1.0 / 24, 1.0 / 12, 1.0 / 6},
     {1.0 / 24, -1.0 / 12, 1.0 / 6},
     {0, 0, 1}},
    {{1, 1, 1, 1, 1, 0}, {0, 1, -1, 2, -2, 0}, {0, 1, 1, 4, 4, 0}, {0, 1, -1, 8, -8, 1}}};

// The transform for tiles of m x m outputs (2 or 4).
inline const WinogradTransform& winograd_transform(int m) {
  return m == 4 ? kWinograd4 : kWinograd2;
}

}  // namespace eqfuse::codegen
