// The printer's library calls: cuBLAS, cuBLASLt, CBLAS and cuDNN (printer_writer.h).
#include <cctype>

#include "codegen/printer_writer.h"

namespace eqfuse::codegen::detail {

bool Writer::cudnn_conv(const Stage& s) const {
  if (target_ != Target::Cuda || !runtime_ || s.kind != StageKind::Conv) return false;
  const ir::Node& n = g_.node(s.node);
  const ValueId x = n.inputs[0], w = n.inputs[1];
  if (rank(x) != 4 || !plan_.buffer(s.output)) return false;
  for (ValueId v : {x, w})
    if (!plan_.buffer(v) || plan_.buffer(v)->stored_in) return false;
  // The buffers' types: under --precision, f32 values are stored at 16 bits.
  const DType t = plan_.buffer(s.output)->dtype;
  if ((t != DType::f32 && t != DType::f16 && t != DType::bf16) || plan_.buffer(x)->dtype != t ||
      plan_.buffer(w)->dtype != t)
    return false;
  const auto& ws = type(w).shape;
  for (size_t k = 0; k < 4; ++k)
    if (!ws[k].is_static()) return false;
  ir::OpContext ctx = ir::make_context(g_, n);
  // SAME padding of a symbolic image depends on its size; cuDNN takes one fixed padding.
  const bool fixed_pads = !ctx.has_attr("auto_pad") || ctx.attr_string("auto_pad") == "NOTSET" ||
                          ctx.attr_string("auto_pad") == "VALID";
  if (!fixed_pads && !(type(x).shape[2].is_static() && type(x).shape[3].is_static())) return false;
  for (const auto& axis : window_of(g_, n, {ws[2].value(), ws[3].value()}))
    if (axis.pad_begin != axis.pad_end) return false;
  return true;
}

std::optional<Writer::FusedConv> Writer::cudnn_fused(const Stage& s, const Stage* epilogue,
                                                     ValueId written) const {
  const ir::Node& n = g_.node(s.node);
  const Buffer* out = plan_.buffer(written);
  if (n.inputs.size() < 3 || n.inputs[2] == ir::kNoValue || !out) return std::nullopt;
  const DType t = plan_.buffer(s.output)->dtype;
  const Buffer* bias = plan_.buffer(n.inputs[2]);
  if (!bias || bias->stored_in || bias->dtype != t || !out->plain() || out->dtype != t)
    return std::nullopt;
  FusedConv f;
  if (!epilogue) return written == s.output ? std::optional(f) : std::nullopt;  // conv + bias
  if (written != epilogue->output) return std::nullopt;
  const ir::Node* e = &g_.node(epilogue->node);
  ValueId inner = epilogue->output;
  if (e->op_type == "Relu") {
    f.relu = true;
    inner = e->inputs[0];
    if (inner == s.output) return f;  // relu(conv + bias)
    if (plan_.buffer(inner) || g_.value(inner).producer == ir::kNoNode) return std::nullopt;
    e = &g_.node(g_.value(inner).producer);
  }
  if (e->op_type != "Add" || e->inputs.size() != 2) return std::nullopt;
  const ValueId z = e->inputs[0] == s.output ? e->inputs[1] : e->inputs[0];
  if ((e->inputs[0] == s.output) == (e->inputs[1] == s.output)) return std::nullopt;
  const Buffer* zb = plan_.buffer(z);
  if (!zb || zb->stored_in || zb->dtype != t || !(type(z).shape == type(s.output).shape) ||
      epilogue->in_place_of == z || s.in_place_of == z)
    return std::nullopt;
  f.z = z;
  return f;
}

// The CUDA form after cuDNN: element i of the raw convolution (`raw`, a kernel parameter), plus
// the bias, stored through the epilogue.
std::string Writer::body_conv_finish(const Stage& s) {
  const ir::Node& n = g_.node(s.node);
  ValueId out = s.output;
  Index idx = decompose_value("i", out);
  std::string v = "(float)raw[i]";
  if (n.inputs.size() > 2 && n.inputs[2] != ir::kNoValue)
    v += " + (float)" + elem(n.inputs[2], Index{idx[1]});
  store_output(out, "i", idx, v);
  return numel(out);
}

std::string Writer::cudnn_conv_call(const Stage& s, size_t index, ValueId written,
                                    const std::string& kernels, const std::string& finish,
                                    const std::optional<FusedConv>& fused) {
  uses_cudnn = true;
  const ir::Node& n = g_.node(s.node);
  const ValueId x = n.inputs[0], w = n.inputs[1], out = s.output;
  const auto& ws = type(w).shape;
  auto win = window_of(g_, n, {ws[2].value(), ws[3].value()});
  const size_t o = plan_.buffer_of.at(written);
  const std::string t = storage_type(plan_.buffers[o].dtype);
  const DType dt = plan_.buffer(out)->dtype;
  const std::string raw_type = storage_type(dt);
  // The launches write through the lambda's `out` instead of the stage's buffer, so that the
  // choice can time both forms on scratch memory (the stage may write in place over a value it
  // reads). The written buffer is a kernel's first argument after the dims: `(D, p<o>` in a
  // launch, `{&D, &p<o>` in a hosted launch's argument addresses.
  auto redirect = [&](std::string code) {
    for (const auto& [from, to] :
         {std::pair{fmt::format("(D, p{}", o), std::string("(D, out")},
          std::pair{fmt::format("{{&D, &p{}", o), std::string("{&D, &out")}})
      for (size_t at = code.find(from); at != std::string::npos; at = code.find(from, at + 1))
        if (at + from.size() < code.size() && !std::isdigit(code[at + from.size()]))  // not p{o}7
          code.replace(at, from.size(), to);
    return code;
  };
  auto dims = [&](ValueId v) {
    return fmt::format("{{(int)({}), (int)({}), (int)({}), (int)({})}}", dim(v, 0), dim(v, 1),
                       dim(v, 2), dim(v, 3));
  };
  const char* cudnn_type = dt == DType::f32   ? "CUDNN_DATA_FLOAT"
                           : dt == DType::f16 ? "CUDNN_DATA_HALF"
                                              : "CUDNN_DATA_BFLOAT16";
  auto indent = [](std::string code) {
    for (size_t at = code.find('\n'); at != std::string::npos; at = code.find('\n', at + 3))
      code.insert(at + 1, "  ");
    return code;
  };
  // The fused form's call: y = act(conv + z + bias) into `out`; none where it does not apply.
  const std::string fused_call =
      fused ? fmt::format("return eqf_cudnn_fused(c, {}, {}, {}, {}, out, st);", ptr(x), ptr(w),
                          fused->z == ir::kNoValue ? "(const void*)0" : ptr(fused->z),
                          ptr(n.inputs[2]))
            : "(void)out, (void)c;\n      return -1;";
  return fmt::format(
      "  {{  // stage {}: {} '{}' in its kernels, or (EQFUSE_CUDNN) cuDNN and a finish kernel{}\n"
      "    {}\n"
      "    auto kernels = [&]({}* out) -> int {{\n      {}\n      return 0;\n    }};\n"
      "#if defined(EQFUSE_CUDNN)\n"
      "    static EqfConvChoices choices;\n"
      "    const EqfConv conv = {{{}, {}, {}, {{{}, {}}}, {{{}, {}}}, {{{}, {}}}, {}, {}, {}}};\n"
      "    auto library = [&]({}* out, const EqfConvChoice* c) -> int {{\n"
      "      void* scratch = eqf_conv_scratch((size_t)({}) * sizeof({}));\n"
      "      if (!scratch || eqf_cudnn_forward(c, {}, {}, scratch, st)) return -1;\n"
      "      const {}* raw = (const {}*)scratch;\n"
      "      {}\n      return 0;\n    }};\n"
      "    auto fused = [&]({}* out, const EqfConvChoice* c) -> int {{\n      {}\n    }};\n"
      "    if (eqf_conv_run({}, &choices, conv, (size_t)({}) * sizeof({}), p{}, st, kernels, "
      "library, fused))\n      return -1;\n"
      "#else\n    if (kernels(p{})) return -1;\n#endif\n  }}\n",
      index, n.op_type, g_.value(out).name,
      !fused                     ? ""
      : fused->relu              ? (fused->z == ir::kNoValue ? ", or cuDNN's relu(conv + bias)"
                                                             : ", or cuDNN's relu(conv + z + bias)")
      : fused->z == ir::kNoValue ? ", or cuDNN's conv + bias"
                                 : ", or cuDNN's conv + z + bias",
      record_event(index), t, indent(redirect(kernels)), dims(x), dims(w), dims(out),
      win[0].pad_begin, win[1].pad_begin, win[0].stride, win[1].stride, win[0].dilation,
      win[1].dilation, ir::make_context(g_, n).attr_int("group"), cudnn_type,
      !fused        ? 0
      : fused->relu ? 2
                    : 1,
      t, numel(out), raw_type, ptr(x), ptr(w), raw_type, raw_type, redirect(finish), t, fused_call,
      index, numel(written), t, o, o);
}

std::optional<Writer::LibraryGemm> Writer::library_gemm(const Stage& s) {
  const ir::Node& n = g_.node(s.node);
  Contraction c = contraction(g_, n);
  ValueId out = s.output;
  for (ValueId v : {c.a, c.b, out})
    if (type(v).dtype != DType::f32) return std::nullopt;
  // Buffers: both operands of one type (f32, or f16/bf16 under --precision); the output f32 or
  // the operands' type.
  // B's panels where the plan holds them (the twin; cblas_call reads them a panel at a time).
  const ValueId b_buffer = s.weight_blocks.value_or(c.b);
  DType ab = plan_.buffer(c.a)->dtype, ob = plan_.buffer(out)->dtype;
  if (plan_.buffer(b_buffer)->dtype != ab || (ob != DType::f32 && ob != ab)) return std::nullopt;
  size_t ro = rank(out), ra = rank(c.a), rb = rank(c.b);
  if (ra < 2 || rb < 2) return std::nullopt;
  LibraryGemm g;
  g.operand_type = ab;
  g.out_type = ob;
  g.m = dim(out, ro - 2);
  g.n = dim(out, ro - 1);
  g.k = c.gemm ? dim(c.a, c.trans_a ? 0 : 1) : dim(c.a, ra - 1);
  // Batch: every batch dim of an operand equals the output's, or the operand has none that is
  // not 1 (it is shared by the whole batch, stride 0).
  g.batch = "1";
  for (size_t k = 0; k + 2 < ro; ++k) g.batch = imul(g.batch, dim(out, k));
  auto stride_of = [&](ValueId v, const std::string& matrix) -> std::optional<std::string> {
    size_t r = rank(v), off = ro - r;
    bool all_one = true, all_equal = true;
    for (size_t k = 0; k + 2 < r; ++k) {
      all_one = all_one && dim_is_one(v, k);
      all_equal = all_equal && type(v).shape[k] == type(out).shape[off + k];
    }
    if (all_one) return std::string("0");
    if (all_equal && r == ro) return matrix;
    return std::nullopt;
  };
  auto sa = stride_of(c.a, imul(g.m, g.k)), sb = stride_of(c.b, imul(g.k, g.n));
  if (!sa || !sb) return std::nullopt;
  g.stride_a = *sa;
  g.stride_b = *sb;
  // A batch of row-major A's against one B is one product of the stacked rows.
  if (g.batch != "1" && g.stride_b == "0" && g.stride_a != "0" && !c.trans_a) {
    g.m = imul(g.batch, g.m);
    g.batch = "1";
    g.stride_a = "0";
  }
  g.trans_a = c.trans_a;
  g.trans_b = c.trans_b;
  g.lda = c.trans_a ? g.m : g.k;  // row-major leading dims
  g.ldb = c.trans_b ? g.k : g.n;
  g.a = ptr(c.a);
  g.b = ptr(b_buffer);
  g.out = ptr(out);
  g.alpha = literal(c.alpha, "float");
  used_.clear();
  return g;
}

static std::string cuda_data_type(DType t) {
  return t == DType::bf16 ? "CUDA_R_16BF" : t == DType::f16 ? "CUDA_R_16F" : "CUDA_R_32F";
}

std::string Writer::cublas_expression(const LibraryGemm& g) const {
  // Row-major C = A B is column-major C^T = B^T A^T: cuBLAS gets B first. f32 operands go to
  // SGEMM; 16-bit ones (--precision) to GemmEx, accumulating in f32 on tensor cores.
  if (hosted_)  // EqfHost::gemm, types as ONNX codes
    return fmt::format(
        "H->gemm(H->ctx, {}, {}, n, m, k, alpha, {}, {}, (int64_t)({}), (int64_t)({}), {}, {}, "
        "(int64_t)({}), (int64_t)({}), {}, {}, n, m * n, batch)",
        int(g.trans_b), int(g.trans_a), g.b, ir::onnx_dtype_code(g.operand_type), g.ldb, g.stride_b,
        g.a, ir::onnx_dtype_code(g.operand_type), g.lda, g.stride_a, g.out,
        ir::onnx_dtype_code(g.out_type));
  if (g.operand_type == DType::f32)
    return fmt::format(
        "cublasSgemmStridedBatched(eqf_cublas(st), {}, {}, (int)n, (int)m, (int)k, &alpha, {}, "
        "(int)({}), (long long)({}), {}, (int)({}), (long long)({}), &beta, {}, (int)n, (long "
        "long)(m * n), (int)batch) != CUBLAS_STATUS_SUCCESS",
        g.trans_b ? "CUBLAS_OP_T" : "CUBLAS_OP_N", g.trans_a ? "CUBLAS_OP_T" : "CUBLAS_OP_N", g.b,
        g.ldb, g.stride_b, g.a, g.lda, g.stride_a, g.out);
  return fmt::format(
      "cublasGemmStridedBatchedEx(eqf_cublas(st), {}, {}, (int)n, (int)m, (int)k, &alpha, {}, "
      "{}, (int)({}), (long long)({}), {}, {}, (int)({}), (long long)({}), &beta, {}, {}, "
      "(int)n, (long long)(m * n), (int)batch, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT) != "
      "CUBLAS_STATUS_SUCCESS",
      g.trans_b ? "CUBLAS_OP_T" : "CUBLAS_OP_N", g.trans_a ? "CUBLAS_OP_T" : "CUBLAS_OP_N", g.b,
      cuda_data_type(g.operand_type), g.ldb, g.stride_b, g.a, cuda_data_type(g.operand_type), g.lda,
      g.stride_a, g.out, cuda_data_type(g.out_type));
}

std::string Writer::cublas_call(const Stage& s, size_t index, const LibraryGemm& g) {
  const ir::Node& n = g_.node(s.node);
  return fmt::format(
      "  {{  // stage {}: {} '{}' as cuBLAS {} (strided batched)\n"
      "    {}\n"
      "    const float alpha = {}, beta = 0.0f;\n"
      "    (void)beta;\n"
      "    const int64_t m = {}, n = {}, k = {}, batch = {};\n"
      "    if (m > 0 && n > 0 && batch > 0 &&\n"
      "        {})\n"
      "      return -1;\n  }}\n",
      index, n.op_type, g_.value(s.output).name, g.operand_type == DType::f32 ? "SGEMM" : "GemmEx",
      record_event(index), g.alpha, g.m, g.n, g.k, g.batch, cublas_expression(g));
}

std::optional<Writer::LtEpilogue> Writer::cublaslt_epilogue(const Stage& s, size_t index) const {
  if (target_ != Target::Cuda || !runtime_ || !plan_.cublaslt) return std::nullopt;
  const Contraction c = contraction(g_, g_.node(s.node));
  const Buffer* out = plan_.buffer(s.output);
  const DType t = out->dtype;
  const ir::Shape& shape = type(s.output).shape;
  if (shape.rank() == 0) return std::nullopt;
  // A stored value cuBLASLt may read: one element per column of the product (its bias), or the
  // product's shape (its C).
  auto stored = [&](ValueId v) {
    const Buffer* b = plan_.buffer(v);
    return b && !b->stored_in && b->dtype == t;
  };
  auto is_bias = [&](ValueId v) {
    const ir::Shape& vs = type(v).shape;
    if (!stored(v) || vs.rank() == 0 || !(vs.dims().back() == shape.dims().back())) return false;
    for (size_t k = 0; k + 1 < vs.rank(); ++k)
      if (!dim_is_one(v, k)) return false;
    return true;
  };
  auto is_matrix = [&](ValueId v) { return stored(v) && type(v).shape == shape; };
  LtEpilogue e;
  if (c.c != ir::kNoValue && c.beta != 0) {  // the Gemm's own beta C
    if (is_bias(c.c) && c.beta == 1)
      e.bias = c.c;
    else if (is_matrix(c.c))
      e.c = c.c, e.beta = c.beta;
    else
      return std::nullopt;
  }
  // The pointwise stage after the product, where it computes act(product + terms): an Add tree
  // over the product, at most one bias and at most one matrix, under nothing or a Relu.
  if (const Stage* next = epilogue_after(index)) {
    LtEpilogue m = e;
    int products = 0;
    std::function<bool(ValueId)> terms = [&](ValueId v) -> bool {
      if (v == s.output) return ++products == 1;
      if (plan_.buffer(v)) {
        if (m.bias == ir::kNoValue && is_bias(v)) return m.bias = v, true;
        if (m.c == ir::kNoValue && is_matrix(v)) return m.c = v, m.beta = 1, true;
        return false;
      }
      const ir::NodeId p = g_.value(v).producer;
      if (p == ir::kNoNode || g_.node(p).op_type != "Add" || g_.node(p).inputs.size() != 2)
        return false;
      return terms(g_.node(p).inputs[0]) && terms(g_.node(p).inputs[1]);
    };
    const ir::Node& top = g_.node(next->node);
    ValueId sum = next->output;
    bool ok = stored(next->output) && plan_.buffer(next->output)->plain() &&
              type(next->output).shape == shape;
    if (ok && top.op_type == "Relu") {
      m.relu = true;
      sum = top.inputs[0];
    } else if (ok && top.op_type != "Add") {
      ok = false;
    }
    if (ok && sum == next->output) {  // the stage's own Add
      ok = top.inputs.size() == 2 && terms(top.inputs[0]) && terms(top.inputs[1]);
    } else if (ok) {
      ok = terms(sum);
    }
    if (ok && products == 1) {
      m.merged = next;
      e = m;
    }
  }
  if (!e.merged && e.bias == ir::kNoValue && e.c == ir::kNoValue) return std::nullopt;
  return e;
}

std::string Writer::cublaslt_call(const Stage& s, size_t index, const LibraryGemm& g,
                                  const LtEpilogue& e) {
  const ir::Node& n = g_.node(s.node);
  const char* epilogue = e.bias != ir::kNoValue
                             ? (e.relu ? "CUBLASLT_EPILOGUE_RELU_BIAS" : "CUBLASLT_EPILOGUE_BIAS")
                         : e.relu ? "CUBLASLT_EPILOGUE_RELU"
                                  : "CUBLASLT_EPILOGUE_DEFAULT";
  std::string what;
  if (e.c != ir::kNoValue)
    what += e.beta == 1 ? fmt::format(" + '{}'", g_.value(e.c).name)
                        : fmt::format(" + {} * '{}'", e.beta, g_.value(e.c).name);
  if (e.bias != ir::kNoValue) what += fmt::format(" + bias '{}'", g_.value(e.bias).name);
  if (e.relu)
    what = "relu(product" + what + ")";
  else
    what = "product" + what;
  if (e.merged)
    what += fmt::format(", stage {}'s {} -> '{}'", index + 1, g_.node(e.merged->node).op_type,
                        g_.value(e.merged->output).name);
  const std::string c = e.c != ir::kNoValue ? ptr(e.c) : "0";
  const std::string bias = e.bias != ir::kNoValue ? ptr(e.bias) : "0";
  const std::string d = ptr(e.merged ? e.merged->output : s.output);  // D
  used_.clear();
  // Column-major, as for cuBLAS: D^T = B^T A^T, the bias one element per row of D^T.
  return fmt::format(
      "  int eqf_unfused_s{} = 0;  // 1: cuBLASLt took no algorithm; cuBLAS, then the kernels\n"
      "  {{  // stage {}: {} '{}' as cuBLASLt: {}\n"
      "    {}\n"
      "    const float alpha = {}, beta = 0.0f;\n"
      "    const int64_t m = {}, n = {}, k = {}, batch = {};\n"
      "    static EqfLtChoices lt;\n"
      "    if (m > 0 && n > 0 && batch > 0) {{\n"
      "      const int r = eqf_lt_gemm(&lt, st, {}, {}, n, m, k, alpha, {}, (int64_t)({}), "
      "(long long)({}), {}, (int64_t)({}), (long long)({}), {}, {}, {}, {}, {}, batch, {}, {});\n"
      "      if (r < 0) return -1;\n"
      "      if (r > 0) {{\n"
      "        eqf_unfused_s{} = 1;\n"
      "        if ({}) return -1;\n"
      "      }}\n"
      "    }}\n"
      "  }}\n",
      index, index, n.op_type, g_.value(s.output).name, what, record_event(index), g.alpha, g.m,
      g.n, g.k, g.batch, int(g.trans_b), int(g.trans_a), g.b, g.ldb, g.stride_b, g.a, g.lda,
      g.stride_a, cuda_data_type(g.operand_type), literal(e.beta, "float"), c, d,
      cuda_data_type(g.out_type), bias, epilogue, index, cublas_expression(g));
}

std::string Writer::cblas_call(const Stage& s, size_t index) {
  auto g = library_gemm(s);
  if (!g || g->operand_type != DType::f32 || g->out_type != DType::f32) return "";
  const ir::Node& n = g_.node(s.node);
  if (s.weight_blocks) {  // B in panels (a weight, one matrix): a call per panel of columns
    return fmt::format(
        "  }}  // the parallel region closed around the library, which has threads of its own\n"
        "  {{  // stage {}: {} '{}' as CBLAS SGEMM, one call per batch entry and panel of B\n"
        "    const int64_t m = {}, n = {}, k = {}, batch = {};\n"
        "    for (int64_t b = 0; b < batch && m > 0; ++b)\n"
        "      for (int64_t j = 0; j < n; j += {})\n"
        "        cblas_sgemm(CblasRowMajor, {}, CblasNoTrans, (int)m, (int)(n - j < {} ? n - j : "
        "{}), "
        "(int)k, {}, {} + b * ({}), (int)({}), {} + j * k, {}, 0.0f, {} + b * m * n + j, (int)n);\n"
        "  }}\n#pragma omp parallel\n  {{\n",
        index, n.op_type, g_.value(s.output).name, g->m, g->n, g->k, g->batch, kPanelWidth,
        g->trans_a ? "CblasTrans" : "CblasNoTrans", kPanelWidth, kPanelWidth, g->alpha, g->a,
        g->stride_a, g->lda, g->b, kPanelWidth, g->out);
  }
  return fmt::format(
      "  }}  // the parallel region closed around the library, which has threads of its own\n"
      "  {{  // stage {}: {} '{}' as CBLAS SGEMM, one call per batch entry\n"
      "    const int64_t m = {}, n = {}, k = {}, batch = {};\n"
      "    for (int64_t b = 0; b < batch && m > 0 && n > 0; ++b)\n"
      "      cblas_sgemm(CblasRowMajor, {}, {}, (int)m, (int)n, (int)k, {}, {} + b * ({}), "
      "(int)({}), {} + b * ({}), (int)({}), 0.0f, {} + b * m * n, (int)n);\n  }}\n"
      "#pragma omp parallel\n  {{\n",
      index, n.op_type, g_.value(s.output).name, g->m, g->n, g->k, g->batch,
      g->trans_a ? "CblasTrans" : "CblasNoTrans", g->trans_b ? "CblasTrans" : "CblasNoTrans",
      g->alpha, g->a, g->stride_a, g->lda, g->b, g->stride_b, g->ldb, g->out);
}

std::string Writer::body_gemm_epilogue(const Stage& s) {
  Contraction c = contraction(g_, g_.node(s.node));
  ValueId out = s.output;
  Index idx = decompose_value("i", out);
  std::string cv = elem(c.c, broadcast_index(c.c, idx, out));
  line(fmt::format("{}[i] = {}[i] + {} * (float){};", ptr(out), ptr(out), literal(c.beta, "float"),
                   cv));
  return numel(out);
}

}  // namespace eqfuse::codegen::detail
