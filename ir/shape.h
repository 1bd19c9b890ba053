#pragma once
// Tensor shapes whose dims are integers or named symbols ("batch", "seq"), as ONNX models with
// dynamic batch or sequence length carry them. A shape may also be of unknown rank, which
// happens only for outputs of opaque ops whose inference failed.
#include <cstdint>
#include <initializer_list>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "ir/dtype.h"
#include "ir/sym_int.h"

namespace eqfuse::ir {

// A dim is static (an integer), symbolic (a named symbol such as "batch", or an expression of
// symbols such as "batch*64", see ir/sym_int.h) or unknown ("?").
class Dim {
 public:
  Dim(int64_t value = 0) : value_(value) {}  // NOLINT: an integer is a static dim
  static Dim symbol(std::string name);       // named dynamic dim
  static Dim unknown();                      // dynamic dim with no name
  // The dim of a symbolic size: static when it is a constant >= 0, unknown when it is unknown
  // or a negative constant, symbolic otherwise.
  static Dim from_sym(const SymInt& size);

  bool is_static() const { return value_ >= 0; }
  int64_t value() const { return value_; }  // -1 when dynamic
  // The symbol's name or the expression's canonical text; empty when static or unknown.
  const std::string& symbol_name() const { return symbol_; }
  // The size as a symbolic integer (unknown for an unknown dim).
  SymInt sym() const;
  // The size under a binding of symbol names; nullopt when unknown or a symbol is unbound.
  std::optional<int64_t> evaluate(const std::map<std::string, int64_t>& symbols) const;
  bool operator==(const Dim& other) const {
    return value_ == other.value_ && symbol_ == other.symbol_;
  }
  std::string str() const;  // "3", "batch", "batch*64", "?"

 private:
  int64_t value_;
  std::string symbol_;
  SymInt sym_ = SymInt::unknown();  // for symbolic dims
};

class Shape {
 public:
  Shape() = default;  // rank 0: a scalar
  Shape(std::initializer_list<Dim> dims) : dims_(dims) {}
  explicit Shape(std::vector<Dim> dims) : dims_(std::move(dims)) {}
  static Shape from_dims(const std::vector<int64_t>& dims);
  static Shape unranked();

  bool has_rank() const { return ranked_; }
  size_t rank() const { return dims_.size(); }
  const std::vector<Dim>& dims() const { return dims_; }
  std::vector<Dim>& dims() { return dims_; }
  const Dim& operator[](size_t i) const { return dims_[i]; }
  Dim& operator[](size_t i) { return dims_[i]; }

  bool is_static() const;  // ranked and every dim an integer
  // The integer dims; only for static shapes.
  std::vector<int64_t> static_dims() const;
  // Element count when static.
  std::optional<int64_t> numel() const;
  // Element count as a symbolic integer: "batch*8192"; unknown when the rank or a dim is.
  SymInt sym_numel() const;

  bool operator==(const Shape& other) const = default;
  std::string str() const;  // "[1,3,224,224]", "[batch,128]", "[*]" for unranked

 private:
  std::vector<Dim> dims_;
  bool ranked_ = true;
};

struct TensorType {
  DType dtype = DType::f32;
  Shape shape;
  bool operator==(const TensorType& other) const = default;
  std::string str() const;  // "f32[1,3,224,224]"
};

// Element count of a static dims vector.
int64_t product(const std::vector<int64_t>& dims);

}  // namespace eqfuse::ir
