#include "ir/scalar_program.h"

#include <fmt/format.h>
#include <tbb/parallel_for.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "ir/broadcast.h"
#include "support/error.h"

namespace eqfuse::ir {

namespace {
constexpr int64_t kChunk = 512;

void compile(const ScalarExpr& e, std::vector<ScalarProgram::Instr>& code, int depth,
             int& max_depth) {
  if (e.op == ScalarOp::Attr) {
    throw Error("scalar program: unbound attribute @" + e.attr, Error::Kind::Internal);
  }
  max_depth = std::max(max_depth, depth + 1);
  for (size_t i = 0; i < e.args.size(); ++i) {
    compile(*e.args[i], code, depth + static_cast<int>(i), max_depth);
  }
  code.push_back({e.op, static_cast<int32_t>(e.input), e.value});
}

template <typename T>
T from_const(double v) {
  if constexpr (std::is_same_v<T, double>) {
    return v;
  } else {
    if (std::isnan(v)) return 0;
    if (v >= 9.2e18) return std::numeric_limits<int64_t>::max();
    if (v <= -9.2e18) return std::numeric_limits<int64_t>::min();
    return static_cast<int64_t>(v);
  }
}

// Reads n elements of `t` starting at `offset` with `stride` (0: broadcast) as T.
template <typename T>
void load(const Tensor& t, int64_t offset, int64_t stride, int64_t n, T* out) {
  auto convert = [&]<typename S>(const S* p, auto to_value) {
    if (stride == 0) {
      std::fill(out, out + n, static_cast<T>(to_value(p[offset])));
    } else if (stride == 1) {
      for (int64_t i = 0; i < n; ++i) out[i] = static_cast<T>(to_value(p[offset + i]));
    } else {
      for (int64_t i = 0; i < n; ++i) out[i] = static_cast<T>(to_value(p[offset + i * stride]));
    }
  };
  auto same = [](auto v) { return v; };
  const std::byte* raw = t.raw();
  switch (t.dtype()) {
    case DType::f32:
      convert(reinterpret_cast<const float*>(raw), same);
      break;
    case DType::f64:
      convert(reinterpret_cast<const double*>(raw), same);
      break;
    case DType::f16:
      convert(reinterpret_cast<const uint16_t*>(raw), [](uint16_t b) { return half_to_float(b); });
      break;
    case DType::bf16:
      convert(reinterpret_cast<const uint16_t*>(raw),
              [](uint16_t b) { return bfloat16_to_float(b); });
      break;
    case DType::i8:
      convert(reinterpret_cast<const int8_t*>(raw), same);
      break;
    case DType::u8:
      convert(reinterpret_cast<const uint8_t*>(raw), same);
      break;
    case DType::i32:
      convert(reinterpret_cast<const int32_t*>(raw), same);
      break;
    case DType::i64:
      convert(reinterpret_cast<const int64_t*>(raw), same);
      break;
    case DType::boolean:
      convert(reinterpret_cast<const uint8_t*>(raw), [](uint8_t b) { return b != 0 ? 1 : 0; });
      break;
  }
}

template <typename I, typename T>
I to_integer(T v) {
  if constexpr (std::is_floating_point_v<T>) {
    if (std::isnan(v)) return 0;
    T tv = std::trunc(v);
    if (tv <= static_cast<T>(std::numeric_limits<I>::min())) return std::numeric_limits<I>::min();
    if (tv >= static_cast<T>(std::numeric_limits<I>::max())) return std::numeric_limits<I>::max();
    return static_cast<I>(tv);
  } else {
    return static_cast<I>(v);  // integer narrowing wraps, as C casts (and ONNX Cast) do
  }
}

template <typename T>
void store(const T* in, int64_t n, Tensor& t, int64_t offset) {
  std::byte* raw = t.raw();
  switch (t.dtype()) {
    case DType::f32: {
      auto* p = reinterpret_cast<float*>(raw) + offset;
      for (int64_t i = 0; i < n; ++i) p[i] = static_cast<float>(in[i]);
      break;
    }
    case DType::f64: {
      auto* p = reinterpret_cast<double*>(raw) + offset;
      for (int64_t i = 0; i < n; ++i) p[i] = static_cast<double>(in[i]);
      break;
    }
    case DType::f16: {
      auto* p = reinterpret_cast<uint16_t*>(raw) + offset;
      for (int64_t i = 0; i < n; ++i) p[i] = float_to_half(static_cast<float>(in[i]));
      break;
    }
    case DType::bf16: {
      auto* p = reinterpret_cast<uint16_t*>(raw) + offset;
      for (int64_t i = 0; i < n; ++i) p[i] = float_to_bfloat16(static_cast<float>(in[i]));
      break;
    }
    case DType::i8: {
      auto* p = reinterpret_cast<int8_t*>(raw) + offset;
      for (int64_t i = 0; i < n; ++i) p[i] = to_integer<int8_t>(in[i]);
      break;
    }
    case DType::u8: {
      auto* p = reinterpret_cast<uint8_t*>(raw) + offset;
      for (int64_t i = 0; i < n; ++i) p[i] = to_integer<uint8_t>(in[i]);
      break;
    }
    case DType::i32: {
      auto* p = reinterpret_cast<int32_t*>(raw) + offset;
      for (int64_t i = 0; i < n; ++i) p[i] = to_integer<int32_t>(in[i]);
      break;
    }
    case DType::i64: {
      auto* p = reinterpret_cast<int64_t*>(raw) + offset;
      for (int64_t i = 0; i < n; ++i) p[i] = to_integer<int64_t>(in[i]);
      break;
    }
    case DType::boolean: {
      auto* p = reinterpret_cast<uint8_t*>(raw) + offset;
      for (int64_t i = 0; i < n; ++i) p[i] = in[i] != T(0) ? 1 : 0;
      break;
    }
  }
}

// Runs the program over one chunk. `in[k]` holds input k's chunk; `scratch` has
// max_depth * kChunk elements. Returns the buffer holding the result.
template <typename T>
const T* run_chunk(const std::vector<ScalarProgram::Instr>& code, const std::vector<T*>& in,
                   T* scratch, int64_t n) {
  const T* stack[64];
  int sp = 0;
  for (const ScalarProgram::Instr& ins : code) {
    if (ins.op == ScalarOp::Input) {
      stack[sp++] = in[static_cast<size_t>(ins.input)];
      continue;
    }
    if (ins.op == ScalarOp::Const) {
      T* r = scratch + sp * kChunk;
      std::fill(r, r + n, from_const<T>(ins.value));
      stack[sp++] = r;
      continue;
    }
    int arity = scalar_op_arity(ins.op);
    sp -= arity;
    T* r = scratch + sp * kChunk;
    const T* a = stack[sp];
    const T* b = arity > 1 ? stack[sp + 1] : nullptr;
#define EQFUSE_LOOP(expr)                        \
  for (int64_t i = 0; i < n; ++i) r[i] = (expr); \
  break
    if constexpr (std::is_same_v<T, double>) {
      switch (ins.op) {
        case ScalarOp::Add:
          EQFUSE_LOOP(a[i] + b[i]);
        case ScalarOp::Sub:
          EQFUSE_LOOP(a[i] - b[i]);
        case ScalarOp::Mul:
          EQFUSE_LOOP(a[i] * b[i]);
        case ScalarOp::Div:
          EQFUSE_LOOP(a[i] / b[i]);
        case ScalarOp::Neg:
          EQFUSE_LOOP(-a[i]);
        case ScalarOp::Exp:
          EQFUSE_LOOP(std::exp(a[i]));
        case ScalarOp::Tanh:
          EQFUSE_LOOP(std::tanh(a[i]));
        case ScalarOp::Erf:
          EQFUSE_LOOP(std::erf(a[i]));
        case ScalarOp::Sqrt:
          EQFUSE_LOOP(std::sqrt(a[i]));
        case ScalarOp::Recip:
          EQFUSE_LOOP(1.0 / a[i]);
        case ScalarOp::Lt:
          EQFUSE_LOOP(a[i] < b[i] ? 1.0 : 0.0);
        case ScalarOp::Max:
          EQFUSE_LOOP(std::isnan(a[i]) || std::isnan(b[i]) ? NAN : (a[i] < b[i] ? b[i] : a[i]));
        case ScalarOp::Min:
          EQFUSE_LOOP(std::isnan(a[i]) || std::isnan(b[i]) ? NAN : (b[i] < a[i] ? b[i] : a[i]));
        case ScalarOp::Select: {
          const T* c = stack[sp + 2];
          EQFUSE_LOOP(a[i] != 0 ? b[i] : c[i]);
        }
        default: {
          T args[3];
          const T* c = arity > 2 ? stack[sp + 2] : nullptr;
          for (int64_t i = 0; i < n; ++i) {
            args[0] = a[i];
            if (b) args[1] = b[i];
            if (c) args[2] = c[i];
            r[i] = apply_scalar_op(ins.op, args);
          }
          break;
        }
      }
    } else {
      T args[3];
      const T* c = arity > 2 ? stack[sp + 2] : nullptr;
      for (int64_t i = 0; i < n; ++i) {
        args[0] = a[i];
        if (b) args[1] = b[i];
        if (c) args[2] = c[i];
        r[i] = apply_scalar_op_int(ins.op, args);
      }
    }
#undef EQFUSE_LOOP
    stack[sp++] = r;
  }
  return stack[0];
}

template <typename T>
void run_typed(const std::vector<ScalarProgram::Instr>& code, int max_depth,
               const std::vector<const Tensor*>& inputs, const std::vector<int64_t>& dims,
               Tensor& out) {
  // Coalesce dims: drop 1s, merge neighbours that every input reads contiguously (or broadcasts
  // across both), so the inner loop is as long as possible.
  std::vector<std::vector<int64_t>> strides;
  for (const Tensor* t : inputs) strides.push_back(broadcast_strides(t->dims(), dims));
  std::vector<int64_t> cd;
  std::vector<std::vector<int64_t>> cs(inputs.size());
  for (size_t d = 0; d < dims.size(); ++d) {
    if (dims[d] == 1) continue;
    bool merge = !cd.empty();
    for (size_t k = 0; k < inputs.size() && merge; ++k) {
      merge = cs[k].back() == strides[k][d] * dims[d];
    }
    if (merge) {
      cd.back() *= dims[d];
      for (size_t k = 0; k < inputs.size(); ++k) cs[k].back() = strides[k][d];
    } else {
      cd.push_back(dims[d]);
      for (size_t k = 0; k < inputs.size(); ++k) cs[k].push_back(strides[k][d]);
    }
  }
  if (cd.empty()) {
    cd.push_back(1);
    for (auto& s : cs) s.push_back(0);
  }
  int64_t inner = cd.back();
  int64_t chunks_per_row = (inner + kChunk - 1) / kChunk;
  int64_t rows = out.numel() / inner;
  int64_t tasks = rows * chunks_per_row;

  auto run_range = [&](int64_t begin, int64_t end) {
    std::vector<T> buffers(static_cast<size_t>(kChunk) * (inputs.size() + max_depth));
    std::vector<T*> in(inputs.size());
    for (size_t k = 0; k < inputs.size(); ++k) in[k] = buffers.data() + k * kChunk;
    T* scratch = buffers.data() + inputs.size() * kChunk;
    std::vector<T> result_copy;
    for (int64_t task = begin; task < end; ++task) {
      int64_t row = task / chunks_per_row;
      int64_t start = (task % chunks_per_row) * kChunk;
      int64_t n = std::min(kChunk, inner - start);
      for (size_t k = 0; k < inputs.size(); ++k) {
        int64_t off = 0, rem = row;
        for (size_t d = cd.size() - 1; d-- > 0;) {
          off += (rem % cd[d]) * cs[k][d];
          rem /= cd[d];
        }
        off += start * cs[k].back();
        load<T>(*inputs[k], off, cs[k].back(), n, in[k]);
      }
      const T* r = run_chunk<T>(code, in, scratch, n);
      store<T>(r, n, out, row * inner + start);
    }
  };
  int64_t grain = std::max<int64_t>(1, 16384 / std::min(inner, kChunk));
  if (tasks <= grain) {
    run_range(0, tasks);
  } else {
    tbb::parallel_for(tbb::blocked_range<int64_t>(0, tasks, grain),
                      [&](const tbb::blocked_range<int64_t>& r) { run_range(r.begin(), r.end()); });
  }
}
}  // namespace

ScalarProgram::ScalarProgram(const ScalarExpr& expr) {
  compile(expr, code_, 0, max_depth_);
  if (max_depth_ > 64) throw Error("scalar expression too deep", Error::Kind::Unsupported);
  num_inputs_ = static_cast<int>(num_inputs(expr));
}

Tensor ScalarProgram::run(const std::vector<const Tensor*>& inputs, DType out_dtype) const {
  if (static_cast<int>(inputs.size()) < num_inputs_) {
    throw Error(
        fmt::format("elementwise expression reads {} inputs, got {}", num_inputs_, inputs.size()),
        Error::Kind::Internal);
  }
  std::vector<int64_t> dims;
  bool floating = false;
  for (const Tensor* t : inputs) {
    dims = broadcast_dims(dims, t->dims());
    floating |= is_floating(t->dtype());
  }
  Tensor out(out_dtype, dims);
  if (out.numel() == 0) return out;
  if (floating) {
    run_typed<double>(code_, max_depth_, inputs, dims, out);
  } else {
    run_typed<int64_t>(code_, max_depth_, inputs, dims, out);
  }
  return out;
}

Tensor evaluate_elementwise(const ScalarExpr& expr, const std::vector<const Tensor*>& inputs,
                            DType out_dtype) {
  return ScalarProgram(expr).run(inputs, out_dtype);
}

}  // namespace eqfuse::ir
