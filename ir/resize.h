#pragma once
// Resize's meaning along each axis, shared by the interpreter's kernel (ir/ops/resize.cpp) and
// generated code (codegen/printer_index_ops.cpp), so that both map output coordinates to the
// same input coordinates.
#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "ir/op_table.h"
#include "ir/shape.h"

namespace eqfuse::ir {

struct ResizeSpec {
  std::vector<double> scales;  // per axis, the scale used by the coordinate transform
  std::vector<int64_t> out;    // per axis (static input only)
  std::vector<double> roi;     // 2*rank: starts then ends (tf_crop_and_resize)
};

// Scales and sizes of a Resize (or Upsample) node expanded to every axis of an input of shape
// `in`; nullopt when they are not constants.
std::optional<ResizeSpec> resize_spec(const OpContext& ctx, const Shape& in);

// The node's mode ("nearest", "linear" for bilinear and trilinear too, "cubic"), coordinate
// transformation and nearest rounding, with the older forms' defaults applied (Upsample and
// Resize-10 take asymmetric coordinates and floor).
struct ResizeModes {
  std::string mode, coordinates, nearest;
};
ResizeModes resize_modes(const OpContext& ctx);

// The input coordinate that output coordinate x maps to along one axis of `in` input and `out`
// output elements under coordinate transformation `mode`. As in ONNX's reference, the output
// length in the formulas is scale * in (not rounded), which differs from the integer output
// size when scales are given.
double source_coordinate(const std::string& mode, double x, double scale, int64_t in, int64_t out,
                         double roi_start, double roi_end);

// Cubic mode: the weights of the four input elements floor(x) - 1 .. floor(x) + 2 around input
// coordinate x, where t = x - floor(x), under cubic_coeff_a `a` (Keys' cubic convolution).
std::array<double, 4> cubic_weights(double t, double a);

}  // namespace eqfuse::ir
