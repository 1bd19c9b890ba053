// Op group "contraction": MatMul (numpy matmul: batched, broadcast batch dims, 1-D operands) and
// Gemm. The kernels accumulate every dot product in double (int64 for integer matrices), so the
// interpreter stays an exact reference, and run rows in parallel with a cache-friendly i-k-j
// loop order, which keeps resnet18's classifier and BERT's projections fast enough.
// Their meaning is stated as index expressions (ir/index_expr.h), built per node.
#include <fmt/format.h>
#include <tbb/parallel_for.h>

#include <algorithm>

#include "ir/broadcast.h"
#include "ir/index_expr.h"
#include "ir/op_table.h"

namespace eqfuse::ir {

namespace {

constexpr int64_t kColumnBlock = 512;

// C[m, n] = sum_k A[m, k] * B[k, n] for `batch` independent products; a_step/b_step are the
// element offsets between consecutive batch entries (0 broadcasts). Acc is double or int64.
template <typename In, typename Acc>
void matmul_rows(const In* a, const In* b, Acc* c, int64_t m_rows, int64_t k_dim, int64_t n_cols,
                 const std::vector<int64_t>& a_offsets, const std::vector<int64_t>& b_offsets) {
  int64_t batch = static_cast<int64_t>(a_offsets.size());
  int64_t tasks = batch * m_rows;
  auto row_range = [&](int64_t begin, int64_t end) {
    for (int64_t t = begin; t < end; ++t) {
      int64_t bi = t / m_rows, i = t % m_rows;
      const In* arow = a + a_offsets[static_cast<size_t>(bi)] + i * k_dim;
      const In* bmat = b + b_offsets[static_cast<size_t>(bi)];
      Acc* crow = c + t * n_cols;
      std::fill(crow, crow + n_cols, Acc(0));
      for (int64_t j0 = 0; j0 < n_cols; j0 += kColumnBlock) {
        int64_t j1 = std::min(n_cols, j0 + kColumnBlock);
        for (int64_t k = 0; k < k_dim; ++k) {
          Acc av = static_cast<Acc>(arow[k]);
          if (av == Acc(0)) continue;
          const In* brow = bmat + k * n_cols;
          for (int64_t j = j0; j < j1; ++j) crow[j] += av * static_cast<Acc>(brow[j]);
        }
      }
    }
  };
  double flops = static_cast<double>(tasks) * static_cast<double>(k_dim * n_cols);
  if (flops < 1 << 18 || tasks == 1) {
    row_range(0, tasks);
  } else {
    int64_t grain = std::max<int64_t>(1, (1 << 17) / std::max<int64_t>(1, k_dim * n_cols));
    tbb::parallel_for(tbb::blocked_range<int64_t>(0, tasks, grain),
                      [&](const tbb::blocked_range<int64_t>& r) { row_range(r.begin(), r.end()); });
  }
}

// Batched product of tensors already laid out as [batch..., M, K] x [batch..., K, N] with
// `out_batch` the broadcast batch dims; returns [out_batch..., M, N] of dtype `out`.
Tensor batched_matmul(const Tensor& a, const Tensor& b, const std::vector<int64_t>& out_batch,
                      int64_t m, int64_t k, int64_t n, DType out) {
  std::vector<int64_t> a_batch(a.dims().begin(), a.dims().end() - 2);
  std::vector<int64_t> b_batch(b.dims().begin(), b.dims().end() - 2);
  std::vector<int64_t> as = broadcast_strides(a_batch, out_batch);
  std::vector<int64_t> bs = broadcast_strides(b_batch, out_batch);
  std::vector<int64_t> a_off, b_off;
  IndexIterator it(out_batch);
  size_t ia = it.add_strides(as), ib = it.add_strides(bs);
  int64_t batch = product(out_batch);
  for (int64_t i = 0; i < batch; ++i, it.next()) {
    a_off.push_back(it.offset(ia) * m * k);
    b_off.push_back(it.offset(ib) * k * n);
  }
  std::vector<int64_t> out_dims = out_batch;
  out_dims.push_back(m);
  out_dims.push_back(n);
  Tensor result(out, out_dims);
  if (result.numel() == 0) return result;
  if (is_floating(a.dtype()) || is_floating(b.dtype())) {
    std::vector<double> acc(static_cast<size_t>(result.numel()));
    if (a.dtype() == DType::f32 && b.dtype() == DType::f32) {
      matmul_rows<float, double>(a.data<float>().data(), b.data<float>().data(), acc.data(), m, k,
                                 n, a_off, b_off);
    } else {
      std::vector<double> ad = a.to_doubles(), bd = b.to_doubles();
      matmul_rows<double, double>(ad.data(), bd.data(), acc.data(), m, k, n, a_off, b_off);
    }
    if (out == DType::f32) {
      auto dst = result.data<float>();
      for (size_t i = 0; i < acc.size(); ++i) dst[i] = static_cast<float>(acc[i]);
    } else {
      for (size_t i = 0; i < acc.size(); ++i) result.set(static_cast<int64_t>(i), acc[i]);
    }
  } else {
    std::vector<int64_t> ai = a.to_int64s(), bi = b.to_int64s();
    std::vector<int64_t> acc(static_cast<size_t>(result.numel()));
    matmul_rows<int64_t, int64_t>(ai.data(), bi.data(), acc.data(), m, k, n, a_off, b_off);
    if (out == DType::i64) {
      std::copy(acc.begin(), acc.end(), result.data<int64_t>().begin());
    } else {
      for (size_t i = 0; i < acc.size(); ++i) {
        result.set(static_cast<int64_t>(i), static_cast<double>(acc[i]));
      }
    }
  }
  return result;
}

// ---- MatMul ----

struct MatMulShapes {
  std::vector<Dim> batch;
  Dim m, k, n;
  bool a_vector = false, b_vector = false;
};

MatMulShapes matmul_shapes(const OpContext& ctx, const Shape& a, const Shape& b) {
  if (a.rank() == 0 || b.rank() == 0) ctx.fail("MatMul operands must have rank >= 1");
  MatMulShapes s;
  s.a_vector = a.rank() == 1;
  s.b_vector = b.rank() == 1;
  Shape a2 = a, b2 = b;
  if (s.a_vector) a2 = Shape({Dim(1), a[0]});
  if (s.b_vector) b2 = Shape({b[0], Dim(1)});
  s.m = a2[a2.rank() - 2];
  s.k = a2[a2.rank() - 1];
  s.n = b2[b2.rank() - 1];
  const Dim& kb = b2[b2.rank() - 2];
  if (s.k.is_static() && kb.is_static() && s.k.value() != kb.value()) {
    ctx.fail(fmt::format("inner dims differ: {} x {}", a.str(), b.str()));
  }
  if (!s.k.is_static()) s.k = kb;
  Shape ab(std::vector<Dim>(a2.dims().begin(), a2.dims().end() - 2));
  Shape bb(std::vector<Dim>(b2.dims().begin(), b2.dims().end() - 2));
  try {
    s.batch = broadcast_shapes(ab, bb).dims();
  } catch (const Error& e) {
    ctx.fail(fmt::format("batch dims of {} and {} do not broadcast", a.str(), b.str()));
  }
  return s;
}

std::vector<TensorType> infer_matmul(const OpContext& ctx) {
  const TensorType& a = ctx.input_type(0);
  const TensorType& b = ctx.input_type(1);
  if (a.dtype != b.dtype) {
    ctx.fail(fmt::format("operands have different dtypes: {} and {}", dtype_name(a.dtype),
                         dtype_name(b.dtype)));
  }
  if (a.dtype == DType::boolean) ctx.fail("does not take bool operands");
  if (!a.shape.has_rank() || !b.shape.has_rank()) return {TensorType{a.dtype, Shape::unranked()}};
  MatMulShapes s = matmul_shapes(ctx, a.shape, b.shape);
  std::vector<Dim> out = s.batch;
  if (!s.a_vector) out.push_back(s.m);
  if (!s.b_vector) out.push_back(s.n);
  return {TensorType{a.dtype, Shape(out)}};
}

double dim_or_1(const Dim& d) {
  return d.is_static() ? static_cast<double>(d.value()) : 1.0;
}

OpWork work_matmul(const OpContext& ctx, const std::vector<TensorType>& outs) {
  OpWork w;
  const Shape& a = ctx.input_type(0).shape;
  const Shape& b = ctx.input_type(1).shape;
  if (a.has_rank() && b.has_rank() && a.rank() > 0) {
    // Output elements times the contraction length, 2 FLOPs per multiply-add.
    w.flops = 2.0 * element_count(outs[0]) * dim_or_1(a[a.rank() - 1]);
  }
  w.bytes_read = byte_count(ctx.input_type(0)) + byte_count(ctx.input_type(1));
  w.bytes_written = byte_count(outs[0]);
  (void)b;
  return w;
}

std::vector<Tensor> kernel_matmul(const OpContext& ctx) {
  Tensor a = *ctx.input_value(0);
  Tensor b = *ctx.input_value(1);
  bool a_vec = a.rank() == 1, b_vec = b.rank() == 1;
  if (a.rank() == 0 || b.rank() == 0) ctx.fail("MatMul operands must have rank >= 1");
  if (a_vec) a = a.reshaped({1, a.dims()[0]});
  if (b_vec) b = b.reshaped({b.dims()[0], 1});
  int64_t m = a.dims()[a.rank() - 2], k = a.dims()[a.rank() - 1];
  int64_t kb = b.dims()[b.rank() - 2], n = b.dims()[b.rank() - 1];
  if (k != kb) ctx.fail(fmt::format("inner dims differ: {} x {}", a.type().str(), b.type().str()));
  std::vector<int64_t> ab(a.dims().begin(), a.dims().end() - 2);
  std::vector<int64_t> bb(b.dims().begin(), b.dims().end() - 2);
  std::vector<int64_t> batch;
  try {
    batch = broadcast_dims(ab, bb);
  } catch (const Error& e) {
    ctx.fail(e.what());
  }
  Tensor out = batched_matmul(a, b, batch, m, k, n, a.dtype());
  std::vector<int64_t> dims = batch;
  if (!a_vec) dims.push_back(m);
  if (!b_vec) dims.push_back(n);
  return {out.reshaped(dims)};
}

// ---- Gemm ----

Tensor transposed_2d(const Tensor& t) {
  int64_t r = t.dims()[0], c = t.dims()[1];
  Tensor out(t.dtype(), {c, r});
  size_t es = dtype_size(t.dtype());
  const std::byte* src = t.raw();
  std::byte* dst = out.raw();
  for (int64_t i = 0; i < r; ++i) {
    for (int64_t j = 0; j < c; ++j) {
      std::memcpy(dst + static_cast<size_t>(j * r + i) * es,
                  src + static_cast<size_t>(i * c + j) * es, es);
    }
  }
  return out;
}

std::vector<TensorType> infer_gemm(const OpContext& ctx) {
  const TensorType& a = ctx.input_type(0);
  const TensorType& b = ctx.input_type(1);
  if (a.dtype != b.dtype) ctx.fail("A and B have different dtypes");
  if (!a.shape.has_rank() || !b.shape.has_rank()) return {TensorType{a.dtype, Shape::unranked()}};
  if (a.shape.rank() != 2 || b.shape.rank() != 2) {
    ctx.fail(fmt::format("A and B must be matrices, got {} and {}", a.shape.str(), b.shape.str()));
  }
  bool ta = ctx.attr_int("transA") != 0, tb = ctx.attr_int("transB") != 0;
  Dim m = a.shape[ta ? 1 : 0], ka = a.shape[ta ? 0 : 1];
  Dim kb = b.shape[tb ? 1 : 0], n = b.shape[tb ? 0 : 1];
  if (ka.is_static() && kb.is_static() && ka.value() != kb.value()) {
    ctx.fail(fmt::format("inner dims differ: A {} (transA {}) x B {} (transB {})", a.shape.str(),
                         ta, b.shape.str(), tb));
  }
  Shape out({m, n});
  if (ctx.has_input(2)) {
    const TensorType& c = ctx.input_type(2);
    Shape bc;
    try {
      bc = broadcast_shapes(out, c.shape);
    } catch (const Error&) {
      ctx.fail(fmt::format("C {} does not broadcast to {}", c.shape.str(), out.str()));
    }
    if (bc.rank() != 2) ctx.fail(fmt::format("C {} has more than 2 dims", c.shape.str()));
  }
  return {TensorType{a.dtype, out}};
}

OpWork work_gemm(const OpContext& ctx, const std::vector<TensorType>& outs) {
  OpWork w;
  const Shape& a = ctx.input_type(0).shape;
  if (a.has_rank() && a.rank() == 2) {
    const Dim& k = a[ctx.attr_int("transA") != 0 ? 0 : 1];
    w.flops = 2.0 * element_count(outs[0]) * dim_or_1(k);
    if (ctx.has_input(2)) w.flops += 2.0 * element_count(outs[0]);  // alpha*AB + beta*C
  }
  for (size_t i = 0; i < ctx.num_inputs(); ++i) {
    if (ctx.has_input(i)) w.bytes_read += byte_count(ctx.input_type(i));
  }
  w.bytes_written = byte_count(outs[0]);
  return w;
}

std::vector<Tensor> kernel_gemm(const OpContext& ctx) {
  std::vector<TensorType> outs = infer_gemm(ctx);
  Tensor a = *ctx.input_value(0);
  Tensor b = *ctx.input_value(1);
  if (ctx.attr_int("transA") != 0) a = transposed_2d(a);
  if (ctx.attr_int("transB") != 0) b = transposed_2d(b);
  int64_t m = a.dims()[0], k = a.dims()[1], n = b.dims()[1];
  if (b.dims()[0] != k) ctx.fail("inner dims differ");
  double alpha = ctx.attr_float("alpha"), beta = ctx.attr_float("beta");
  Tensor ab = batched_matmul(a, b, {}, m, k, n, a.dtype());
  const Tensor* c = ctx.input_value(2);
  if (alpha == 1.0 && (!c || beta == 0.0)) return {ab};
  Tensor out(a.dtype(), {m, n});
  std::vector<int64_t> cs = c ? broadcast_strides(c->dims(), {m, n}) : std::vector<int64_t>{0, 0};
  bool fast = a.dtype() == DType::f32 && (!c || c->dtype() == DType::f32);
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      int64_t o = i * n + j;
      if (fast) {
        double v = alpha * ab.data<float>()[static_cast<size_t>(o)];
        if (c) v += beta * c->data<float>()[static_cast<size_t>(i * cs[0] + j * cs[1])];
        out.data<float>()[static_cast<size_t>(o)] = static_cast<float>(v);
      } else {
        double v = alpha * ab.get(o);
        if (c) v += beta * c->get(i * cs[0] + j * cs[1]);
        out.set(o, v);
      }
    }
  }
  return {out};
}

// ---- Meanings ----

std::vector<int64_t> static_dims_of(const OpContext& ctx, size_t input) {
  const TensorType& t = ctx.input_type(input);
  if (!t.shape.is_static()) ctx.fail("an index expression needs static shapes, got " + t.str());
  return t.shape.static_dims();
}

// out[batch..., i, j] = sum_k A[batch'..., i, k] * B[batch''..., k, j]; a batch dim of size 1
// that broadcasts reads index 0.
std::shared_ptr<const IndexExpr> matmul_meaning(const OpContext& ctx) {
  std::vector<int64_t> a = static_dims_of(ctx, 0), b = static_dims_of(ctx, 1);
  std::vector<TensorType> out = infer_matmul(ctx);
  auto e = std::make_shared<IndexExpr>();
  e->output_dims = out[0].shape.static_dims();
  bool a_vec = a.size() == 1, b_vec = b.size() == 1;
  int64_t k = a.back();
  size_t n_out = e->output_dims.size();
  size_t n_batch = n_out - (a_vec ? 0 : 1) - (b_vec ? 0 : 1);
  int i_var = static_cast<int>(n_batch), j_var = static_cast<int>(n_batch) + (a_vec ? 0 : 1);
  int k_var = static_cast<int>(n_out);
  e->reduction_extents = {k};
  auto batch_access = [&](const std::vector<int64_t>& dims, size_t own_batch, IndexAccess& acc) {
    for (size_t d = 0; d < own_batch; ++d) {
      size_t out_d = n_batch - own_batch + d;
      bool broadcast = dims[d] == 1 && e->output_dims[out_d] != 1;
      acc.indices.push_back(broadcast ? AffineIndex::constant_index(0)
                                      : AffineIndex::var(static_cast<int>(out_d)));
    }
  };
  IndexAccess xa{0, {}}, xb{1, {}};
  batch_access(a, a_vec ? 0 : a.size() - 2, xa);
  if (!a_vec) xa.indices.push_back(AffineIndex::var(i_var));
  xa.indices.push_back(AffineIndex::var(k_var));
  batch_access(b, b_vec ? 0 : b.size() - 2, xb);
  xb.indices.push_back(AffineIndex::var(k_var));
  if (!b_vec) xb.indices.push_back(AffineIndex::var(j_var));
  e->accesses = {xa, xb};
  e->body = sx::mul(sx::x(0), sx::x(1));
  e->reduce = IndexReduce::Sum;
  return e;
}

// out[i, j] = alpha * sum_k A'[i, k] * B'[k, j] + beta * C[i, j] (C broadcast).
std::shared_ptr<const IndexExpr> gemm_meaning(const OpContext& ctx) {
  std::vector<int64_t> a = static_dims_of(ctx, 0);
  bool ta = ctx.attr_int("transA") != 0, tb = ctx.attr_int("transB") != 0;
  auto e = std::make_shared<IndexExpr>();
  e->output_dims = infer_gemm(ctx)[0].shape.static_dims();
  e->reduction_extents = {ta ? a[0] : a[1]};
  AffineIndex i = AffineIndex::var(0), j = AffineIndex::var(1), k = AffineIndex::var(2);
  e->accesses = {IndexAccess{0, ta ? std::vector{k, i} : std::vector{i, k}},
                 IndexAccess{1, tb ? std::vector{j, k} : std::vector{k, j}}};
  e->body = sx::mul(sx::x(0), sx::x(1));
  e->reduce = IndexReduce::Sum;
  ScalarExprPtr alpha = sx::c(ctx.attr_float("alpha"));
  if (ctx.has_input(2)) {
    std::vector<int64_t> c = static_dims_of(ctx, 2);
    IndexAccess xc{2, {}};
    for (size_t d = 0; d < c.size(); ++d) {
      size_t out_d = 2 - c.size() + d;
      xc.indices.push_back(c[d] == 1 ? AffineIndex::constant_index(0)
                                     : AffineIndex::var(static_cast<int>(out_d)));
    }
    e->finalize_accesses = {xc};
    e->finalize =
        sx::add(sx::mul(alpha, sx::x(0)), sx::mul(sx::c(ctx.attr_float("beta")), sx::x(1)));
  } else {
    e->finalize = sx::mul(alpha, sx::x(0));
  }
  return e;
}

}  // namespace

void register_contraction_ops(OpTableBuilder& table) {
  OpDef matmul;
  matmul.name = "MatMul";
  matmul.min_inputs = matmul.max_inputs = 2;
  matmul.fusion = FusionClass::Contraction;
  matmul.infer = infer_matmul;
  matmul.work = work_matmul;
  matmul.kernel = kernel_matmul;
  matmul.index_for_node = matmul_meaning;
  table.add(std::move(matmul));

  OpDef gemm;
  gemm.name = "Gemm";
  gemm.min_inputs = 2;
  gemm.max_inputs = 3;
  gemm.attrs = {{"alpha", AttrKind::Float, AttrValue{1.0}},
                {"beta", AttrKind::Float, AttrValue{1.0}},
                {"transA", AttrKind::Int, AttrValue{int64_t{0}}},
                {"transB", AttrKind::Int, AttrValue{int64_t{0}}}};
  gemm.fusion = FusionClass::Contraction;
  gemm.infer = infer_gemm;
  gemm.work = work_gemm;
  gemm.kernel = kernel_gemm;
  gemm.index_for_node = gemm_meaning;
  table.add(std::move(gemm));
}

}  // namespace eqfuse::ir
