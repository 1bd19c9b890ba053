// A kernel of each kind in the C++ twin against the interpreter, at awkward shapes (sizes 1,
// primes, non-multiples of any vector width): pointwise with broadcasting and folded layout
// ops, row reductions, contractions with epilogues, attention with and without a mask,
// convolution and pooling. Tolerance: rtol 1e-4, atol 1e-5 (the twin computes in float where
// the interpreter uses double).
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <optional>
#include <random>
#include <regex>
#include <set>

#include "codegen/cpu_backend.h"
#include "codegen/plan.h"
#include "codegen/printer.h"
#include "cuda_emulation.h"
#include "frontend/test_data.h"
#include "ir/builder.h"
#include "ir/interpreter.h"
#include "support/error.h"

using namespace eqfuse;
using ir::Dim;
using ir::DType;
using ir::GraphBuilder;
using ir::ValueId;

namespace {

ir::Tensor random_tensor(const std::vector<int64_t>& dims, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(-1, 1);
  ir::Tensor t(DType::f32, dims);
  for (int64_t i = 0; i < t.numel(); ++i) t.set(i, u(rng));
  return t;
}

// How many times `what` occurs in `text` (printed code).
size_t occurrences(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

// Set while for_each_vector_width repeats a check for the narrower vectors, which the CUDA
// source does not have.
bool narrow_vector_pass = false;

// Runs the graph in the twin, in the CUDA source on the emulator (cuda_emulation.h) and in the
// interpreter at the given input dims; with `hosted`, also in the hosted units `eqfuse run
// --backend cuda` builds against the CUDA runtime.
void check_twin(const ir::Graph& g, const std::vector<std::vector<int64_t>>& input_dims,
                const codegen::PlanOptions& options = {}, bool hosted = false) {
  std::vector<ir::Tensor> inputs;
  for (size_t k = 0; k < input_dims.size(); ++k) {
    ir::DType t = g.value(g.inputs()[k]).type.dtype;
    if (t == DType::i64) {
      ir::Tensor x(t, input_dims[k]);
      for (int64_t i = 0; i < x.numel(); ++i) x.set(i, double((i * 7) % 5) - 2);  // some negative
      inputs.push_back(std::move(x));
    } else {
      inputs.push_back(random_tensor(input_dims[k], 11 + k));
    }
  }
  auto twin = codegen::CpuModule::build(g, nullptr, {}, options);
  std::vector<ir::Tensor> want = ir::Interpreter(g).run(inputs);
  auto check = [&](const char* what, const std::vector<ir::Tensor>& got) {
    REQUIRE(got.size() == want.size());
    for (size_t k = 0; k < got.size(); ++k) {
      frontend::Comparison c = frontend::compare_tensors(got[k], want[k], 1e-4, 1e-5);
      INFO(what << ", output " << k << ": " << c.str());
      CHECK(c.match);
    }
  };
  check("C++ twin", twin->run(inputs));
  if (!narrow_vector_pass) check("CUDA, emulated", testing::run_cuda_emulated(g, inputs, options));
  if (hosted && !narrow_vector_pass)
    check("hosted CUDA, emulated",
          testing::run_cuda_hosted_emulated_sets(g, {inputs}, options).front());
}

// Runs `check` with the twin built as this machine builds it and, on x86-64, again without AVX,
// so that both vector widths of the register tiles run here (the second form is what a target
// without AVX compiles).
template <typename Check>
void for_each_vector_width(Check check) {
  check();
#if defined(__x86_64__)
  narrow_vector_pass = true;
  for (const char* flags : {"-mno-avx512f", "-mno-avx"}) {  // 32- and 16-byte vectors
    ::setenv("EQFUSE_TWIN_FLAGS", flags, 1);
    check();
  }
  narrow_vector_pass = false;
  ::unsetenv("EQFUSE_TWIN_FLAGS");
#endif
}

// The data of the plan's weight named `name` (a reordered copy the plan made, say).
const ir::Tensor& plan_weight(const codegen::KernelPlan& plan, const std::string& name) {
  auto v = std::find_if(plan.weights.begin(), plan.weights.end(),
                        [&](ValueId w) { return plan.graph.value(w).name == name; });
  REQUIRE(v != plan.weights.end());
  return *plan.graph.weight_data(*v);
}

ValueId kernel(GraphBuilder& b, const std::string& body, std::vector<ValueId> inputs) {
  return b.op("Kernel", std::move(inputs), {{"body", ir::AttrValue(body)}});
}

}  // namespace

TEST_CASE("a stage writes in place only over an operand it reads at the element it writes") {
  GraphBuilder b;
  ValueId x = b.input("x", DType::f32, {Dim::symbol("n"), Dim(5), Dim(5)});
  ValueId y = b.input("y", DType::f32, {Dim(25)});
  ValueId e = b.op("Exp", {x});
  ValueId sq = b.op("Mul", {e, e});  // over e: the same element, twice
  // Not over sq: a layout copy, which sq's stage stores beside sq (the Neg below reads sq too).
  ValueId t = b.op("Transpose", {sq}, {{"perm", std::vector<int64_t>{0, 2, 1}}});
  ValueId shape = b.constant(ir::Tensor::from_vector<int64_t>(DType::i64, {2}, {-1, 25}));
  ValueId r = b.op("Reshape", {t, shape});  // no stage: read through, the same linear index
  ValueId a = b.op("Add", {y, r});          // over t, not over the broadcast y
  ValueId s = b.op("Sigmoid", {a});         // an output: the caller's buffer
  b.output(s);
  b.output(b.op("Neg", {sq}));
  ir::Graph g = std::move(b).finish();
  codegen::KernelPlan plan = codegen::make_plan(g);
  std::map<ValueId, std::optional<ValueId>> over;
  for (const codegen::Stage& st : plan.stages)
    if (st.node != ir::kNoNode) over[plan.graph.node(st.node).outputs[0]] = st.in_place_of;
  auto value_named = [&](ValueId v) { return plan.graph.find_value(g.value(v).name); };
  CHECK(over.at(*value_named(sq)) == value_named(e));
  CHECK_FALSE(over.at(*value_named(t)).has_value());
  CHECK_FALSE(over.count(*value_named(r)));
  CHECK(over.at(*value_named(a)) == value_named(t));
  for (int64_t n : {1, 3, 8})
    CHECK_FALSE(codegen::check_buffer_plan(plan.arena, plan.lifetimes, {{"n", n}}).has_value());
  CHECK(plan.buffer(*value_named(sq))->also_stored_in.size() == 1);
  for (int64_t n : {1, 3, 8}) check_twin(g, {{n, 5, 5}, {25}});
}

TEST_CASE("a row stage writes in place over the row it normalizes, never over a broadcast") {
  GraphBuilder b;
  const Dim n = Dim::symbol("n");
  ValueId x = b.input("x", DType::f32, {n, Dim(4), Dim(7)});
  ValueId mask = b.input("mask", DType::f32, {Dim(1), Dim(4), Dim(7)});
  ValueId res = b.input("res", DType::f32, {n, Dim(4), Dim(7)});
  ValueId e = b.op("Exp", {x});
  ValueId m = b.op("Mul", {e, mask});                            // arena, read by the softmax only
  ValueId soft = b.op("Softmax", {m}, {{"axis", int64_t{-1}}});  // over m: its own row
  ValueId t = b.op("Tanh", {mask});  // a broadcast operand: the softmax below reads it per row
  ValueId masked = b.op("Softmax", {b.op("Add", {soft, t})}, {{"axis", int64_t{-1}}});
  ValueId gamma = b.weight("gamma", random_tensor({7}, 3));
  ValueId beta = b.weight("beta", random_tensor({7}, 4));
  ValueId sum = b.op("Add", {masked, res});
  ValueId ln = b.op("LayerNormalization", {sum, gamma, beta}, {{"axis", int64_t{-1}}});
  b.output(ln);
  ir::Graph g = std::move(b).finish();
  codegen::KernelPlan plan = codegen::make_plan(g);
  std::map<std::string, std::optional<std::string>> over;
  for (const codegen::Stage& st : plan.stages)
    if (st.node != ir::kNoNode)
      over[plan.graph.value(plan.graph.node(st.node).outputs[0]).name] =
          st.in_place_of ? std::optional(plan.graph.value(*st.in_place_of).name) : std::nullopt;
  auto name = [&](ValueId v) { return g.value(v).name; };
  INFO("stages: " << plan.stages.size());
  REQUIRE(over.count(name(soft)) == 1);
  CHECK(over.at(name(soft)) == name(m));
  // The second softmax reads t (a broadcast [1, 4, 7]) and soft: in place over soft at most.
  REQUIRE(over.count(name(masked)) == 1);
  CHECK(over.at(name(masked)) != std::optional(name(t)));
  for (int64_t k : {1, 3, 8})
    CHECK_FALSE(codegen::check_buffer_plan(plan.arena, plan.lifetimes, {{"n", k}}).has_value());
  for (int64_t k : {1, 3, 8}) check_twin(g, {{k, 4, 7}, {1, 4, 7}, {k, 4, 7}});
}

TEST_CASE("a Concat's producers write their slices of it; the Concat stage does nothing") {
  GraphBuilder b;
  ValueId x = b.input("x", DType::f32, {Dim::symbol("n"), Dim(3), Dim(6), Dim(5)});
  ValueId w = b.input("w", DType::f32, {Dim(4), Dim(3), Dim(3), Dim(3)});
  ValueId w2 = b.input("w2", DType::f32, {Dim(2), Dim(3), Dim(1), Dim(1)});
  ValueId conv = b.op("Conv", {x, w}, {{"pads", std::vector<int64_t>{1, 1, 1, 1}}});  // [n,4,6,5]
  ValueId relu = b.op("Relu", {conv});                                  // a pointwise producer
  ValueId conv2 = b.op("Conv", {x, w2});                                // a conv producer
  ValueId shared = b.op("Sigmoid", {x});                                // also read elsewhere
  ValueId cat = b.op("Concat", {relu, conv2}, {{"axis", int64_t{1}}});  // [n,6,6,5], strided
  ValueId cat2 = b.op("Concat", {shared, b.op("Tanh", {x})}, {{"axis", int64_t{1}}});
  b.output(b.op("Conv", {cat, b.input("w3", DType::f32, {Dim(2), Dim(6), Dim(1), Dim(1)})}));
  b.output(b.op("Mul", {cat2, cat2}));
  b.output(b.op("Neg", {shared}));
  ir::Graph g = std::move(b).finish();
  codegen::KernelPlan plan = codegen::make_plan(g);
  auto slice_of = [&](ValueId v) {
    return plan.buffer(*plan.graph.find_value(g.value(v).name))->stored_in;
  };
  CHECK(slice_of(relu) == plan.graph.find_value(g.value(cat).name));
  CHECK(slice_of(conv2) == plan.graph.find_value(g.value(cat).name));
  CHECK_FALSE(slice_of(shared).has_value());  // Neg reads it too, so cat2 copies
  size_t skipped = 0;
  for (const codegen::Stage& s : plan.stages) skipped += s.written_by_producers;
  CHECK(skipped == 1);
  // By node of the graph, as the cost model and the launch count see it: cat runs as nothing.
  std::vector<bool> idle = codegen::nodes_stored_by_producers(g);
  REQUIRE(idle.size() == g.nodes().size());
  for (size_t i = 0; i < g.nodes().size(); ++i) {
    INFO(g.nodes()[i].op_type);
    CHECK(idle[i] == (g.nodes()[i].outputs[0] == cat));
  }
  for (int64_t n : {1, 2, 5}) {
    CHECK_FALSE(codegen::check_buffer_plan(plan.arena, plan.lifetimes, {{"n", n}}).has_value());
    check_twin(g, {{n, 3, 6, 5}, {4, 3, 3, 3}, {2, 3, 1, 1}, {2, 6, 1, 1}});
  }
  // A graph that cannot be planned (an opaque op): every node runs as itself.
  GraphBuilder o;
  ValueId y = o.input("y", DType::f32, {Dim(2), Dim(3)});
  ValueId a = o.op("Relu", {y}), c = o.op("Neg", {y});
  ValueId opaque = o.opaque("MyOp", {y}, {o.type(y)})[0];
  o.output(o.op("Concat", {a, c}, {{"axis", int64_t{0}}}));
  o.output(opaque);
  ir::Graph unplanned = std::move(o).finish();
  CHECK_THROWS_AS(codegen::make_plan(unplanned), Error);
  CHECK(codegen::nodes_stored_by_producers(unplanned) ==
        std::vector<bool>(unplanned.nodes().size(), false));
}

TEST_CASE("a Concat slice's linear place, along a middle axis and then transposed") {
  // Parts stored in place by linear index skip the other parts' elements of each index before
  // the axis (here n x 3 of them); the Concat then moves again through a Transpose its own
  // producers store, and through a Reshape.
  GraphBuilder b;
  ValueId x = b.input("x", DType::f32, {Dim::symbol("n"), Dim(3), Dim(4), Dim(5)});
  ValueId y = b.input("y", DType::f32, {Dim::symbol("n"), Dim(3), Dim(2), Dim(5)});
  ValueId cat = b.op("Concat", {b.op("Relu", {x}), b.op("Sigmoid", {y})}, {{"axis", int64_t{2}}});
  ValueId moved = b.op("Transpose", {cat}, {{"perm", std::vector<int64_t>{0, 2, 1, 3}}});
  ValueId last = b.op("Concat", {b.op("Tanh", {x}), b.op("Neg", {x})}, {{"axis", int64_t{-1}}});
  b.output(b.op("Mul", {moved, moved}));
  b.output(b.op("Exp", {last}));
  ir::Graph g = std::move(b).finish();
  codegen::KernelPlan plan = codegen::make_plan(g);
  size_t skipped = 0;
  for (const codegen::Stage& s : plan.stages) skipped += s.written_by_producers;
  CHECK(skipped >= 2);  // both Concats
  for (int64_t n : {1, 2, 3}) check_twin(g, {{n, 3, 4, 5}, {n, 3, 2, 5}});
}

TEST_CASE("a layout copy's producer stores each element at its place in the copy") {
  // A product reads its operand contiguous, so a Transpose (and Reshape) before it is a copy.
  // Where loops of ours make the transposed value, they store each element where the copy puts
  // it (instead of in its own buffer where nothing else reads it) and the copy stage does
  // nothing: a row stage, a pointwise stage, a convolution, an attention stage with the layout
  // epilogue in its kernel, and one whose transpose and reshape are plain ops (two copies, places
  // chained).
  GraphBuilder b;
  auto ints = [](std::vector<int64_t> v) { return ir::AttrValue(std::move(v)); };
  auto shape = [&](std::vector<int64_t> v) {
    const int64_t rank = int64_t(v.size());
    return b.constant(ir::Tensor::from_vector<int64_t>(DType::i64, {rank}, std::move(v)));
  };
  auto transpose = [&](ValueId v, std::vector<int64_t> perm) {
    return b.op("Transpose", {v}, {{"perm", ints(std::move(perm))}});
  };
  const Dim n = Dim::symbol("n");
  ValueId x = b.input("x", DType::f32, {n, Dim(3), Dim(5), Dim(4)});
  ValueId img = b.input("img", DType::f32, {n, Dim(2), Dim(5), Dim(7)});
  ValueId q = b.input("q", DType::f32, {n, Dim(2), Dim(7), Dim(4)});
  ValueId k = b.input("k", DType::f32, {n, Dim(2), Dim(9), Dim(4)});
  ValueId v = b.input("v", DType::f32, {n, Dim(2), Dim(9), Dim(3)});
  ValueId w12 = b.weight("w12", random_tensor({12, 5}, 1));
  ValueId w5 = b.weight("w5", random_tensor({5, 3}, 2));
  ValueId w4 = b.weight("w4", random_tensor({4, 6}, 3));
  ValueId w6 = b.weight("w6", random_tensor({6, 2}, 4));
  ValueId wc = b.weight("wc", random_tensor({4, 2, 3, 3}, 5));
  ValueId bc = b.weight("bc", random_tensor({4}, 6));
  auto product = [&](ValueId moved, std::vector<int64_t> rows, ValueId w) {
    return b.op("MatMul", {b.op("Reshape", {moved, shape(std::move(rows))}), w});
  };
  // Softmax's rows, (n, 3, 5, 4) -> (n * 5, 12).
  ValueId soft = b.op("Softmax", {x}, {{"axis", int64_t{-1}}});
  b.output(product(transpose(soft, {0, 2, 1, 3}), {-1, 12}, w12));
  // Pointwise, (n, 3, 5, 4) -> (n * 4 * 3, 5).
  ValueId relu = b.op("Relu", {b.op("Add", {x, x})});
  b.output(product(transpose(relu, {0, 3, 1, 2}), {-1, 5}, w5));
  // A convolution with its bias, NCHW -> NHWC rows of channels.
  ValueId conv = b.op("Conv", {img, wc, bc}, {{"pads", ints({1, 1, 1, 1})}});
  b.output(product(transpose(conv, {0, 2, 3, 1}), {-1, 4}, w4));
  // Attention heads back to (n * 7, 2 * 3), the epilogue in the attention kernel.
  const std::string attention =
      "(MatMul (Softmax :axis -1 (MatMul ?0 (Transpose :perm (0 1 3 2) ?1))) ?2)";
  ValueId heads = kernel(b, "(Reshape (Transpose :perm (0 2 1 3) " + attention + ") ?3)",
                         {q, k, v, shape({-1, 6})});
  b.output(b.op("MatMul", {heads, w6}));
  // The same as plain ops after the kernel: a Transpose stage and a Reshape stage.
  ValueId plain = kernel(b, attention, {q, k, v});
  b.output(product(transpose(plain, {0, 2, 1, 3}), {-1, 6}, w6));
  // A value others read too: stored in its own buffer and in the copy's. A library product's
  // result: copied.
  ValueId shared = b.op("Sigmoid", {x});
  b.output(product(transpose(shared, {0, 2, 1, 3}), {-1, 12}, w12));
  b.output(b.op("Neg", {shared}));
  ValueId prod = b.op("MatMul", {x, b.weight("w45", random_tensor({4, 5}, 7))});
  b.output(
      product(transpose(prod, {0, 2, 1, 3}), {-1, 15}, b.weight("w15", random_tensor({15, 2}, 8))));
  // More producers: LayerNorm, a reduction, a pool, a convolution in tiles with its Relu
  // epilogue (the holder lives from the convolution's stage); a model output as the copy
  // (Transpose's default order); Flatten; a value only copies read.
  ValueId ln =
      b.op("LayerNormalization",
           {x, b.weight("gamma", random_tensor({4}, 9)), b.weight("beta", random_tensor({4}, 10))},
           {{"axis", int64_t{-1}}});
  b.output(product(transpose(ln, {0, 2, 1, 3}), {-1, 12}, w12));
  ValueId mean = b.op("ReduceMean", {x, shape({-1})}, {{"keepdims", int64_t{0}}});  // [n,3,5]
  b.output(product(transpose(mean, {0, 2, 1}), {-1, 3}, b.weight("w3", random_tensor({3, 2}, 11))));
  ValueId pool = b.op("MaxPool", {img}, {{"kernel_shape", ints({2, 2})}});  // [n,2,4,6]
  b.output(
      product(transpose(pool, {0, 2, 3, 1}), {-1, 2}, b.weight("w2", random_tensor({2, 3}, 12))));
  ValueId conv16 = b.op("Relu", {b.op("Conv",
                                      {img, b.weight("wc16", random_tensor({16, 2, 3, 3}, 13)),
                                       b.weight("bc16", random_tensor({16}, 14))},
                                      {{"pads", ints({1, 1, 1, 1})}})});
  b.output(product(transpose(conv16, {0, 2, 3, 1}), {-1, 16},
                   b.weight("w16", random_tensor({16, 2}, 15))));
  b.output(b.op("Transpose", {b.op("Tanh", {x})}));
  ValueId flat = b.op("Flatten", {transpose(b.op("Sqrt", {b.op("Abs", {x})}), {0, 2, 1, 3})},
                      {{"axis", int64_t{2}}});  // [n * 5, 12]
  b.output(b.op("MatMul", {flat, w12}));
  ValueId ex = b.op("Exp", {x});
  b.output(product(transpose(ex, {0, 2, 1, 3}), {-1, 12}, w12));
  b.output(transpose(ex, {0, 1, 3, 2}));
  ir::Graph g = std::move(b).finish();

  codegen::KernelPlan plan = codegen::make_plan(g);
  auto holder = [&](ValueId value) {
    return plan.graph.value(plan.holder(*plan.graph.find_value(g.value(value).name))).name;
  };
  // Each placed value's holder is the Reshape that the product reads.
  for (ValueId placed : {soft, relu, conv, plain}) {
    INFO(g.value(placed).name);
    const std::string h = holder(placed);
    CHECK(h != g.value(placed).name);
    CHECK(plan.graph.node(plan.graph.value(*plan.graph.find_value(h)).producer).op_type ==
          "Reshape");
  }
  CHECK(holder(shared) == g.value(shared).name);
  CHECK(plan.buffer(*plan.graph.find_value(g.value(shared).name))->also_stored_in.size() == 1);
  CHECK(holder(prod) == g.value(prod).name);
  CHECK(plan.buffer(*plan.graph.find_value(g.value(prod).name))->plain());
  for (ValueId placed : {ln, mean, pool, conv16, ex}) {
    INFO(g.value(placed).name);
    CHECK(holder(placed) != g.value(placed).name);
  }
  CHECK(plan.buffer(*plan.graph.find_value(g.value(ex).name))->also_stored_in.size() == 1);
  // The plain Transposes are stages, and so are the Reshapes the products read: both stored by
  // producers but the product's Transpose, and the attention kernel's one copy.
  size_t skipped = 0;
  for (const codegen::Stage& st : plan.stages) {
    skipped += st.written_by_producers;
    if (st.node != ir::kNoNode && plan.graph.node(st.node).op_type == "Transpose" &&
        st.reads == std::vector{*plan.graph.find_value(g.value(prod).name)})
      CHECK_FALSE(st.written_by_producers);
  }
  // Then five more pairs (`ex`'s first copy one), the output Transpose, Flatten's Transpose
  // and Flatten, and `ex`'s second copy.
  CHECK(skipped == 5 * 2 + 1 + 1 + 5 * 2 + 1 + 2 + 1);
  for (int64_t size : {1, 3, 8})
    CHECK_FALSE(codegen::check_buffer_plan(plan.arena, plan.lifetimes, {{"n", size}}).has_value());
  // The optimizer's plan of a kernel alone keeps the copies (PlanOptions; no Concat here).
  codegen::PlanOptions copies;
  copies.layout_copies_by_producers = false;
  for (const codegen::Buffer& buffer : codegen::make_plan(g, copies).buffers) CHECK(buffer.plain());
  const std::vector<std::vector<int64_t>> dims = {
      {2, 3, 5, 4}, {2, 2, 5, 7}, {2, 2, 7, 4}, {2, 2, 9, 4}, {2, 2, 9, 3}};
  for (int64_t size : {1, 2}) {
    std::vector<std::vector<int64_t>> at = dims;
    for (auto& d : at) d[0] = size;
    check_twin(g, at, {}, /*hosted=*/true);
  }
  // cuDNN's fused form cannot store a placed convolution (its finish kernel does), and at 16
  // bits attention on tensor cores stores through its fragments' places, as the twin does.
  std::vector<ir::Tensor> inputs;
  for (size_t i = 0; i < dims.size(); ++i) inputs.push_back(random_tensor(dims[i], 20 + i));
  for (DType precision : {DType::f32, DType::bf16, DType::f16}) {
    codegen::PlanOptions options;
    options.precision = precision;
    auto twin = codegen::CpuModule::build(g, nullptr, {}, options);
    const std::vector<ir::Tensor> expected = twin->run(inputs);
    auto [rtol, atol] = codegen::precision_tolerance(precision);
    for (const char* form : {"kernels", "cudnn"}) {
      const std::vector<ir::Tensor> got = testing::run_cuda_emulated(g, inputs, options, form);
      REQUIRE(got.size() == expected.size());
      for (size_t o = 0; o < got.size(); ++o) {
        frontend::Comparison c = frontend::compare_tensors(got[o], expected[o], rtol, atol);
        INFO(ir::dtype_name(precision) << ", " << form << ", output " << o << ": " << c.str());
        CHECK(c.match);
      }
    }
  }
}

TEST_CASE("a Gather of one slice is stored by its producer: the [CLS] row before a classifier") {
  // The producer stores only the slice's elements, where the Gather puts them, under a
  // condition; the Gather stage does nothing. An index from the end, a kept axis (indices of
  // shape [1]), the batch axis, a value read elsewhere too (stored beside), a chain through a
  // Transpose, a convolution's channel and a rows stage. A run-time index stays a copy.
  GraphBuilder b;
  auto ints = [](std::vector<int64_t> v) { return ir::AttrValue(std::move(v)); };
  auto index = [&](std::vector<int64_t> dims, int64_t k) {
    return b.constant(ir::Tensor::from_vector<int64_t>(DType::i64, std::move(dims), {k}));
  };
  auto gather = [&](ValueId v, ValueId i, int64_t axis) {
    return b.op("Gather", {v, i}, {{"axis", axis}});
  };
  const Dim n = Dim::symbol("n");
  ValueId x = b.input("x", DType::f32, {n, Dim(5), Dim(4)});
  ValueId img = b.input("img", DType::f32, {n, Dim(2), Dim(5), Dim(7)});
  ValueId dyn = b.input("i", DType::i64, {});
  ValueId w = b.weight("w", random_tensor({4, 3}, 1));
  ValueId bias = b.weight("bias", random_tensor({3}, 2));
  ValueId ln =
      b.op("LayerNormalization",
           {x, b.weight("g", random_tensor({4}, 3)), b.weight("beta", random_tensor({4}, 4))},
           {{"axis", int64_t{-1}}});
  b.output(b.op("Gemm", {gather(ln, index({}, 0), 1), w, bias}));  // [n, 4] -> [n, 3]
  ValueId soft = b.op("Softmax", {x}, {{"axis", int64_t{-1}}});
  b.output(gather(soft, index({1}, -1), 1));  // [n, 1, 4], the last row
  ValueId relu = b.op("Relu", {x});
  b.output(gather(relu, index({}, 0), 0));  // [5, 4], the first batch entry
  ValueId sig = b.op("Sigmoid", {x});
  b.output(gather(sig, index({}, 3), 1));
  b.output(b.op("Neg", {sig}));
  ValueId tanh = b.op("Tanh", {x});
  b.output(b.op("MatMul",
                {gather(b.op("Transpose", {tanh}, {{"perm", ints({0, 2, 1})}}), index({}, 2), 2),
                 b.weight("w4", random_tensor({4, 2}, 5))}));
  ValueId conv = b.op("Conv",
                      {img, b.weight("wc", random_tensor({16, 2, 3, 3}, 6)),
                       b.weight("bc", random_tensor({16}, 7))},
                      {{"pads", ints({1, 1, 1, 1})}});
  b.output(gather(conv, index({}, 5), 1));  // [n, 5, 7]
  ValueId rows = kernel(b, "(Sub ?0 (ReduceMax :axes (-1) :keepdims 1 ?0))", {x});
  b.output(gather(rows, index({}, 4), 1));
  ValueId exp = b.op("Exp", {x});
  b.output(gather(exp, dyn, 1));
  ir::Graph g = std::move(b).finish();

  codegen::KernelPlan plan = codegen::make_plan(g);
  auto buffer = [&](ValueId value) {
    return plan.buffer(*plan.graph.find_value(g.value(value).name));
  };
  for (ValueId placed : {ln, soft, relu, tanh, conv, rows}) {
    INFO(g.value(placed).name);
    CHECK(buffer(placed)->stored_in.has_value());
  }
  CHECK(buffer(sig)->also_stored_in.size() == 1);
  CHECK(buffer(exp)->plain());
  size_t skipped = 0;
  for (const codegen::Stage& st : plan.stages) skipped += st.written_by_producers;
  CHECK(skipped == 8);  // 7 Gathers and the Transpose
  for (int64_t size : {1, 3, 8})
    CHECK_FALSE(codegen::check_buffer_plan(plan.arena, plan.lifetimes, {{"n", size}}).has_value());
  std::vector<ir::Tensor> inputs = {random_tensor({2, 5, 4}, 8), random_tensor({2, 2, 5, 7}, 9),
                                    ir::Tensor(DType::i64, {})};
  inputs[2].set(0, 3);
  for (int64_t size : {1, 2}) {
    std::vector<ir::Tensor> at = inputs;
    at[0] = random_tensor({size, 5, 4}, 10);
    at[1] = random_tensor({size, 2, 5, 7}, 11);
    auto twin = codegen::CpuModule::build(g);
    const std::vector<ir::Tensor> want = ir::Interpreter(g).run(at);
    const std::vector<ir::Tensor> twin_out = twin->run(at),
                                  cuda = testing::run_cuda_emulated(g, at);
    for (size_t o = 0; o < want.size(); ++o) {
      INFO("batch " << size << ", output " << o);
      CHECK(frontend::compare_tensors(twin_out[o], want[o], 1e-4, 1e-5).match);
      CHECK(frontend::compare_tensors(cuda[o], want[o], 1e-4, 1e-5).match);
    }
  }
  for (DType precision : {DType::bf16, DType::f16}) {
    codegen::PlanOptions options;
    options.precision = precision;
    const std::vector<ir::Tensor> expected =
        codegen::CpuModule::build(g, nullptr, {}, options)->run(inputs);
    auto [rtol, atol] = codegen::precision_tolerance(precision);
    for (const char* form : {"kernels", "cudnn"}) {
      const std::vector<ir::Tensor> got = testing::run_cuda_emulated(g, inputs, options, form);
      for (size_t o = 0; o < got.size(); ++o) {
        INFO(ir::dtype_name(precision) << ", " << form << ", output " << o);
        CHECK(frontend::compare_tensors(got[o], expected[o], rtol, atol).match);
      }
    }
  }
}

TEST_CASE("a pointwise kernel with broadcasting and folded transposes") {
  for (int64_t n : {1, 7, 13}) {
    GraphBuilder b;
    ValueId x = b.input("x", DType::f32, {Dim::symbol("n"), Dim(5), Dim(3)});
    ValueId y = b.input("y", DType::f32, {Dim(3), Dim(1)});
    ValueId z = b.input("z", DType::f32, {Dim(5)});
    ValueId k = kernel(b,
                       "(Add (Mul (Transpose :perm (0 2 1) ?0) (Sigmoid ?1)) (Tanh (Max ?2 "
                       "(Neg ?2))))",
                       {x, y, z});
    b.output(k);
    check_twin(std::move(b).finish(), {{n, 5, 3}, {3, 1}, {5}});
  }
}

TEST_CASE("layout ops fold into indexing: reshape, slice, concat, expand, gather") {
  GraphBuilder b;
  ValueId x = b.input("x", DType::f32, {Dim::symbol("n"), Dim(6), Dim(7)});
  ValueId idx = b.input("i", DType::i64, {Dim(4)});
  ValueId shape = b.constant(ir::Tensor::from_vector<int64_t>(DType::i64, {3}, {-1, 7, 3}));
  ValueId r = b.op("Reshape", {x, shape});  // [n*2, 7, 3]
  ValueId s = b.op("Slice", {r},
                   {{"starts", std::vector<int64_t>{1}},
                    {"ends", std::vector<int64_t>{6}},
                    {"axes", std::vector<int64_t>{1}},
                    {"steps", std::vector<int64_t>{2}}});         // [n*2, 3, 3]
  ValueId c = b.op("Concat", {s, s, r}, {{"axis", int64_t{1}}});  // [n*2, 13, 3]
  ValueId g = b.op("Gather", {c, idx}, {{"axis", int64_t{1}}});   // [n*2, 4, 3]
  ValueId e = b.op("Exp", {g});
  b.output(e);
  check_twin(std::move(b).finish(), {{3, 6, 7}, {4}});
}

TEST_CASE("a Reshape reads its input through runs of axes whose sizes meet, not one index") {
  const Dim n = Dim::symbol("n");
  auto shape = [](GraphBuilder& b, std::vector<int64_t> v) {
    const int64_t rank = int64_t(v.size());
    return b.constant(ir::Tensor::from_vector<int64_t>(DType::i64, {rank}, std::move(v)));
  };
  auto transpose = [](GraphBuilder& b, ValueId x) {
    return b.op("Transpose", {x}, {{"perm", std::vector<int64_t>{0, 2, 1, 3}}});
  };
  // Heads split out of a projection, as the transformers write it: [n, 6, 8] as [n, 6, 2, 4],
  // then transposed. The stage's item is an element of [n, 2, 6, 4] (its coordinates by
  // division); its load takes the input's column as head * 4 + j and divides no further (it had
  // recombined one linear index and divided it by 8 and 6).
  {
    GraphBuilder b;
    ValueId x = b.input("x", DType::f32, {n, Dim(6), Dim(8)});
    b.output(b.op("Exp", {transpose(b, b.op("Reshape", {x, shape(b, {0, 0, 2, 4})}))}));
    ir::Graph g = std::move(b).finish();
    const std::string text = codegen::print_kernels(codegen::make_plan(g), codegen::Target::Cpu);
    const size_t at = text.find("static void s0(");
    REQUIRE(at != std::string::npos);
    const std::string stage = text.substr(at, text.find("\n}\n", at) - at);
    const size_t item = stage.find("(void)r0;");  // the end of the item's own coordinates
    REQUIRE(item != std::string::npos);
    CHECK(occurrences(stage.substr(item), "eqf_divmod") == 0);
    for (int64_t size : {1, 3}) check_twin(g, {{size, 6, 8}});
  }
  // Heads merged back; runs that meet only over two axes each (6 x 4 read as 4 x 6); size-1
  // axes on either side; an input whose last axis is 3 against an output of n * 15 elements (no
  // run meets: one linear index, as before).
  GraphBuilder b;
  ValueId y = b.input("y", DType::f32, {n, Dim(2), Dim(6), Dim(4)});
  ValueId z = b.input("z", DType::f32, {n, Dim(6), Dim(4)});
  ValueId u = b.input("u", DType::f32, {n, Dim(1), Dim(12)});
  ValueId w = b.input("w", DType::f32, {n, Dim(5), Dim(3)});
  b.output(b.op("Exp", {b.op("Reshape", {transpose(b, y), shape(b, {0, 6, 8})})}));
  b.output(b.op("Exp", {b.op("Reshape", {z, shape(b, {0, 4, 6})})}));
  b.output(b.op("Exp", {b.op("Reshape", {u, shape(b, {0, 3, 1, 4})})}));
  b.output(b.op("Exp", {b.op("Reshape", {w, shape(b, {-1})})}));
  ir::Graph g = std::move(b).finish();
  for (int64_t size : {1, 3})
    check_twin(g, {{size, 2, 6, 4}, {size, 6, 4}, {size, 1, 12}, {size, 5, 3}});
}

TEST_CASE(
    "ops read at computed places (BatchNormalization, Pad, Resize, GatherND...), ConvTranspose") {
  // Each at a run-time batch of 1, 2 and 5 (a vector group partial or whole), in the twin and in
  // the CUDA source on the emulator against the interpreter, several in one kernel where the
  // optimizer would fuse them.
  for (int64_t n : {1, 2, 5}) {
    GraphBuilder b;
    ValueId x = b.input("x", DType::f32, {Dim::symbol("n"), Dim(4), Dim(3), Dim(5)});
    ValueId idx = b.input("i", DType::i64, {Dim::symbol("n"), Dim(4), Dim(3), Dim(2)});
    auto channel = [&](const char* name, double base) {
      ir::Tensor t(DType::f32, {4});
      for (int64_t c = 0; c < 4; ++c) t.set(c, base + 0.25 * double(c));
      return b.weight(name, std::move(t));
    };
    ValueId bn = b.op("BatchNormalization",
                      {x, channel("scale", 0.5), channel("bias", -0.3), channel("mean", 0.1),
                       channel("var", 0.7)},
                      {{"epsilon", 1e-3}});
    ValueId relu = b.op("Relu", {bn});
    b.output(b.op("Pad", {relu, b.constant(ir::Tensor::from_vector<int64_t>(
                                    DType::i64, {8}, {0, 1, 2, -1, 0, 0, 1, 2}))}));
    for (const char* mode : {"reflect", "edge", "wrap"})
      b.output(b.op(
          "Pad",
          {x, b.constant(ir::Tensor::from_vector<int64_t>(DType::i64, {4}, {1, 2, 2, 1})),
           ir::kNoValue, b.constant(ir::Tensor::from_vector<int64_t>(DType::i64, {2}, {2, -1}))},
          {{"mode", std::string(mode)}}));
    b.output(b.op(
        "Tile", {x, b.constant(ir::Tensor::from_vector<int64_t>(DType::i64, {4}, {1, 2, 1, 3}))}));
    ValueId d2s =
        b.op("DepthToSpace", {x}, {{"blocksize", int64_t{2}}, {"mode", std::string("CRD")}});
    b.output(b.op("SpaceToDepth", {d2s}, {{"blocksize", int64_t{2}}}));  // x again, another order
    b.output(b.op("DepthToSpace", {x}, {{"blocksize", int64_t{2}}}));
    b.output(b.op("Trilu", {x, b.constant(ir::Tensor::from_vector<int64_t>(DType::i64, {}, {-1}))},
                  {{"upper", int64_t{0}}}));
    b.output(b.op("Trilu", {x}));
    b.output(b.op("GatherElements", {x, idx}, {{"axis", int64_t{3}}}));
    for (int64_t batch_dims : {1, 2})  // rows of idx address x's dims 1-2, then 2-3
      b.output(b.op("Neg", {b.op("GatherND", {x, idx}, {{"batch_dims", batch_dims}})}));
    b.output(b.op("OneHot",
                  {idx, b.constant(ir::Tensor::from_vector<int64_t>(DType::i64, {}, {3})),
                   b.constant(ir::Tensor::from_vector<float>(DType::f32, {2}, {-1, 4}))},
                  {{"axis", int64_t{1}}}));
    for (const char* op : {"ArgMax", "ArgMin"})
      b.output(b.op(op, {x},
                    {{"axis", int64_t{3}},
                     {"keepdims", int64_t{0}},
                     {"select_last_index", int64_t{std::string(op) == "ArgMin"}}}));
    std::vector<ValueId> parts =
        b.op_n("Split", {x, b.constant(ir::Tensor::from_vector<int64_t>(DType::i64, {2}, {2, 3}))},
               2, {{"axis", int64_t{3}}});
    b.output(b.op("Mul", {parts[0], parts[0]}));
    b.output(parts[1]);
    b.output(b.op("EyeLike",
                  {b.op("Reshape", {x, b.constant(ir::Tensor::from_vector<int64_t>(DType::i64, {2},
                                                                                   {-1, 5}))})},
                  {{"k", int64_t{1}}}));
    // Resize with constant scales or sizes, in the modes exported models use.
    auto floats = [&](std::vector<float> v) {
      const int64_t size = int64_t(v.size());
      return b.constant(ir::Tensor::from_vector<float>(DType::f32, {size}, std::move(v)));
    };
    auto resize = [&](std::vector<float> scales, const char* mode, const char* coordinates,
                      const char* nearest, std::vector<float> roi = {}) {
      return b.op("Resize", {x, roi.empty() ? ir::kNoValue : floats(roi), floats(scales)},
                  {{"mode", std::string(mode)},
                   {"coordinate_transformation_mode", std::string(coordinates)},
                   {"nearest_mode", std::string(nearest)},
                   {"extrapolation_value", 7.0}});
    };
    b.output(resize({1, 1, 2, 2}, "nearest", "asymmetric", "floor"));
    b.output(resize({1, 1, 1.5, 0.6f}, "nearest", "half_pixel", "round_prefer_floor"));
    b.output(resize({1, 1, 2.5, 1.4f}, "nearest", "align_corners", "round_prefer_ceil"));
    b.output(resize({1, 1, 2, 0.5f}, "linear", "half_pixel", "round_prefer_floor"));
    b.output(resize({1, 1, 1.7f, 2}, "linear", "align_corners", "round_prefer_floor"));
    b.output(resize({1, 1, 3, 1}, "linear", "pytorch_half_pixel", "round_prefer_floor"));
    b.output(resize({1, 1, 2, 1.5f}, "cubic", "half_pixel", "round_prefer_floor"));
    b.output(resize({1, 1, 0.7f, 2.5f}, "cubic", "align_corners", "round_prefer_floor"));
    b.output(b.op("Resize", {x, ir::kNoValue, floats({1, 1, 2.5f, 1.6f})},
                  {{"mode", std::string("cubic")},
                   {"cubic_coeff_a", -0.5},
                   {"exclude_outside", int64_t{1}},
                   {"coordinate_transformation_mode", std::string("asymmetric")}}));
    b.output(resize({1, 1, 2, 2}, "linear", "tf_crop_and_resize", "round_prefer_floor",
                    {0, 0, 0.2f, -0.1f, 1, 1, 0.9f, 1.2f}));
    b.output(b.op("Resize",
                  {x, ir::kNoValue, ir::kNoValue,
                   b.constant(ir::Tensor::from_vector<int64_t>(DType::i64, {2}, {2, 9}))},
                  {{"axes", std::vector<int64_t>{2, 3}}, {"mode", std::string("linear")}}));
    // ConvTranspose: groups, strides, dilation, pads, output_padding, a bias, then a ReLU.
    ir::Tensor wt(DType::f32, {4, 3, 3, 2});
    for (int64_t i = 0; i < wt.numel(); ++i) wt.set(i, 0.1 * double((i * 5) % 7) - 0.3);
    ir::Tensor bias(DType::f32, {6});
    for (int64_t i = 0; i < 6; ++i) bias.set(i, 0.05 * double(i));
    b.output(b.op("Relu", {b.op("ConvTranspose", {x, b.weight("wt", wt), b.weight("bt", bias)},
                                {{"group", int64_t{2}},
                                 {"strides", std::vector<int64_t>{2, 3}},
                                 {"dilations", std::vector<int64_t>{2, 1}},
                                 {"pads", std::vector<int64_t>{1, 0, 0, 2}},
                                 {"output_padding", std::vector<int64_t>{1, 0}}})}));
    check_twin(std::move(b).finish(), {{n, 4, 3, 5}, {n, 4, 3, 2}});
  }
}

TEST_CASE("row reductions: softmax, layer norm, reduce*, residual + layernorm") {
  // On CUDA rows of 1, 13 and 33 take a warp each; 3001 and 9001 a block (3001 kept in
  // registers, 12 elements a thread; 9001 read in each pass). Reduce* over the last axes takes a
  // thread per output under 32 elements (1, 13), a warp up to 1024 (33, 3 x 13, 3 x 33) and a
  // block beyond; over the first axis a thread per output. ArgMax and ArgMin likewise.
  for (int64_t cols : {1, 13, 33, 3001, 9001}) {
    GraphBuilder b;
    ValueId x = b.input("x", DType::f32, {Dim::symbol("n"), Dim(cols)});
    ValueId r = b.input("r", DType::f32, {Dim::symbol("n"), Dim(cols)});
    ValueId g = b.input("g", DType::f32, {Dim(cols)});
    ValueId bias = b.input("b", DType::f32, {Dim(cols)});
    ValueId t = b.input("t", DType::f32, {Dim::symbol("n"), Dim(3), Dim(cols)});
    auto reduce = [&](const char* op, ValueId in, std::vector<int64_t> axes, int64_t keep) {
      return b.op(op, {in}, {{"axes", std::move(axes)}, {"keepdims", keep}});
    };
    for (const char* op :
         {"ReduceSum", "ReduceMin", "ReduceL1", "ReduceL2", "ReduceSumSquare", "ReduceLogSumExp"})
      b.output(reduce(op, x, {-1}, 0));
    b.output(reduce("ReduceMean", t, {1, 2}, 1));
    b.output(reduce("ReduceMax", t, {2}, 0));
    b.output(reduce("ReduceLogSum", b.op("Abs", {t}), {1, 2}, 0));
    if (cols <= 33) b.output(reduce("ReduceProd", t, {2}, 1));  // longer rows underflow to 0
    b.output(kernel(b, "(Softmax :axis -1 (Mul ?0 ?1))", {x, r}));
    b.output(kernel(b,
                    "(LayerNormalization :axis -1 :epsilon 1e-05 :stash_type 1 (Add ?0 ?1) ?2 ?3)",
                    {x, r, g, bias}));
    b.output(
        b.op("ReduceMean", {x}, {{"axes", std::vector<int64_t>{1}}, {"keepdims", int64_t{1}}}));
    b.output(b.op("ReduceMax", {x}, {{"axes", std::vector<int64_t>{0}}, {"keepdims", int64_t{0}}}));
    b.output(b.op("LogSoftmax", {x}, {{"axis", int64_t{0}}}));
    // ArgMax and ArgMin of rows with many ties (values -2..1): the first index or the last.
    ValueId ties = b.op(
        "Floor",
        {b.op("Mul", {x, b.constant(ir::Tensor::from_vector<float>(DType::f32, {}, {2.0f}))})});
    // The same with NaNs where x < -0.9, the extreme of either op (as numpy's).
    ValueId nans = b.op(
        "Where",
        {b.op("Less", {x, b.constant(ir::Tensor::from_vector<float>(DType::f32, {}, {-0.9f}))}),
         b.constant(ir::Tensor::from_vector<float>(DType::f32, {},
                                                   {std::numeric_limits<float>::quiet_NaN()})),
         ties});
    for (ValueId row : {ties, nans})
      for (const char* op : {"ArgMax", "ArgMin"})
        for (int64_t last : {0, 1})
          b.output(b.op(op, {row},
                        {{"axis", int64_t{-1}}, {"keepdims", last}, {"select_last_index", last}}));
    check_twin(std::move(b).finish(), {{5, cols}, {5, cols}, {cols}, {cols}, {5, 3, cols}});
  }
}

TEST_CASE("Pow by a weight of 2 is one product; a LayerNorm decomposed as exported") {
  // LayerNorm as opset-13 exports it: mean, x - mean, Pow(., 2), mean, + eps, sqrt, divide. The
  // exponent 2, a weight, prints as one product (as the interpreter rounds its pow in double);
  // an exponent of 3 still calls eqf_pow. The twin sums each row in an omp simd loop.
  GraphBuilder b;
  ValueId x = b.input("x", DType::f32, {Dim::symbol("n"), Dim(37)});
  auto scalar = [&](float v) {
    return b.constant(ir::Tensor::from_vector<float>(DType::f32, {}, {v}));
  };
  auto mean = [&](ValueId v) {
    return b.op("ReduceMean", {v}, {{"axes", std::vector<int64_t>{-1}}, {"keepdims", int64_t{1}}});
  };
  ValueId centered = b.op("Sub", {x, mean(x)});
  ValueId variance = mean(b.op("Pow", {centered, scalar(2.0f)}));
  b.output(b.op("Div", {centered, b.op("Sqrt", {b.op("Add", {variance, scalar(1e-5f)})})}));
  b.output(b.op("Pow", {b.op("Abs", {x}), scalar(3.0f)}));
  ir::Graph g = std::move(b).finish();
  const std::string cpu = codegen::print_kernels(codegen::make_plan(g), codegen::Target::Cpu);
  CHECK(occurrences(cpu, "= eqf_pow(") == 1);
  CHECK(cpu.find("#pragma omp simd reduction(+ : acc") != std::string::npos);
  check_twin(g, {{5, 37}});
}

TEST_CASE("normalizations with their statistics read, and InstanceNormalization, as reductions") {
  // A LayerNormalization whose Mean or InvStdDev is read, over the last axes or from axis 1, with
  // and without a bias; InstanceNormalization over planes of 1 and 35 elements and 11 in 1-D.
  for (int64_t n : {1, 3}) {
    GraphBuilder b;
    ValueId x = b.input("x", DType::f32, {Dim::symbol("n"), Dim(4), Dim(7)});
    ValueId img = b.input("img", DType::f32, {Dim::symbol("n"), Dim(3), Dim(5), Dim(7)});
    ValueId dot = b.input("dot", DType::f32, {Dim::symbol("n"), Dim(2), Dim(1), Dim(1)});
    ValueId line = b.input("line", DType::f32, {Dim::symbol("n"), Dim(3), Dim(11)});
    auto vector = [&](std::vector<int64_t> dims, double base) {
      ir::Tensor t(DType::f32, dims);
      for (int64_t i = 0; i < t.numel(); ++i) t.set(i, base + 0.125 * double(i % 5));
      return b.constant(std::move(t));
    };
    std::vector<ValueId> last =
        b.op_n("LayerNormalization", {x, vector({7}, 0.5)}, 3, {{"epsilon", 1e-3}});
    b.output(last[0]);
    b.output(last[2]);
    std::vector<ValueId> from1 =
        b.op_n("LayerNormalization", {b.op("Relu", {x}), vector({4, 7}, 0.75), vector({7}, -0.25)},
               3, {{"axis", int64_t{1}}});
    b.output(b.op("Add", {from1[0], x}));
    b.output(from1[1]);
    b.output(b.op("Mul", {from1[2], from1[1]}));
    for (ValueId in : {img, dot, line}) {
      const int64_t c = b.type(in).shape[1].value();
      b.output(b.op("InstanceNormalization", {in, vector({c}, 0.9), vector({c}, 0.1)},
                    {{"epsilon", 1e-4}}));
    }
    const ir::Graph g = std::move(b).finish();
    for (const codegen::Stage& s : codegen::make_plan(g).stages)
      CHECK(s.kind != codegen::StageKind::LayerNorm);  // every norm here is its reductions
    check_twin(g, {{n, 4, 7}, {n, 3, 5, 7}, {n, 2, 1, 1}, {n, 3, 11}});
  }
  // Without its statistics read, a LayerNormalization stays one stage.
  GraphBuilder b;
  ValueId x = b.input("x", DType::f32, {Dim(2), Dim(9)});
  ir::Tensor scale(DType::f32, {9});
  b.output(b.op_n("LayerNormalization", {x, b.weight("s", scale)}, 3)[0]);
  const codegen::KernelPlan plan = codegen::make_plan(std::move(b).finish());
  CHECK(std::count_if(plan.stages.begin(), plan.stages.end(), [](const codegen::Stage& s) {
          return s.kind == codegen::StageKind::LayerNorm;
        }) == 1);
}

TEST_CASE("a rows stage computes the reductions its row reads: norms and softmax written out") {
  // Each kernel is one stage over rows: on CUDA a warp per row (13: a thread per row; 3001 a
  // block, in registers; 9001 a block, read in each pass; a run-time extent read in each pass).
  const std::string mean_x = "(ReduceMean :axes (-1) :keepdims 1 (Add ?0 ?1))";
  const std::string centered = "(Sub (Add ?0 ?1) " + mean_x + ")";
  const std::string layernorm = "(Add (Mul (Div " + centered +
                                " (Sqrt (Add (ReduceMean :axes (-1) :keepdims 1 (Pow " + centered +
                                " ?2)) ?3))) ?4) ?5)";
  const std::string rmsnorm =
      "(Mul (Div ?0 (Sqrt (Add (ReduceMean :axes (-1) :keepdims 1 (Mul ?0 ?0)) ?1))) ?2)";
  const std::string exp_x = "(Exp (Sub ?0 (ReduceMax :axes (-1) :keepdims 1 ?0)))";
  const std::string softmax =
      "(Div " + exp_x + " (ReduceSum :axes (-1) :keepdims 1 " + exp_x + "))";
  const std::string log_softmax = "(Sub ?0 (ReduceLogSumExp :axes (-1) :keepdims 1 ?0))";
  // A reduction read at another row (through a Transpose) is stored: a Reduce stage.
  const std::string other_row =
      "(Mul ?0 (Transpose :perm (1 0 2) (ReduceSum :axes (-1) :keepdims 1 ?1)))";
  for (const std::optional<int64_t> cols :
       {std::optional<int64_t>(1), std::optional<int64_t>(13), std::optional<int64_t>(33),
        std::optional<int64_t>(3001), std::optional<int64_t>(9001), std::optional<int64_t>()}) {
    INFO("row length " << (cols ? std::to_string(*cols) : "m"));
    GraphBuilder b;
    const Dim c = cols ? Dim(*cols) : Dim::symbol("m");
    ValueId x = b.input("x", DType::f32, {Dim::symbol("n"), Dim(3), c});
    ValueId r = b.input("r", DType::f32, {Dim::symbol("n"), Dim(3), c});
    ValueId g = b.input("g", DType::f32, {c});
    ValueId bias = b.input("b", DType::f32, {c});
    ValueId u = b.input("u", DType::f32, {Dim(3), Dim::symbol("n"), c});
    auto scalar = [&](double v) {
      ir::Tensor t(DType::f32, {});
      t.set(0, v);
      return b.constant(std::move(t));
    };
    const ValueId eps = scalar(1e-5);
    b.output(kernel(b, layernorm, {x, r, scalar(2), eps, g, bias}));
    b.output(kernel(b, rmsnorm, {x, eps, g}));
    b.output(kernel(b, softmax, {x}));
    b.output(kernel(b, log_softmax, {x}));
    b.output(kernel(b, other_row, {x, u}));
    // A mask of each row's maximum: the reduction in f32, the stage writing bools.
    b.output(kernel(b, "(Equal ?0 (ReduceMax :axes (-1) :keepdims 1 ?0))", {x}));
    // A kernel whose output is the reduction stores it (a Reduce stage) for the next to read.
    b.output(kernel(b, "(Sub (Add ?0 ?1) ?2)", {x, r, kernel(b, mean_x, {x, r})}));
    const ir::Graph graph = std::move(b).finish();
    const codegen::KernelPlan plan = codegen::make_plan(graph);
    std::vector<std::string> kinds;
    for (const codegen::Stage& s : plan.stages)
      kinds.push_back(std::string(codegen::stage_kind_name(s.kind)) + "/" +
                      std::to_string(s.row_reductions.size()));
    CHECK(kinds == std::vector<std::string>{"rows/2", "rows/1", "rows/2", "rows/1", "reduce/0",
                                            "pointwise/0", "rows/1", "reduce/0", "pointwise/0"});
    // On CUDA a static row of at most 8192 is read from memory once: the first pass keeps the
    // residual sum in registers, the second the centred values; a longer row or one of
    // run-time extent is read in each pass.
    const std::string cuda = codegen::print_kernels(plan, codegen::Target::Cuda);
    const size_t begin = cuda.find("__global__ void s0(");
    REQUIRE(begin != std::string::npos);
    const std::string layernorm_stage = cuda.substr(begin, cuda.find("\n}\n", begin) - begin);
    const std::string x_load = "p" + std::to_string(plan.buffer_of.at(x)) + "[";
    CHECK(occurrences(layernorm_stage, x_load) == (cols && *cols >= 32 && *cols <= 8192 ? 1 : 3));
    const int64_t m = cols.value_or(37);
    for_each_vector_width([&] {
      check_twin(graph, {{2, 3, m}, {2, 3, m}, {m}, {m}, {3, 2, m}}, {}, true);
    });
  }
}

// The CUDA forms the GPU run measured (bench/gpu): what the printed source must hold. The twin
// does not print them; nvcc builds them in codegen_nvcc_build_test.
TEST_CASE(
    "CUDA: a static row stays in registers between passes; pointwise groups of 4 with a "
    "partial last group") {
  auto stage_text = [](const std::string& source, size_t stage) {
    size_t at = source.find("__global__ void s" + std::to_string(stage) + "(");
    REQUIRE(at != std::string::npos);
    return source.substr(at, source.find("\n}\n", at) - at);
  };
  auto count = occurrences;
  GraphBuilder b;
  ValueId x = b.input("x", DType::f32, {Dim::symbol("n"), Dim(33)});
  ValueId y = b.input("y", DType::f32, {Dim::symbol("n"), Dim::symbol("m")});
  ValueId z = b.input("z", DType::f32, {Dim::symbol("n")});
  ValueId w = b.input("w", DType::f32, {Dim::symbol("n"), Dim(8)});
  ValueId v = b.input("v", DType::f32, {Dim::symbol("n"), Dim(3001)});
  b.output(b.op("Softmax", {x}, {{"axis", int64_t{-1}}}));  // stage 0: a static row of 33
  b.output(b.op("Softmax", {y}, {{"axis", int64_t{-1}}}));  // stage 1: a row of run-time extent
  b.output(b.op("Exp", {z}));                               // stage 2: n elements, any n
  b.output(b.op("Exp", {w}));                               // stage 3: a multiple of 8
  b.output(b.op("Softmax", {v}, {{"axis", int64_t{-1}}}));  // stage 4: a block's row of 3001
  auto mean = [&](ValueId in, int64_t axis) {
    return b.op("ReduceMean", {in}, {{"axes", std::vector<int64_t>{axis}}, {"keepdims", 0}});
  };
  b.output(mean(x, 1));  // stage 5: a warp per row of 33
  b.output(mean(v, 1));  // stage 6: a block per row of 3001
  b.output(mean(w, 1));  // stage 7: rows of 8, a thread each
  b.output(mean(x, 0));  // stage 8: the first axis, a thread per output
  codegen::KernelPlan plan = codegen::make_plan(std::move(b).finish());
  REQUIRE(plan.stages.size() == 9);
  const std::string cuda = codegen::print_kernels(plan, codegen::Target::Cuda);
  // 33 elements: two per lane, kept in registers; x is read from memory in the first pass only.
  const std::string cached = stage_text(cuda, 0);
  CHECK(count(cached, "[2];") == 1);
  CHECK(count(cached, "p" + std::to_string(plan.buffer_of.at(plan.graph.inputs()[0])) + "[") == 1);
  CHECK(count(stage_text(cuda, 1), "#pragma unroll") == 0);  // a run-time extent: three passes
  const std::string any_n = stage_text(cuda, 2), whole = stage_text(cuda, 3);
  CHECK(count(any_n, "const bool whole = t * 4 + 4 <= elements;") == 1);
  CHECK(count(any_n, "float4") > 0);
  CHECK(count(whole, "elements") == 0);
  CHECK(count(whole, "float4") > 0);
  // 3001 elements: a block per row, 12 a thread in registers, read once; two block combines.
  const std::string block_row = stage_text(cuda, 4);
  CHECK(count(block_row, "[12];") == 1);
  CHECK(count(block_row, "p" + std::to_string(plan.buffer_of.at(plan.graph.inputs()[4])) + "[") ==
        1);
  CHECK(count(block_row, "eqf_block_max(") == 1);
  CHECK(count(block_row, "eqf_block_sum(") == 1);
  CHECK(count(cached, "eqf_block_") == 0);
  // Reduce*: lanes or threads combine, and one stores.
  CHECK(count(stage_text(cuda, 5), "eqf_warp_sum(") == 1);
  CHECK(count(stage_text(cuda, 5), "if (lane == 0)") == 1);
  CHECK(count(stage_text(cuda, 6), "eqf_block_sum(") == 1);
  CHECK(count(stage_text(cuda, 6), "if (threadIdx.x == 0)") == 1);
  for (size_t thread_per_output : {7, 8}) {
    CHECK(count(stage_text(cuda, thread_per_output), "eqf_warp_") == 0);
    CHECK(count(stage_text(cuda, thread_per_output), "eqf_block_") == 0);
  }
}

TEST_CASE("contractions with epilogues: batched MatMul + bias + Gelu, Gemm with transB") {
  for (int64_t m : {1, 7}) {
    GraphBuilder b;
    ValueId x = b.input("x", DType::f32, {Dim::symbol("n"), Dim(m), Dim(13)});
    ValueId w = b.input("w", DType::f32, {Dim(13), Dim(5)});
    ValueId bias = b.input("bias", DType::f32, {Dim(5)});
    ValueId a = b.input("a", DType::f32, {Dim(m), Dim(13)});
    ValueId wt = b.input("wt", DType::f32, {Dim(3), Dim(13)});
    b.output(
        kernel(b, "(Mul (Add (MatMul ?0 ?1) ?2) (Erf (Add (MatMul ?0 ?1) ?2)))", {x, w, bias}));
    ValueId c3 = b.input("c", DType::f32, {Dim(3)});
    b.output(b.op("Gemm", {a, wt, b.op("Neg", {b.op("Abs", {c3})})},
                  {{"transB", int64_t{1}}, {"alpha", 0.5}, {"beta", 2.0}}));
    // 131 columns: the twin's items of 64 columns of a row, the last of 3.
    ValueId wt131 = b.input("wt131", DType::f32, {Dim(131), Dim(13)});
    b.output(b.op("Relu", {b.op("Gemm", {a, wt131}, {{"transB", int64_t{1}}})}));
    // A batch of 4 x m rows times one matrix: the twin's tiles take rows across the batch (4 at
    // once for m = 1), their epilogue reading an operand that varies along the batch alone.
    ValueId x4 = b.input("x4", DType::f32, {Dim(4), Dim(m), Dim(13)});
    ValueId w70 = b.input("w70", DType::f32, {Dim(13), Dim(70)});
    ValueId per_batch = b.input("per_batch", DType::f32, {Dim(4), Dim(1), Dim(1)});
    b.output(kernel(b, "(Mul (MatMul ?0 ?1) ?2)", {x4, w70, per_batch}));
    ir::Graph g = std::move(b).finish();
    // The MatMul's loops compute the bias and Gelu where they store: no pass of their own.
    std::string cpu = codegen::print_kernels(codegen::make_plan(g), codegen::Target::Cpu);
    CHECK(cpu.find("with stage 1's epilogue Mul") != std::string::npos);
    // The twin forks once a run: each stage shares its items out inside one parallel region,
    // which a CBLAS call (its other form) closes around itself.
    CHECK(occurrences(cpu, "#pragma omp parallel\n") == 1 + occurrences(cpu, "as CBLAS SGEMM"));
    CHECK(occurrences(cpu, "#pragma omp for schedule(static)\n") >= 2);
    CHECK(occurrences(cpu, "omp parallel for") == 0);
    const std::vector<std::vector<int64_t>> dims = {{2, m, 13}, {13, 5},  {5},       {m, 13},
                                                    {3, 13},    {3},      {131, 13}, {4, m, 13},
                                                    {13, 70},   {4, 1, 1}};
    check_twin(g, dims);
    codegen::PlanOptions separate;  // the epilogue as a pass of its own
    separate.epilogues_in_contractions = false;
    CHECK(codegen::print_kernels(codegen::make_plan(g, separate), codegen::Target::Cpu)
              .find("'s epilogue") == std::string::npos);
    check_twin(g, dims, separate);
    // The same through CBLAS (EQFUSE_BLAS=1), where this machine has one: -lblas and cblas.h
    // come with Debian's libblas-dev, which CBC's packages pull in.
    ::setenv("EQFUSE_BLAS", "1", 1);
    check_twin(g, dims);
    ::unsetenv("EQFUSE_BLAS");
  }
}

TEST_CASE("CUDA products with their epilogues in cuBLASLt: bias, relu, residual, Gemm's C") {
  // 37 x 29 products, one row of 5 (batch dims folded in) at run time; the emulator's cuBLASLt
  // takes what cublasLt.h documents. Each product runs through cuBLASLt with the pointwise stage
  // after it, and again where cuBLASLt takes no algorithm or fails: cuBLAS, then the stage's
  // kernel.
  GraphBuilder b;
  const Dim n = Dim::symbol("n");
  ValueId x = b.input("x", DType::f32, {n, Dim(37)});
  ValueId x3 = b.input("x3", DType::f32, {Dim(2), n, Dim(37)});
  ValueId r = b.input("r", DType::f32, {n, Dim(29)});
  ValueId c = b.input("c", DType::f32, {n, Dim(29)});
  auto weight = [&](const char* name, std::vector<int64_t> dims, uint64_t seed) {
    return b.weight(name, random_tensor(dims, seed));
  };
  ValueId w = weight("w", {37, 29}, 3), wt = weight("wt", {29, 37}, 4);
  ValueId bias = weight("bias", {29}, 5), bias3 = weight("bias3", {1, 1, 29}, 6);
  b.output(kernel(b, "(Relu (Add (MatMul ?0 ?1) ?2))", {x, w, bias}));
  b.output(kernel(b, "(Add (Add (MatMul ?0 ?1) ?2) ?3)", {x, w, bias, r}));  // + a residual
  b.output(kernel(b, "(Add (MatMul ?0 ?1) ?2)", {x3, w, bias3}));  // batched, a rank-3 bias
  b.output(kernel(b, "(Relu (MatMul ?0 ?1))", {x, w}));
  b.output(b.op("Gemm", {x, wt, bias}, {{"transB", int64_t{1}}, {"alpha", 0.5}}));  // C a bias
  b.output(b.op("Gemm", {x, w, c}, {{"alpha", 2.0}, {"beta", 0.25}}));  // C a matrix, beta
  ir::Graph g = std::move(b).finish();
  const std::string cuda = codegen::print_kernels(codegen::make_plan(g), codegen::Target::Cuda);
  CHECK(occurrences(cuda, "as cuBLASLt") == 6);
  CHECK(cuda.find("CUBLASLT_EPILOGUE_RELU_BIAS") != std::string::npos);
  CHECK(cuda.find("CUBLASLT_EPILOGUE_RELU)") != std::string::npos);
  const std::vector<std::vector<int64_t>> dims = {{5, 37}, {2, 5, 37}, {5, 29}, {5, 29}};
  // `eqfuse run --backend cuda` calls cuBLASLt the same way where its host code is built against
  // the CUDA runtime.
  const codegen::HostedCuda hosted = codegen::print_cuda_hosted(codegen::make_plan(g), true);
  CHECK(hosted.host.find("CUBLASLT_EPILOGUE_RELU_BIAS") != std::string::npos);
  CHECK(codegen::print_cuda_hosted(codegen::make_plan(g)).host.find("cublasLt") ==
        std::string::npos);
  ::setenv("EQFUSE_CUBLASLT", "strict", 1);  // a product cuBLASLt does not run fails the run
  check_twin(g, dims, {}, /*hosted=*/true);
  ::unsetenv("EQFUSE_CUBLASLT");
  // Where cuBLASLt takes no algorithm or fails: cuBLAS (the hosted table's GEMM), then the
  // epilogue's kernel.
  for (const char* other_form : {"EQF_EMULATOR_CUBLASLT_NONE", "EQF_EMULATOR_CUBLASLT_FAIL"}) {
    ::setenv(other_form, "1", 1);
    check_twin(g, dims, {}, /*hosted=*/true);
    ::unsetenv(other_form);
  }
}

namespace {

// softmax(Q·K^T · scale [+ mask | where mask < 0: -inf]) · V in one kernel, Q (n, heads,
// queries, depth), K (n, heads, keys, depth), V (n, heads, keys, width); the mask (queries,
// keys) is the last input. Causal: keys where the mask is below zero are left out (never all
// of a row's).
ir::Graph attention_graph(const std::string& mask, int64_t heads, int64_t queries, int64_t keys,
                          int64_t depth, int64_t width) {
  GraphBuilder b;
  const Dim n = Dim::symbol("n");
  ValueId q = b.input("q", DType::f32, {n, Dim(heads), Dim(queries), Dim(depth)});
  ValueId k = b.input("k", DType::f32, {n, Dim(heads), Dim(keys), Dim(depth)});
  ValueId v = b.input("v", DType::f32, {n, Dim(heads), Dim(keys), Dim(width)});
  ValueId m = b.input("mask", DType::f32, {Dim(queries), Dim(keys)});
  ValueId scale = b.constant(
      ir::Tensor::from_vector<float>(DType::f32, {}, {float(1 / std::sqrt(double(depth)))}));
  ValueId minus_inf = b.constant(
      ir::Tensor::from_vector<float>(DType::f32, {}, {-std::numeric_limits<float>::infinity()}));
  ValueId zero = b.constant(ir::Tensor::from_vector<float>(DType::f32, {}, {0.0f}));
  const std::string scores = "(Mul (MatMul ?0 (Transpose :perm (0 1 3 2) ?1)) ?2)";
  if (mask == "none")
    b.output(kernel(b, "(MatMul (Softmax :axis -1 " + scores + ") ?3)", {q, k, scale, v}));
  else if (mask == "additive")
    b.output(
        kernel(b, "(MatMul (Softmax :axis -1 (Add " + scores + " ?3)) ?4)", {q, k, scale, m, v}));
  else
    b.output(kernel(b,
                    "(MatMul (Softmax :axis -1 (Where (Less ?0 ?1) ?2 (Mul (MatMul ?3 (Transpose "
                    ":perm (0 1 3 2) ?4)) ?5))) ?6)",
                    {m, zero, minus_inf, q, k, scale, v}));
  return std::move(b).finish();
}

}  // namespace

TEST_CASE("attention with and without a mask") {
  // 67 keys: a whole and a partial block of the CPU's 64 and of CUDA's 32; K's depth 8 and V's
  // width 5 differ; 1 query, 6, 37, and 70: a whole and a partial tile of the CPU's 64 rows (the
  // twin's groups of 4 rows: 1, 4 + 2, 9 groups + 1 and 1 group + 2 end in a group with rows
  // past the last).
  for (const char* mask : {"none", "additive", "causal"}) {
    for (int64_t queries : {1, 6, 37, 70}) {
      INFO("mask " << mask << ", " << queries << " queries");
      ir::Graph g = attention_graph(mask, 3, queries, 67, 8, 5);
      // One stage for the whole kernel (K's transpose folded into its loads), on both targets,
      // where the option allows it.
      codegen::KernelPlan plan = codegen::make_plan(g);
      CHECK(plan.stages.size() == 1);
      CHECK(codegen::print_kernels(plan, codegen::Target::Cpu).find("attention MatMul") !=
            std::string::npos);
      CHECK(codegen::print_kernels(plan, codegen::Target::Cuda).find("attention MatMul") !=
            std::string::npos);
      codegen::PlanOptions separate;
      separate.attention_stages = false;
      CHECK(codegen::print_kernels(codegen::make_plan(g, separate), codegen::Target::Cpu)
                .find("attention") == std::string::npos);
      std::vector<std::vector<int64_t>> dims = {
          {2, 3, queries, 8}, {2, 3, 67, 8}, {2, 3, 67, 5}, {queries, 67}};
      for_each_vector_width([&] { check_twin(g, dims); });
      check_twin(g, dims, separate);
    }
  }
  // Rows whose first block of 64 keys is all masked (-inf) and whose last 3 keys are not: the
  // running maximum is -inf over a whole block, then finite; the other rows are not masked.
  {
    GraphBuilder b;
    const Dim n = Dim::symbol("n");
    ValueId q = b.input("q", DType::f32, {n, Dim(2), Dim(6), Dim(8)});
    ValueId k = b.input("k", DType::f32, {n, Dim(2), Dim(67), Dim(8)});
    ValueId v = b.input("v", DType::f32, {n, Dim(2), Dim(67), Dim(5)});
    std::vector<float> masked(6 * 67, 0.0f);
    for (int64_t row = 0; row < 6; row += 2)
      for (int64_t key = 0; key < 64; ++key)
        masked[size_t(row * 67 + key)] = -std::numeric_limits<float>::infinity();
    ValueId m = b.weight("mask", ir::Tensor::from_vector<float>(DType::f32, {6, 67}, masked));
    ValueId scale = b.constant(ir::Tensor::from_vector<float>(DType::f32, {}, {0.35f}));
    b.output(kernel(b,
                    "(MatMul (Softmax :axis -1 (Add (Mul (MatMul ?0 (Transpose :perm (0 1 3 2) "
                    "?1)) ?2) ?3)) ?4)",
                    {q, k, scale, m, v}));
    ir::Graph g = std::move(b).finish();
    REQUIRE(codegen::make_plan(g).stages.size() == 1);
    for_each_vector_width([&] { check_twin(g, {{2, 2, 6, 8}, {2, 2, 67, 8}, {2, 2, 67, 5}}); });
  }
  // V's rows of 40, padded to 48: the twin's sums in one chunk of 3 vectors of 16 or 6 of 8, or
  // at 16 bytes two chunks of 6 vectors of 4, over three blocks of keys, the last of 2.
  ir::Graph wide = attention_graph("additive", 2, 37, 130, 16, 40);
  for_each_vector_width([&] {
    check_twin(wide, {{2, 2, 37, 16}, {2, 2, 130, 16}, {2, 2, 130, 40}, {37, 130}});
  });
}

TEST_CASE("CUDA attention on tensor cores at 16 bits: masks, partial tiles, padded heads") {
  // Under --precision, CUDA attention multiplies on tensor cores (mma.sync m16n8k16; the
  // emulator computes it from PTX's fragment layouts): items of 128 query rows, blocks of 64
  // keys, depths and widths padded to steps of 16. 37 queries leave warps idle; 150 are a whole
  // and a partial item; 67 and 130 keys end in partial blocks (of 3 and 2); depth 8 and width 5
  // pad to 16, depth 40 and width 24 to 48 and 32.
  struct Shape {
    int64_t queries, keys, depth, width;
  };
  for (Shape shape : {Shape{37, 67, 8, 5}, Shape{150, 130, 40, 24}}) {
    for (const char* mask : {"none", "additive", "causal"}) {
      INFO("mask " << mask << ", " << shape.queries << " queries, " << shape.keys << " keys");
      ir::Graph g = attention_graph(mask, 2, shape.queries, shape.keys, shape.depth, shape.width);
      CHECK(codegen::print_kernels(codegen::make_plan(g), codegen::Target::Cuda).find("eqf_mma_") ==
            std::string::npos);  // f32: CUDA cores
      std::vector<ir::Tensor> inputs = {random_tensor({2, 2, shape.queries, shape.depth}, 1),
                                        random_tensor({2, 2, shape.keys, shape.depth}, 2),
                                        random_tensor({2, 2, shape.keys, shape.width}, 3),
                                        random_tensor({shape.queries, shape.keys}, 4)};
      for (DType precision : {DType::bf16, DType::f16}) {
        codegen::PlanOptions options;
        options.precision = precision;
        codegen::KernelPlan plan = codegen::make_plan(g, options);
        const std::string mma = "eqf_mma_" + std::string(ir::dtype_name(precision)) + "(";
        CHECK(codegen::print_kernels(plan, codegen::Target::Cuda).find(mma) != std::string::npos);
        // Against the twin at the same precision (f32 arithmetic on the f32 inputs): Q, K, V
        // and P are rounded to 16 bits on the tensor cores, within the precision's tolerance.
        std::vector<ir::Tensor> want =
            codegen::CpuModule::build(g, nullptr, {}, options)->run(inputs);
        std::vector<ir::Tensor> got = testing::run_cuda_emulated(g, inputs, options);
        auto [rtol, atol] = codegen::precision_tolerance(precision);
        frontend::Comparison c = frontend::compare_tensors(got[0], want[0], rtol, atol);
        INFO(ir::dtype_name(precision) << ": " << c.str());
        CHECK(c.match);
      }
    }
  }
}

TEST_CASE("CUDA attention on tensor cores: no batch dims, a stored scale of one element") {
  // One item of 37 query rows and a scale read from a buffer: the item's index is the kernel's
  // loop counter `i`, which the fragment loops must not shadow.
  GraphBuilder b;
  ValueId q = b.input("q", DType::f32, {Dim(37), Dim(8)});
  ValueId k = b.input("k", DType::f32, {Dim(67), Dim(8)});
  ValueId v = b.input("v", DType::f32, {Dim(67), Dim(5)});
  ValueId scale = b.weight("scale", ir::Tensor::from_vector<float>(DType::f32, {1}, {0.35f}));
  b.output(kernel(b, "(MatMul (Softmax :axis -1 (Mul (MatMul ?0 (Transpose ?1)) ?2)) ?3)",
                  {q, k, scale, v}));
  ir::Graph g = std::move(b).finish();
  std::vector<ir::Tensor> inputs = {random_tensor({37, 8}, 1), random_tensor({67, 8}, 2),
                                    random_tensor({67, 5}, 3)};
  codegen::PlanOptions options;
  options.precision = DType::f16;
  const std::string cuda =
      codegen::print_kernels(codegen::make_plan(g, options), codegen::Target::Cuda);
  CHECK(cuda.find("eqf_mma_f16(") != std::string::npos);
  std::vector<ir::Tensor> want = codegen::CpuModule::build(g, nullptr, {}, options)->run(inputs);
  std::vector<ir::Tensor> got = testing::run_cuda_emulated(g, inputs, options);
  auto [rtol, atol] = codegen::precision_tolerance(DType::f16);
  frontend::Comparison c = frontend::compare_tensors(got[0], want[0], rtol, atol);
  INFO(c.str());
  CHECK(c.match);
}

TEST_CASE("attention reads heads split out of the projections through their index maps") {
  // Q, K and V are (n, 13, 8) projections split into 2 heads of 4 by Reshape and Transpose, as
  // the shared transformers write it: the attention stage reads them where they lie.
  GraphBuilder b;
  std::vector<ValueId> qkv;
  for (const char* name : {"q", "k", "v"})
    qkv.push_back(b.input(name, DType::f32, {Dim::symbol("n"), Dim(13), Dim(8)}));
  const std::string heads = "(Transpose :perm (0 2 1 3) (Reshape :shape (0 0 2 4) ?";
  b.output(kernel(b,
                  "(MatMul (Softmax :axis -1 (MatMul " + heads + "0)) (Transpose :perm (0 2 3 1) " +
                      "(Reshape :shape (0 0 2 4) ?1)))) " + heads + "2)))",
                  qkv));
  ir::Graph g = std::move(b).finish();
  CHECK(codegen::make_plan(g).stages.size() == 1);
  check_twin(g, {{3, 13, 8}, {3, 13, 8}, {3, 13, 8}});
}

TEST_CASE("an attention stage forms only where S stays inside it") {
  // In one kernel, S = Q·K is also read by another MatMul: S is stored, and the Softmax and both
  // products by S are stages of their own.
  GraphBuilder b;
  ValueId q = b.input("q", DType::f32, {Dim(2), Dim(7), Dim(4)});
  ValueId k = b.input("k", DType::f32, {Dim(2), Dim(4), Dim(9)});
  ValueId v = b.input("v", DType::f32, {Dim(2), Dim(9), Dim(3)});
  ValueId w = b.input("w", DType::f32, {Dim(2), Dim(9), Dim(3)});
  b.output(kernel(b,
                  "(Add (MatMul (Softmax :axis -1 (MatMul ?0 ?1)) ?2) (MatMul (MatMul ?0 ?1) ?3))",
                  {q, k, v, w}));
  ir::Graph g = std::move(b).finish();
  CHECK(codegen::print_kernels(codegen::make_plan(g), codegen::Target::Cpu).find("attention") ==
        std::string::npos);
  check_twin(g, {{2, 7, 4}, {2, 4, 9}, {2, 9, 3}, {2, 9, 3}});
}

TEST_CASE("attention computes its operands' pointwise prologues as it loads them") {
  // Q scaled by a constant (as the exports scale it before Q.K), K shifted by a broadcast bias
  // under a folded transpose, V through a Relu: one attention stage, each operand computed where
  // the stage loads it, on both targets, at f32 and on tensor cores at 16 bits.
  GraphBuilder b;
  const Dim n = Dim::symbol("n");
  ValueId q = b.input("q", DType::f32, {n, Dim(3), Dim(37), Dim(8)});
  ValueId k = b.input("k", DType::f32, {n, Dim(3), Dim(8), Dim(67)});
  ValueId v = b.input("v", DType::f32, {n, Dim(3), Dim(67), Dim(5)});
  ValueId scale = b.constant(ir::Tensor::from_vector<float>(DType::f32, {}, {2.83f}));
  ValueId kb = b.weight("kb", random_tensor({8, 1}, 7));
  b.output(kernel(b,
                  "(MatMul (Softmax :axis -1 (MatMul (Div ?0 ?1) (Transpose :perm (0 1 3 2) "
                  "(Transpose :perm (0 1 3 2) (Add ?2 ?3))))) (Relu ?4))",
                  {q, scale, k, kb, v}));
  ir::Graph g = std::move(b).finish();
  codegen::KernelPlan plan = codegen::make_plan(g);
  REQUIRE(plan.stages.size() == 1);
  CHECK(plan.stages[0].kind == codegen::StageKind::Attention);
  const std::vector<std::vector<int64_t>> dims = {{2, 3, 37, 8}, {2, 3, 8, 67}, {2, 3, 67, 5}};
  check_twin(g, dims);
  std::vector<ir::Tensor> inputs = {random_tensor(dims[0], 1), random_tensor(dims[1], 2),
                                    random_tensor(dims[2], 3)};
  for (DType precision : {DType::bf16, DType::f16}) {
    codegen::PlanOptions options;
    options.precision = precision;
    std::vector<ir::Tensor> want = codegen::CpuModule::build(g, nullptr, {}, options)->run(inputs);
    std::vector<ir::Tensor> got = testing::run_cuda_emulated(g, inputs, options);
    auto [rtol, atol] = codegen::precision_tolerance(precision);
    frontend::Comparison c = frontend::compare_tensors(got[0], want[0], rtol, atol);
    INFO(ir::dtype_name(precision) << ": " << c.str());
    CHECK(c.match);
  }
}

TEST_CASE("2-D pooling in rows: chunks of a long row, strides, dilations, padding") {
  // The twin pools a row at a time in chunks of 64 outputs (body_pool_rows): rows of 150 and 75
  // outputs end in partial chunks; windows cross the padding on both sides, by stride 2 and
  // dilation 2, with ceil_mode; averages count the padding or not.
  GraphBuilder b;
  auto ints = [](std::vector<int64_t> v) { return ir::AttrValue(std::move(v)); };
  ValueId x = b.input("x", DType::f32, {Dim::symbol("n"), Dim(3), Dim(7), Dim(149)});
  b.output(b.op("MaxPool", {x}, {{"kernel_shape", ints({3, 3})}, {"pads", ints({1, 1, 1, 2})}}));
  b.output(b.op("MaxPool", {x},
                {{"kernel_shape", ints({2, 3})},
                 {"strides", ints({2, 2})},
                 {"dilations", ints({1, 2})},
                 {"pads", ints({0, 2, 1, 1})},
                 {"ceil_mode", int64_t{1}}}));
  b.output(b.op("AveragePool", {x},
                {{"kernel_shape", ints({3, 4})},
                 {"strides", ints({1, 2})},
                 {"pads", ints({1, 3, 1, 2})},
                 {"count_include_pad", int64_t{1}}}));
  b.output(b.op("AveragePool", {x},
                {{"kernel_shape", ints({3, 4})},
                 {"strides", ints({1, 2})},
                 {"pads", ints({1, 3, 1, 2})},
                 {"ceil_mode", int64_t{1}}}));
  ir::Graph g = std::move(b).finish();
  for (int64_t n : {1, 2}) check_twin(g, {{n, 3, 7, 149}});
}

TEST_CASE("convolution with bias and relu, pooling") {
  GraphBuilder b;
  ValueId x = b.input("x", DType::f32, {Dim::symbol("n"), Dim(3), Dim(9), Dim(7)});
  ValueId w = b.input("w", DType::f32, {Dim(4), Dim(3), Dim(3), Dim(3)});
  ValueId bias = b.input("b", DType::f32, {Dim(4)});
  ValueId dw = b.input("dw", DType::f32, {Dim(4), Dim(1), Dim(3), Dim(3)});
  ValueId c =
      kernel(b,
             "(Relu (Conv :auto_pad \"NOTSET\" :dilations (1 1) :group 1 :kernel_shape (3 3) "
             ":pads (1 1 1 1) :strides (2 1) ?0 ?1 ?2))",
             {x, w, bias});
  ValueId d =
      b.op("Conv", {c, dw}, {{"group", int64_t{4}}, {"pads", std::vector<int64_t>{1, 1, 1, 1}}});
  b.output(b.op("MaxPool", {d},
                {{"kernel_shape", std::vector<int64_t>{3, 2}},
                 {"strides", std::vector<int64_t>{2, 2}},
                 {"pads", std::vector<int64_t>{1, 0, 1, 1}}}));
  b.output(b.op("AveragePool", {d},
                {{"kernel_shape", std::vector<int64_t>{2, 3}},
                 {"pads", std::vector<int64_t>{1, 1, 0, 1}},
                 {"count_include_pad", int64_t{1}}}));
  b.output(b.op("GlobalAveragePool", {d}));
  // A 1-D convolution (the element form, as on CUDA) with its Tanh computed where it stores.
  ValueId s = b.input("s", DType::f32, {Dim::symbol("n"), Dim(2), Dim(10)});
  ValueId sw = b.input("sw", DType::f32, {Dim(3), Dim(2), Dim(3)});
  b.output(b.op("Tanh", {b.op("Conv", {s, sw}, {{"pads", std::vector<int64_t>{1, 1}}})}));
  ir::Graph g = std::move(b).finish();
  CHECK(codegen::print_kernels(codegen::make_plan(g), codegen::Target::Cpu)
            .find("'s epilogue Tanh") != std::string::npos);
  for (int64_t n : {1, 3})
    check_twin(g, {{n, 3, 9, 7}, {4, 3, 3, 3}, {4}, {4, 1, 3, 3}, {n, 2, 10}, {3, 2, 3}});
}

TEST_CASE("convolution tiles: inside and edge tiles, strides, dilations, groups") {
  // Rows of 29 outputs: the twin's tiles of 8 are an edge tile (padding), two inside tiles and a
  // short edge tile; output channels per group of 8, 3 and 2 take blocks of 4, 1 and 2.
  GraphBuilder b;
  auto ints = [](std::vector<int64_t> v) { return ir::AttrValue(std::move(v)); };
  ValueId x = b.input("x", DType::f32, {Dim::symbol("n"), Dim(6), Dim(13), Dim(29)});
  ValueId w8 = b.input("w8", DType::f32, {Dim(8), Dim(6), Dim(3), Dim(3)});
  ValueId b8 = b.input("b8", DType::f32, {Dim(8)});
  ValueId w6 = b.input("w6", DType::f32, {Dim(6), Dim(3), Dim(3), Dim(5)});
  ValueId w4 = b.input("w4", DType::f32, {Dim(4), Dim(3), Dim(3), Dim(3)});
  ValueId w1 = b.input("w1", DType::f32, {Dim(4), Dim(6), Dim(1), Dim(1)});
  ValueId wd = b.input("wd", DType::f32, {Dim(6), Dim(1), Dim(3), Dim(3)});
  b.output(b.op("Relu", {b.op("Conv", {x, w8, b8}, {{"pads", ints({1, 1, 1, 1})}})}));
  b.output(b.op("Conv", {x, w6},
                {{"group", int64_t{2}},
                 {"strides", ints({2, 3})},
                 {"dilations", ints({1, 2})},
                 {"pads", ints({0, 2, 1, 3})}}));
  b.output(b.op("Conv", {x, w4},
                {{"group", int64_t{2}}, {"strides", ints({1, 2})}, {"pads", ints({2, 0, 0, 1})}}));
  b.output(b.op("Conv", {x, w1}));
  b.output(
      b.op("Conv", {x, wd},
           {{"group", int64_t{6}}, {"dilations", ints({2, 2})}, {"pads", ints({2, 2, 2, 2})}}));
  ir::Graph g = std::move(b).finish();
  for_each_vector_width([&] {
    for (int64_t n : {1, 2})
      check_twin(g, {{n, 6, 13, 29},
                     {8, 6, 3, 3},
                     {8},
                     {6, 3, 3, 5},
                     {4, 3, 3, 3},
                     {4, 6, 1, 1},
                     {6, 1, 3, 3}});
  });
  // Sums of 72 products: under AVX-512 the twin's steps take several vectors of a row. A row of
  // 45 in 64-byte vectors, 12 channels in blocks of 4: three vectors in one step, with a residual
  // epilogue. A row of 37 in 32-byte vectors (fewer idle lanes), 8 channels: steps of two (an
  // edge step, an inside one), then a last short vector.
  GraphBuilder wide;
  ValueId wx = wide.input("x", DType::f32, {Dim::symbol("n"), Dim(8), Dim(5), Dim(45)});
  ValueId ww = wide.input("w", DType::f32, {Dim(12), Dim(8), Dim(3), Dim(3)});
  ValueId wr = wide.input("r", DType::f32, {Dim::symbol("n"), Dim(12), Dim(5), Dim(45)});
  ValueId vx = wide.input("v", DType::f32, {Dim::symbol("n"), Dim(8), Dim(4), Dim(37)});
  ValueId vw = wide.input("vw", DType::f32, {Dim(8), Dim(8), Dim(3), Dim(3)});
  ValueId vb = wide.input("vb", DType::f32, {Dim(8)});
  wide.output(wide.op(
      "Relu", {wide.op("Add", {wide.op("Conv", {wx, ww}, {{"pads", ints({1, 1, 1, 1})}}), wr})}));
  wide.output(wide.op("Sigmoid", {wide.op("Conv", {vx, vw, vb}, {{"pads", ints({1, 1, 1, 1})}})}));
  ir::Graph wg = std::move(wide).finish();
  for_each_vector_width([&] {
    for (int64_t n : {1, 2})
      check_twin(wg,
                 {{n, 8, 5, 45}, {12, 8, 3, 3}, {n, 12, 5, 45}, {n, 8, 4, 37}, {8, 8, 3, 3}, {8}});
  });
  // At a column stride of 2 the twin loads two vectors of the row and keeps their even elements,
  // through masks at the row's edges. Rows of 75 inputs make 38 outputs (3x3, pads 1): an edge
  // step, inside steps and a short last one, whose whole loads end one element before the row
  // does; a 7x7 filter at pads 3 over rows of 61 (31 outputs) has edge steps at both ends.
  GraphBuilder strided;
  ValueId sx = strided.input("x", DType::f32, {Dim::symbol("n"), Dim(8), Dim(7), Dim(75)});
  ValueId sw3 = strided.input("w3", DType::f32, {Dim(8), Dim(8), Dim(3), Dim(3)});
  ValueId tx = strided.input("t", DType::f32, {Dim::symbol("n"), Dim(3), Dim(9), Dim(61)});
  ValueId sw7 = strided.input("w7", DType::f32, {Dim(16), Dim(3), Dim(7), Dim(7)});
  ValueId sb7 = strided.input("b7", DType::f32, {Dim(16)});
  strided.output(strided.op(
      "Relu",
      {strided.op("Conv", {sx, sw3}, {{"pads", ints({1, 1, 1, 1})}, {"strides", ints({2, 2})}})}));
  strided.output(strided.op("Conv", {tx, sw7, sb7},
                            {{"pads", ints({3, 3, 3, 3})}, {"strides", ints({2, 2})}}));
  ir::Graph sg = std::move(strided).finish();
  for_each_vector_width([&] {
    for (int64_t n : {1, 2})
      check_twin(sg, {{n, 8, 7, 75}, {8, 8, 3, 3}, {n, 3, 9, 61}, {16, 3, 7, 7}, {16}});
  });
  // A 1x1 convolution at stride 1 without padding takes its image as one row, in items of 512
  // pixels: 23 x 29 = 667 pixels make a whole item and one of 155 (with a bias and a residual);
  // at a run-time height and width, 3 x 5 and 20 x 30 (two items, the second of 88).
  GraphBuilder pointwise;
  ValueId px = pointwise.input("x", DType::f32, {Dim::symbol("n"), Dim(8), Dim(23), Dim(29)});
  ValueId pw = pointwise.input("w", DType::f32, {Dim(12), Dim(8), Dim(1), Dim(1)});
  ValueId pb = pointwise.input("b", DType::f32, {Dim(12)});
  ValueId pr = pointwise.input("r", DType::f32, {Dim::symbol("n"), Dim(12), Dim(23), Dim(29)});
  ValueId hx = pointwise.input("h", DType::f32,
                               {Dim::symbol("n"), Dim(4), Dim::symbol("hh"), Dim::symbol("ww")});
  ValueId hw = pointwise.input("hw", DType::f32, {Dim(8), Dim(4), Dim(1), Dim(1)});
  pointwise.output(pointwise.op("Add", {pointwise.op("Conv", {px, pw, pb}), pr}));
  pointwise.output(pointwise.op("Relu", {pointwise.op("Conv", {hx, hw})}));
  ir::Graph pg = std::move(pointwise).finish();
  {
    // Its store loop splits a pixel into row and column by division; the residual, of the
    // output's shape, is read at the store's own index, not at those coordinates recombined.
    const std::string cpu = codegen::print_kernels(codegen::make_plan(pg), codegen::Target::Cpu);
    CHECK(cpu.find(" % 29)") == std::string::npos);
  }
  for_each_vector_width([&] {
    for (std::vector<int64_t> hw_dims : {std::vector<int64_t>{3, 5}, std::vector<int64_t>{20, 30}})
      check_twin(pg, {{2, 8, 23, 29},
                      {12, 8, 1, 1},
                      {12},
                      {2, 12, 23, 29},
                      {2, 4, hw_dims[0], hw_dims[1]},
                      {8, 4, 1, 1}});
  });
}

TEST_CASE("convolution channel tiles: weights in blocks of 16 channels, padded taps left out") {
  // Convolutions whose weights are the model's (and sum at least 256 products an output) read
  // them in blocks of 16 output channels in the twin, a vector of channels per pixel. Rows of 7
  // (one chunk under AVX-512, two or four in narrower vectors, whose middle ones share a loop),
  // with a bias and a ReLU; rows of 40 by a 3x5 filter (a loop over middle chunks between two
  // edge chunks; 3x3 at stride 1 would be Winograd's), one block, a residual; strides, dilations
  // and uneven pads; a 7x7 filter at stride 2; 3x1 and 1x3 filters; SAME_UPPER at stride 2 on an
  // even width (its extra pad at the end); no padding, its last chunk partial; a weight that
  // another convolution and another op read too. Over 32 rows, an item takes several blocks:
  // 4 of 64 channels (rows of 9 in two chunks under AVX-512, one block at a time in narrower
  // vectors) with a bias and a residual, and 3 of 48 channels with uneven pads.
  GraphBuilder b;
  auto ints = [](std::vector<int64_t> v) { return ir::AttrValue(std::move(v)); };
  ValueId x7 = b.input("x7", DType::f32, {Dim::symbol("n"), Dim(29), Dim(7), Dim(7)});
  ValueId x40 = b.input("x40", DType::f32, {Dim::symbol("n"), Dim(29), Dim(5), Dim(40)});
  ValueId r40 = b.input("r40", DType::f32, {Dim::symbol("n"), Dim(16), Dim(5), Dim(40)});
  ValueId x23 = b.input("x23", DType::f32, {Dim::symbol("n"), Dim(29), Dim(11), Dim(23)});
  ValueId x61 = b.input("x61", DType::f32, {Dim::symbol("n"), Dim(6), Dim(9), Dim(61)});
  ValueId x16 = b.input("x16", DType::f32, {Dim::symbol("n"), Dim(90), Dim(8), Dim(16)});
  ValueId x32 = b.input("x32", DType::f32, {Dim::symbol("n"), Dim(29), Dim(32), Dim(9)});
  ValueId r32 = b.input("r32", DType::f32, {Dim::symbol("n"), Dim(64), Dim(32), Dim(9)});
  ValueId w7 = b.weight("w7", random_tensor({32, 29, 3, 3}, 21));
  ValueId b7 = b.weight("b7", random_tensor({32}, 22));
  ValueId w40 = b.weight("w40", random_tensor({16, 29, 3, 5}, 23));
  ValueId w23 = b.weight("w23", random_tensor({16, 29, 5, 3}, 24));
  ValueId w61 = b.weight("w61", random_tensor({48, 6, 7, 7}, 25));
  ValueId b61 = b.weight("b61", random_tensor({48}, 26));
  ValueId w31 = b.weight("w31", random_tensor({16, 90, 3, 1}, 27));
  ValueId w13 = b.weight("w13", random_tensor({32, 90, 1, 3}, 28));
  ValueId w64 = b.weight("w64", random_tensor({64, 29, 3, 3}, 30));
  ValueId b64 = b.weight("b64", random_tensor({64}, 31));
  ValueId w48 = b.weight("w48", random_tensor({48, 29, 3, 3}, 32));
  b.output(b.op("Relu", {b.op("Conv", {x7, w7, b7}, {{"pads", ints({1, 1, 1, 1})}})}));
  b.output(b.op("Add", {b.op("Conv", {x40, w40}, {{"pads", ints({1, 2, 1, 2})}}), r40}));
  b.output(
      b.op("Conv", {x23, w23},
           {{"strides", ints({2, 3})}, {"dilations", ints({2, 1})}, {"pads", ints({1, 2, 0, 1})}}));
  b.output(
      b.op("Conv", {x61, w61, b61}, {{"pads", ints({3, 3, 3, 3})}, {"strides", ints({2, 2})}}));
  b.output(b.op("Conv", {x16, w31}, {{"pads", ints({1, 0, 1, 0})}}));
  b.output(
      b.op("Conv", {x16, w13},
           {{"auto_pad", ir::AttrValue(std::string("SAME_UPPER"))}, {"strides", ints({2, 2})}}));
  b.output(b.op("Conv", {x23, w40}));  // unpadded: a last chunk that is partial, all inside
  b.output(b.op("Sigmoid", {w40}));
  b.output(b.op("Add", {b.op("Conv", {x32, w64, b64}, {{"pads", ints({1, 1, 1, 1})}}), r32}));
  b.output(b.op("Conv", {x32, w48}, {{"pads", ints({1, 0, 1, 2})}}));
  ir::Graph g = std::move(b).finish();
  codegen::PlanOptions twin;
  twin.weight_blocks = true;
  const codegen::KernelPlan plan = codegen::make_plan(g, twin);
  const std::string cpu = codegen::print_kernels(plan, codegen::Target::Cpu);
  CHECK(occurrences(cpu, "const float* wb = ") == 9);
  // The first channel of an item: of 4 blocks (w64), of 3 (w48), of 1 (the other seven).
  auto items_of = [&](int64_t channels) {
    const std::regex first(R"(const int64_t m0 = (i\d+|0) \* )" + std::to_string(channels) + ";");
    return std::distance(std::sregex_iterator(cpu.begin(), cpu.end(), first),
                         std::sregex_iterator());
  };
  CHECK(items_of(64) == 1);
  CHECK(items_of(48) == 1);
  CHECK(items_of(16) == 7);
  CHECK(occurrences(codegen::print_kernels(codegen::make_plan(g), codegen::Target::Cpu),
                    "const float* wb = ") == 0);
  // The blob holds the blocks instead of the weights, but w40, which Sigmoid reads too.
  std::set<std::string> weights;
  for (ValueId v : plan.weights) weights.insert(plan.graph.value(v).name);
  CHECK(weights.count("w40"));
  CHECK(!weights.count("w7"));
  CHECK(weights.count("w7_blocks"));
  CHECK(std::count_if(weights.begin(), weights.end(), [](const std::string& name) {
          return name.rfind("w40_blocks", 0) == 0;
        }) == 1);  // two convolutions read w40: one copy
  // A structure-only model's weights (external data absent: the bench seeds them) have no
  // data to make blocks from: that convolution keeps the other tiles.
  ir::Graph seeded = g;
  seeded.value(w7).data = nullptr;
  ir::ExternalData absent;
  absent.file = "/nonexistent/weights.bin";
  seeded.value(w7).external = absent;
  const codegen::KernelPlan seeded_plan = codegen::make_plan(seeded, twin);
  CHECK(occurrences(codegen::print_kernels(seeded_plan, codegen::Target::Cpu),
                    "const float* wb = ") == 8);
  // A convolution of its own weights (Conv(w, w)) keeps them: it reads them as its input too.
  GraphBuilder own;
  ValueId x0 = own.input("x0", DType::f32, {Dim(1)});
  ValueId ww = own.weight("ww", random_tensor({16, 16, 4, 4}, 29));
  own.output(own.op("Add", {own.op("Conv", {ww, ww}, {{"pads", ints({1, 1, 2, 2})}}), x0}));
  ir::Graph og = std::move(own).finish();
  CHECK(occurrences(codegen::print_kernels(codegen::make_plan(og, twin), codegen::Target::Cpu),
                    "const float* wb = ") == 0);
  check_twin(og, {{1}});
  // CUDA prints no plan with blocks (it would read the weights, which the blob lacks).
  CHECK_THROWS_WITH(codegen::print_kernels(plan, codegen::Target::Cuda),
                    Catch::Contains("only the C++ twin"));
  for_each_vector_width([&] {
    for (int64_t n : {1, 2})
      check_twin(g, {{n, 29, 7, 7},
                     {n, 29, 5, 40},
                     {n, 16, 5, 40},
                     {n, 29, 11, 23},
                     {n, 6, 9, 61},
                     {n, 90, 8, 16},
                     {n, 29, 32, 9},
                     {n, 64, 32, 9}});
  });
}

TEST_CASE("1x1 convolutions as products of their pixels by W^T's panels") {
  // A 1x1 convolution without padding, its output channels whole panels, over at least 256
  // input channels (64 at a stride), is a product of its pixels (rows) by W^T's panels (columns)
  // in the twin: 7x7 pixels with a bias and a ReLU (49 rows: blocks of 4, the last of 1);
  // stride 2 over 96 channels of 13 x 11 (7 x 6 pixels, each reading input pixel (2 oh, 2 ow))
  // with a residual; 512 x 512 weights (1 MiB: items panel by panel) over 3 x 5 pixels at
  // stride (1, 2). Not taken: 48 output channels, 64 input channels at stride 1, 32 at a stride,
  // padding. A MatMul over 1 MiB of weights goes panel by panel too, its last panel of 8 columns.
  GraphBuilder b;
  auto ints = [](std::vector<int64_t> v) { return ir::AttrValue(std::move(v)); };
  const Dim n = Dim::symbol("n");
  ValueId x7 = b.input("x7", DType::f32, {n, Dim(256), Dim(7), Dim(7)});
  ValueId x13 = b.input("x13", DType::f32, {n, Dim(96), Dim(13), Dim(11)});
  ValueId r13 = b.input("r13", DType::f32, {n, Dim(64), Dim(7), Dim(6)});
  ValueId x3 = b.input("x3", DType::f32, {n, Dim(512), Dim(3), Dim(9)});
  ValueId xm = b.input("xm", DType::f32, {n, Dim(5), Dim(512)});
  ValueId x32 = b.input("x32", DType::f32, {n, Dim(32), Dim(5), Dim(3)});
  ValueId w7 = b.weight("w7", random_tensor({128, 256, 1, 1}, 41));
  ValueId b7 = b.weight("b7", random_tensor({128}, 42));
  ValueId w13 = b.weight("w13", random_tensor({64, 96, 1, 1}, 43));
  ValueId w512 = b.weight("w512", random_tensor({512, 512, 1, 1}, 44));
  ValueId w48 = b.weight("w48", random_tensor({48, 256, 1, 1}, 45));
  ValueId w64 = b.weight("w64", random_tensor({64, 64, 1, 1}, 48));
  ValueId w32 = b.weight("w32", random_tensor({64, 32, 1, 1}, 46));
  ValueId wm = b.weight("wm", random_tensor({512, 520}, 47));
  b.output(b.op("Relu", {b.op("Conv", {x7, w7, b7})}));
  b.output(b.op("Add", {b.op("Conv", {x13, w13}, {{"strides", ints({2, 2})}}), r13}));
  b.output(b.op("Conv", {x3, w512}, {{"strides", ints({1, 2})}}));
  b.output(b.op("Conv", {x7, w48}));
  b.output(b.op("Conv", {x32, w32}, {{"strides", ints({2, 2})}}));
  b.output(b.op("Conv", {r13, w64}));
  b.output(b.op("Conv", {x13, w13}, {{"pads", ints({1, 1, 1, 1})}}));
  b.output(b.op("MatMul", {xm, wm}));
  ir::Graph g = std::move(b).finish();
  codegen::PlanOptions twin;
  twin.weight_blocks = true;
  const codegen::KernelPlan plan = codegen::make_plan(g, twin);
  std::set<std::string> weights;
  for (ValueId v : plan.weights) weights.insert(plan.graph.value(v).name);
  for (const char* taken : {"w7_panels", "w13_panels", "w512_panels", "wm_panels"})
    CHECK(weights.count(taken));
  for (const char* kept : {"w48", "w32", "w64"}) CHECK(weights.count(kept));
  CHECK(weights.count("w13"));  // the padded convolution reads it as it is
  // W^T's panels: panel p holds output channels 64 p.. for every input channel.
  const ir::Tensor& p7 = plan_weight(plan, "w7_panels");
  CHECK(p7.dims() == std::vector<int64_t>{2, 256, 64});
  const ir::Tensor& w7_data = *g.weight_data(w7);
  for (int64_t m : {0, 5, 63, 64, 127})
    for (int64_t c : {0, 17, 255})
      CHECK(p7.get(((m / 64) * 256 + c) * 64 + m % 64) == w7_data.get(m * 256 + c));
  const std::string cpu = codegen::print_kernels(plan, codegen::Target::Cpu);
  CHECK(occurrences(cpu, "const int64_t nc = i % ") == 3);         // the three products of pixels
  CHECK(occurrences(cpu, "const int64_t nc = i % 32 / 4;") == 1);  // 512 x 512: panel by panel
  CHECK(occurrences(cpu, "const int64_t nc = i / ") == 1);         // the MatMul over wm
  for_each_vector_width([&] {
    for (int64_t batch : {1, 2})
      check_twin(g, {{batch, 256, 7, 7},
                     {batch, 96, 13, 11},
                     {batch, 64, 7, 6},
                     {batch, 512, 3, 9},
                     {batch, 5, 512},
                     {batch, 32, 5, 3}});
  });
}

TEST_CASE("Winograd convolutions: 3x3 at stride 1 in the twin by F(2x2, 3x3) and F(4x4, 3x3)") {
  // 3x3 convolutions at stride 1 over the model's weights, rows at least 10 wide: even and odd
  // output sizes (a last tile with one row or column), pads 1, uneven pads, none, and SAME
  // (LOWER and UPPER); one, two and three blocks of 16 output channels; a bias, a ReLU, a
  // residual, and two convolutions written in place into a Concat; 256 channels over rows of
  // 40, which take an item's scratch in chunks of a row (a ragged last one); a weight that a
  // stride-2 convolution reads too (a copy in each form); at a run-time batch of 1 and 2.
  GraphBuilder b;
  auto ints = [](std::vector<int64_t> v) { return ir::AttrValue(std::move(v)); };
  auto same = [](const char* mode) { return ir::AttrValue(std::string(mode)); };
  ValueId x = b.input("x", DType::f32, {Dim::symbol("n"), Dim(32), Dim(9), Dim(19)});
  ValueId r = b.input("r", DType::f32, {Dim::symbol("n"), Dim(32), Dim(9), Dim(20)});
  ValueId y = b.input("y", DType::f32, {Dim::symbol("n"), Dim(5), Dim(12), Dim(12)});
  ValueId big = b.input("big", DType::f32, {Dim::symbol("n"), Dim(256), Dim(3), Dim(40)});
  ValueId x30 = b.input("x30", DType::f32, {Dim::symbol("n"), Dim(16), Dim(10), Dim(30)});
  ValueId x60 = b.input("x60", DType::f32, {Dim::symbol("n"), Dim(128), Dim(5), Dim(60)});
  // Filters of many channels uniform within +-sqrt(2 / fan-in) (a little under He
  // initialization's scale, as a trained model's are): outputs near 1 rather than 16, so that the
  // test's absolute tolerance means what it does for the others.
  auto he_scaled = [](std::vector<int64_t> dims, uint64_t seed) {
    ir::Tensor t = random_tensor(dims, seed);
    const double scale = std::sqrt(2.0 / double(dims[1] * dims[2] * dims[3]));
    for (int64_t i = 0; i < t.numel(); ++i) t.set(i, t.get(i) * scale);
    return t;
  };
  ValueId w = b.weight("w", random_tensor({32, 32, 3, 3}, 31));
  ValueId bias = b.weight("bias", random_tensor({32}, 32));
  ValueId w48 = b.weight("w48", random_tensor({48, 32, 3, 3}, 33));
  ValueId w5 = b.weight("w5", random_tensor({16, 5, 3, 3}, 34));
  ValueId wbig = b.weight("wbig", he_scaled({16, 256, 3, 3}, 35));
  ValueId w30 = b.weight("w30", he_scaled({16, 16, 3, 3}, 36));
  ValueId b30 = b.weight("b30", random_tensor({16}, 37));
  ValueId w60 = b.weight("w60", he_scaled({32, 128, 3, 3}, 38));
  ValueId pads1 = b.op("Conv", {x, w, bias}, {{"pads", ints({1, 1, 1, 1})}});
  b.output(b.op("Relu", {pads1}));  // 9 x 19: odd both ways
  b.output(b.op("Add", {b.op("Conv", {x, w}, {{"pads", ints({0, 2, 2, 1})}}), r}));  // 9 x 20
  b.output(b.op("Conv", {x, w48}));  // unpadded: 7 x 17
  b.output(b.op("Conv", {x, w48}, {{"auto_pad", same("SAME_LOWER")}}));
  b.output(b.op("Concat",
                {b.op("Relu", {b.op("Conv", {y, w5}, {{"auto_pad", same("SAME_UPPER")}})}),
                 b.op("Conv", {y, w5}, {{"pads", ints({1, 1, 1, 1})}})},
                {{"axis", int64_t{1}}}));
  b.output(b.op("Conv", {big, wbig}, {{"pads", ints({1, 1, 1, 1})}}));
  b.output(b.op("Conv", {x, w}, {{"pads", ints({1, 1, 1, 1})}, {"strides", ints({2, 2})}}));
  // Rows of 28 outputs or more take 4x4 tiles: 10 x 30 (a last tile row of 2, a last tile of 2
  // columns), with a bias and a Tanh; 128 channels over rows of 60 (chunks of 8 tiles of 15).
  b.output(b.op("Tanh", {b.op("Conv", {x30, w30, b30}, {{"pads", ints({1, 1, 1, 1})}})}));
  b.output(b.op("Conv", {x60, w60}, {{"pads", ints({1, 1, 1, 1})}}));
  ir::Graph g = std::move(b).finish();
  codegen::PlanOptions twin;
  twin.weight_blocks = true;
  const codegen::KernelPlan plan = codegen::make_plan(g, twin);
  std::map<int, int> tiles;  // convolutions by Stage::winograd
  int channels = 0;
  for (const codegen::Stage& s : plan.stages) {
    if (s.kind != codegen::StageKind::Conv) continue;
    ++tiles[s.winograd];
    channels += s.weight_blocks && !s.winograd;
  }
  CHECK(tiles == std::map<int, int>{{0, 1}, {2, 7}, {4, 2}});  // all but the stride-2 one
  CHECK(channels == 1);
  std::set<std::string> weights;
  for (ValueId v : plan.weights) weights.insert(plan.graph.value(v).name);
  CHECK(weights == std::set<std::string>{"bias", "w_winograd2", "w_blocks", "w48_winograd2",
                                         "w5_winograd2", "wbig_winograd2", "w30_winograd4", "b30",
                                         "w60_winograd4"});
  const std::string cpu = codegen::print_kernels(plan, codegen::Target::Cpu);
  CHECK(occurrences(cpu, "const int64_t t_first = ") == 9);
  // The scratch of 256 channels holds 8 tiles of a row's 20: three chunks of 7; of 128 channels
  // at 4x4 tiles, 8 of 15: two chunks of 8.
  CHECK(occurrences(cpu, "const int64_t t_first = 0 * ") == 7);  // a row an item
  CHECK(occurrences(cpu, " * 7;  // the item's first tile") == 1);
  CHECK(occurrences(cpu, " * 8;  // the item's first tile") == 2);  // 10 x 30's row of 8 too
  for_each_vector_width([&] {
    for (int64_t n : {1, 2})
      check_twin(g, {{n, 32, 9, 19},
                     {n, 32, 9, 20},
                     {n, 5, 12, 12},
                     {n, 256, 3, 40},
                     {n, 16, 10, 30},
                     {n, 128, 5, 60}});
  });
  // The transformed filters are G g G^T: a filter of one 1 at the centre transforms to the
  // outer product of G's middle column (0, 1/2, -1/2, 0) with itself.
  GraphBuilder one;
  ValueId ox = one.input("x", DType::f32, {Dim(1), Dim(1), Dim(3), Dim(12)});
  ir::Tensor centre(DType::f32, {16, 1, 3, 3});
  for (int64_t m = 0; m < 16; ++m) centre.set(m * 9 + 4, 1.0);
  one.output(one.op("Conv", {ox, one.weight("c", std::move(centre))}));
  const codegen::KernelPlan centred = codegen::make_plan(std::move(one).finish(), twin);
  const ValueId u = *centred.stages.front().weight_blocks;
  const ir::Tensor& blocks = *centred.graph.weight_data(u);
  const float half[4] = {0, 0.5f, -0.5f, 0};
  for (int64_t p = 0; p < 16; ++p)
    for (int64_t m = 0; m < 16; ++m) {
      INFO("place " << p << ", channel " << m);
      CHECK(blocks.get(p * 16 + m) == half[p / 4] * half[p % 4]);
    }
}

TEST_CASE("patch convolutions: windows along W that tile the row, summed along kw in vectors") {
  // A stride along W equal to a kernel width of 16 or 32 and no padding (ViT's patch embedding):
  // rows of 85 make 5 patches (a tile of 4 and a partial one; 5 columns unread), with a bias and
  // an epilogue; groups of 3 channels (blocks of 1), overlapping and dilated rows; 2 channels
  // per group by 2 patches of 32, the second of them partial in tiles of 4.
  GraphBuilder b;
  auto ints = [](std::vector<int64_t> v) { return ir::AttrValue(std::move(v)); };
  ValueId x = b.input("x", DType::f32, {Dim::symbol("n"), Dim(3), Dim(32), Dim(85)});
  ValueId w = b.input("w", DType::f32, {Dim(12), Dim(3), Dim(16), Dim(16)});
  ValueId bias = b.input("bias", DType::f32, {Dim(12)});
  ValueId xg = b.input("xg", DType::f32, {Dim::symbol("n"), Dim(4), Dim(20), Dim(64)});
  ValueId wg = b.input("wg", DType::f32, {Dim(6), Dim(2), Dim(4), Dim(16)});
  ValueId w32 = b.input("w32", DType::f32, {Dim(4), Dim(2), Dim(3), Dim(32)});
  b.output(b.op("Tanh", {b.op("Conv", {x, w, bias}, {{"strides", ints({16, 16})}})}));
  b.output(b.op("Conv", {xg, wg},
                {{"group", int64_t{2}}, {"strides", ints({3, 16})}, {"dilations", ints({2, 1})}}));
  b.output(b.op("Conv", {xg, w32}, {{"group", int64_t{2}}, {"strides", ints({5, 32})}}));
  ir::Graph g = std::move(b).finish();
  const std::string cpu = codegen::print_kernels(codegen::make_plan(g), codegen::Target::Cpu);
  CHECK(occurrences(cpu, "lane_mask __attribute__") == 9);  // 3 stages, 3 vector widths
  for_each_vector_width([&] {
    for (int64_t n : {1, 2})
      check_twin(
          g, {{n, 3, 32, 85}, {12, 3, 16, 16}, {12}, {n, 4, 20, 64}, {6, 2, 4, 16}, {4, 2, 3, 32}});
  });
}

TEST_CASE("auto_pad SAME over a run-time width: its pads at stride 1, refused at stride 2") {
  // SAME's pads depend on the input's size, except at a stride of 1 (the window's extent less
  // one): those are compiled, the others refused by name rather than computed with no padding.
  for (const char* mode : {"SAME_UPPER", "SAME_LOWER"}) {
    INFO(mode);
    GraphBuilder b;
    ValueId x = b.input("x", DType::f32, {Dim(1), Dim(3), Dim(6), Dim::symbol("w")});
    ValueId w = b.input("w", DType::f32, {Dim(8), Dim(3), Dim(3), Dim(4)});
    b.output(b.op("Conv", {x, w}, {{"auto_pad", std::string(mode)}}));
    ir::Graph g = std::move(b).finish();
    for (int64_t width : {5, 20}) check_twin(g, {{1, 3, 6, width}, {8, 3, 3, 4}});
    GraphBuilder strided;
    ValueId sx = strided.input("x", DType::f32, {Dim(1), Dim(3), Dim(6), Dim::symbol("w")});
    ValueId sw = strided.input("w", DType::f32, {Dim(8), Dim(3), Dim(16), Dim(16)});
    strided.output(strided.op("Conv", {sx, sw},
                              {{"auto_pad", std::string(mode)},
                               {"strides", ir::AttrValue(std::vector<int64_t>{1, 16})}}));
    ir::Graph sg = std::move(strided).finish();
    for (codegen::Target t : {codegen::Target::Cpu, codegen::Target::Cuda}) {
      try {
        (void)codegen::print_kernels(codegen::make_plan(sg), t);
        FAIL("a SAME convolution at stride 16 over a run-time width was compiled");
      } catch (const Error& e) {
        CHECK(e.kind() == Error::Kind::Unsupported);
        CHECK(std::string(e.what()).find("auto_pad") != std::string::npos);
      }
    }
  }
}

TEST_CASE("CUDA convolution tiles: each size, channel and k tails, groups, epilogues") {
  // On CUDA a convolution with at least 16 output channels per group is an implicit GEMM in
  // tiles of channels by pixels, k in slices of 16 (printer_conv.cpp, body_conv_gemm), the
  // largest tiles of which there are at least 132: 128x64 or 32x64 for 72 channels (a channel tail
  // in each), 64x64 or 32x64 for 40 and 64, 32x64 alone for 20 per group. k of 180, 20 and 72 end
  // in partial slices.
  GraphBuilder b;
  auto ints = [](std::vector<int64_t> v) { return ir::AttrValue(std::move(v)); };
  const Dim n = Dim::symbol("n");
  ValueId x = b.input("x", DType::f32, {n, Dim(20), Dim(11), Dim(9)});
  ValueId w = b.input("w", DType::f32, {Dim(72), Dim(20), Dim(3), Dim(3)});
  ValueId bias = b.input("bias", DType::f32, {Dim(72)});
  ValueId res = b.input("res", DType::f32, {n, Dim(72), Dim(11), Dim(9)});
  ValueId wg = b.input("wg", DType::f32, {Dim(40), Dim(10), Dim(3), Dim(5)});
  ValueId w1 = b.input("w1", DType::f32, {Dim(64), Dim(20), Dim(1), Dim(1)});
  ValueId conv = b.op("Conv", {x, w, bias}, {{"pads", ints({1, 1, 1, 1})}});
  b.output(b.op("Relu", {b.op("Add", {conv, res})}));
  b.output(b.op("Conv", {x, wg},
                {{"group", int64_t{2}},
                 {"strides", ints({2, 1})},
                 {"dilations", ints({1, 2})},
                 {"pads", ints({0, 2, 1, 3})}}));
  b.output(b.op("Sigmoid", {b.op("Conv", {x, w1}, {{"strides", ints({2, 2})}})}));
  ir::Graph g = std::move(b).finish();
  std::string cuda = codegen::print_kernels(codegen::make_plan(g), codegen::Target::Cuda);
  CHECK(cuda.find("__shared__ __align__(16) float As[16][132]") != std::string::npos);
  CHECK(cuda.find("_32x64(") != std::string::npos);
  CHECK(cuda.find("'s epilogue Add") != std::string::npos);
  for (int64_t batch : {1, 3})
    check_twin(g, {{batch, 20, 11, 9},
                   {72, 20, 3, 3},
                   {72},
                   {batch, 72, 11, 9},
                   {40, 10, 3, 5},
                   {64, 20, 1, 1}});
  // 128 x 133 pixels make 266 tiles of 64: 40 channels run in tiles of 64x64. At a column stride
  // of 2, 128 x 67 pixels make 134 tiles of 64: 72 channels run in tiles of 128x64.
  GraphBuilder big;
  ValueId bx = big.input("x", DType::f32, {n, Dim(8), Dim(128), Dim(133)});
  ValueId bw = big.input("w", DType::f32, {Dim(40), Dim(8), Dim(3), Dim(3)});
  ValueId bw72 = big.input("w72", DType::f32, {Dim(72), Dim(8), Dim(3), Dim(3)});
  big.output(big.op("Conv", {bx, bw}, {{"pads", ints({1, 1, 1, 1})}}));
  big.output(big.op("Conv", {bx, bw72}, {{"pads", ints({1, 1, 1, 1})}, {"strides", ints({1, 2})}}));
  check_twin(std::move(big).finish(), {{1, 8, 128, 133}, {40, 8, 3, 3}, {72, 8, 3, 3}});
}

TEST_CASE("CUDA convolutions through cuDNN: bias, epilogues in place, groups, 16 bits") {
  // In builds with EQFUSE_CUDNN a convolution stage may run as cuDNN's convolution into scratch
  // memory and a finish kernel (bias, the merged epilogue), or where the stage is
  // act(conv + z + bias) as cuDNN's fused convolution, chosen at run time against its own
  // kernels. The emulator's cuDNN is loops; "cudnn" forces the fused form where there is one and
  // the finish kernel elsewhere, "cudnn-unfused" the finish kernel, "auto" times them all on
  // scratch memory (on the emulator's clock the fused form is the fastest, the finish kernel the
  // slowest) and checks the fused form it picks against the kernels (EQFUSE_CONV_CHECK=fail: a
  // disagreement fails the run).
  GraphBuilder b;
  auto ints = [](std::vector<int64_t> v) { return ir::AttrValue(std::move(v)); };
  const Dim n = Dim::symbol("n");
  ValueId x = b.input("x", DType::f32, {n, Dim(20), Dim(11), Dim(9)});
  ValueId w = b.weight("w", random_tensor({24, 20, 3, 3}, 3));
  ValueId bias = b.weight("bias", random_tensor({24}, 4));
  ValueId wg = b.weight("wg", random_tensor({40, 10, 3, 3}, 5));
  ValueId wd = b.weight("wd", random_tensor({20, 1, 3, 3}, 6));
  ValueId wa = b.weight("wa", random_tensor({24, 20, 2, 2}, 7));
  // The residual is an intermediate the epilogue may overwrite (in place).
  ValueId res = b.op("Sigmoid", {b.op("Conv", {x, wa}, {{"pads", ints({1, 0, 0, 1})}})});
  ValueId conv = b.op("Conv", {x, w, bias}, {{"pads", ints({1, 1, 1, 1})}});
  b.output(b.op("Relu", {b.op("Add", {conv, res})}));
  b.output(b.op("Conv", {x, wg},
                {{"group", int64_t{2}},
                 {"strides", ints({2, 1})},
                 {"dilations", ints({1, 2})},
                 {"pads", ints({1, 2, 1, 2})}}));
  b.output(b.op("Tanh",
                {b.op("Conv", {x, wd}, {{"group", int64_t{20}}, {"pads", ints({1, 1, 1, 1})}})}));
  // Fused in cuDNN: relu(conv + x + bias) (the residual a model input, the epilogue one kernel
  // as the optimizer fuses it) and conv + bias.
  ValueId w20 = b.weight("w20", random_tensor({20, 20, 3, 3}, 8));
  ValueId b20 = b.weight("b20", random_tensor({20}, 9));
  b.output(kernel(b, "(Relu (Add ?0 ?1))",
                  {b.op("Conv", {x, w20, b20}, {{"pads", ints({1, 1, 1, 1})}}), x}));
  b.output(b.op("Conv", {x, w, bias}, {{"strides", ints({2, 2})}}));
  ir::Graph g = std::move(b).finish();
  std::string cuda = codegen::print_kernels(codegen::make_plan(g), codegen::Target::Cuda);
  auto count = [&](const std::string& what) { return occurrences(cuda, what); };
  // Five convolutions may take cuDNN; the one with asymmetric padding may not. Three have a
  // fused form: the first as conv + z + bias (the residual Add merges into it, writing in place
  // over the convolution's output, not over the residual; the Relu is a stage of its own), the
  // last two; the grouped and depthwise ones have no bias.
  CHECK(count("eqf_conv_run(") == 5 + 1);  // the calls and the helper's definition
  CHECK(count("return eqf_cudnn_fused(") == 3);
  CHECK(count("or cuDNN's relu(conv + z + bias)") == 1);
  CHECK(count("or cuDNN's conv + z + bias") == 1);
  CHECK(count("or cuDNN's conv + bias") == 1);
  CHECK(cuda.find("#include <cudnn.h>") != std::string::npos);
  CHECK(codegen::print_cuda_hosted(codegen::make_plan(g)).host.find("cudnn") == std::string::npos);
  std::vector<ir::Tensor> inputs = {random_tensor({2, 20, 11, 9}, 11)};
  // One build, batches 1, 2 and 1 again: each binding of the dims gets its own choice and cuDNN
  // descriptors, and the first is found again.
  const std::vector<std::vector<ir::Tensor>> sets = {
      {random_tensor({1, 20, 11, 9}, 12)}, inputs, {random_tensor({1, 20, 11, 9}, 13)}};
  ::setenv("EQFUSE_CONV_CHECK", "fail", 1);
  // The hosted units of `eqfuse run --backend cuda`, built against the runtime, call cuDNN the
  // same way.
  CHECK(codegen::print_cuda_hosted(codegen::make_plan(g), true).host.find("eqf_conv_run(") !=
        std::string::npos);
  for (bool hosted : {false, true})
    for (const char* form : {"cudnn", "cudnn-unfused", "auto"}) {
      std::vector<std::vector<ir::Tensor>> got =
          hosted ? testing::run_cuda_hosted_emulated_sets(g, sets, {}, form)
                 : testing::run_cuda_emulated_sets(g, sets, {}, form);
      REQUIRE(got.size() == sets.size());
      for (size_t set = 0; set < sets.size(); ++set) {
        std::vector<ir::Tensor> want = ir::Interpreter(g).run(sets[set]);
        REQUIRE(got[set].size() == want.size());
        for (size_t k = 0; k < want.size(); ++k) {
          frontend::Comparison c = frontend::compare_tensors(got[set][k], want[k], 1e-4, 1e-5);
          INFO((hosted ? "hosted, " : "")
               << form << ", input set " << set << ", output " << k << ": " << c.str());
          CHECK(c.match);
        }
      }
    }
  ::unsetenv("EQFUSE_CONV_CHECK");
  // Under --precision the convolutions read a 16-bit copy of the f32 input, and cuDNN takes all
  // three operands at 16 bits: the same as the twin, up to the finish kernel's second rounding.
  for (DType precision : {DType::bf16, DType::f16}) {
    codegen::PlanOptions options;
    options.precision = precision;
    auto twin = codegen::CpuModule::build(g, nullptr, {}, options);
    CHECK(twin->plan().stages.front().source == g.inputs()[0]);
    std::vector<ir::Tensor> expected = twin->run(inputs);
    std::vector<ir::Tensor> got = testing::run_cuda_emulated(g, inputs, options, "cudnn");
    auto [rtol, atol] = codegen::precision_tolerance(precision);
    for (size_t k = 0; k < got.size(); ++k) {
      frontend::Comparison c = frontend::compare_tensors(got[k], expected[k], rtol, atol);
      INFO(ir::dtype_name(precision) << ", output " << k << ": " << c.str());
      CHECK(c.match);
    }
  }
}

TEST_CASE("matrix product tiles: row blocks of 12, 6, 4 and 2, ragged rows, column chunks, Gemm") {
  // x's and xw's rows (batches of n matrices of m rows, n known at run time) are blocks of 12
  // (tiles of 6 rows, or of 4 under AVX-512): 12 is a whole block; 8, 5, 17, 23 and 3 end in a
  // block of fewer rows, which the twin takes in tiles of 6 (or 4), then of 4 and 2, then a row
  // at a time (23: 12, then 6 + 4 + 1, or 4 + 4 + 2 + 1). A static matrix (a, at, and the 2 x m
  // rows of xs) of fewer than 192 rows is blocks of 4 (6 and 2 rows: a tile of 4 and one of 2; 5: 4
  // and one row); of 204 and 203 rows, blocks of 12 again (203: the last of 11). 37 columns are
  // whole tiles and an edge tile at either vector width; 300 are two items of 256 columns, the
  // second of 44.
  for (int64_t m : {12, 8, 6, 5, 4, 17, 23, 3, 2, 204, 203}) {
    GraphBuilder b;
    ValueId x = b.input("x", DType::f32, {Dim::symbol("n"), Dim(m), Dim(11)});
    ValueId w = b.input("w", DType::f32, {Dim(11), Dim(37)});
    ValueId y = b.input("y", DType::f32, {Dim::symbol("n"), Dim(37), Dim(3)});
    ValueId a = b.input("a", DType::f32, {Dim(m), Dim(11)});
    ValueId at = b.input("at", DType::f32, {Dim(11), Dim(m)});
    ValueId c = b.input("c", DType::f32, {Dim(37)});
    ValueId w300 = b.input("w300", DType::f32, {Dim(11), Dim(300)});
    ValueId xs = b.input("xs", DType::f32, {Dim(2), Dim(m), Dim(11)});
    b.output(b.op("Tanh", {b.op("MatMul", {xs, w})}));
    ValueId xw = b.op("MatMul", {x, w});
    b.output(b.op("Tanh", {xw}));
    b.output(b.op("MatMul", {xw, y}));
    b.output(b.op("Gemm", {a, w, c}, {{"alpha", 0.5}, {"beta", 2.0}}));
    b.output(b.op("Gemm", {at, w}, {{"transA", int64_t{1}}}));
    b.output(b.op("Sigmoid", {b.op("MatMul", {a, w300})}));
    ir::Graph g = std::move(b).finish();
    for_each_vector_width([&] {
      check_twin(g,
                 {{2, m, 11}, {11, 37}, {2, 37, 3}, {m, 11}, {11, m}, {37}, {11, 300}, {2, m, 11}});
    });
  }
  // Rows known only at run time: blocks of 12, the last of what remains (9: a tile of 6, or of
  // 4 and 4, then one row; 23: 11 left after the first block).
  GraphBuilder b;
  ValueId x = b.input("x", DType::f32, {Dim::symbol("n"), Dim::symbol("m"), Dim(11)});
  ValueId y = b.input("y", DType::f32, {Dim::symbol("n"), Dim(11), Dim(70)});
  ValueId w = b.input("w", DType::f32, {Dim(11), Dim(300)});
  ValueId bias = b.input("bias", DType::f32, {Dim::symbol("n"), Dim::symbol("m"), Dim(1)});
  b.output(kernel(b, "(Add (MatMul ?0 ?1) ?2)", {x, w, bias}));
  b.output(b.op("Relu", {b.op("MatMul", {x, y})}));
  ir::Graph g = std::move(b).finish();
  for (int64_t m : {1, 3, 9, 23})
    for_each_vector_width([&] { check_twin(g, {{3, m, 11}, {3, 11, 70}, {11, 300}, {3, m, 1}}); });
}

TEST_CASE("products over weights read B in panels of 64 columns, zero past the last column") {
  // B of 70 columns is two panels, the second of 6; 300 is five, the last of 44; 3 columns are
  // one panel, mostly zeros. A Gemm's transB weight is held as B^T's panels. Rows 1, 5 and 8
  // at run time: a ragged block of 12 each (8: a tile of 6 and one of 2, or two of 4), at every
  // vector width, through the twin's tiles and CBLAS.
  GraphBuilder b;
  const Dim n = Dim::symbol("n");
  ValueId x = b.input("x", DType::f32, {n, Dim(5), Dim(13)});
  ValueId a = b.input("a", DType::f32, {n, Dim(11)});
  ValueId at = b.input("at", DType::f32, {Dim(11), n});
  ValueId a37 = b.input("a37", DType::f32, {n, Dim(37)});
  ValueId a5 = b.input("a5", DType::f32, {n, Dim(5)});
  ValueId at37 = b.input("at37", DType::f32, {Dim(37), n});
  ValueId w70 = b.weight("w70", random_tensor({13, 70}, 31));
  ValueId w128 = b.weight("w128", random_tensor({128, 37}, 38));
  ValueId w300 = b.weight("w300", random_tensor({11, 300}, 32));
  ValueId wt = b.weight("wt", random_tensor({70, 37}, 33));
  ValueId w3 = b.weight("w3", random_tensor({5, 3}, 34));
  ValueId sq = b.weight("sq", random_tensor({5, 5}, 35));
  ValueId bias = b.weight("bias", random_tensor({70}, 36));
  ValueId c300 = b.weight("c300", random_tensor({300}, 37));
  b.output(kernel(b, "(Relu (Add (MatMul ?0 ?1) ?2))", {x, w70, bias}));
  b.output(b.op("Tanh", {b.op("MatMul", {x, w70})}));  // w70 again: one copy of its panels
  b.output(b.op("Gemm", {a, w300, c300}, {{"alpha", 0.5}, {"beta", 2.0}}));
  b.output(b.op("Gemm", {at, w300}, {{"transA", int64_t{1}}}));
  b.output(b.op("Gemm", {a37, wt, bias}, {{"transB", int64_t{1}}}));
  // Both transposed, N = 128: two whole panels, no column past N.
  b.output(b.op("Gemm", {at37, w128}, {{"transA", int64_t{1}}, {"transB", int64_t{1}}}));
  b.output(b.op("MatMul", {a5, w3}));
  b.output(b.op("Sigmoid", {w3}));                     // w3 read as itself too: the blob keeps it
  b.output(b.op("Tanh", {b.op("MatMul", {sq, sq})}));  // B is A too: no panels
  ir::Graph g = std::move(b).finish();
  codegen::PlanOptions twin;
  twin.weight_blocks = true;
  const codegen::KernelPlan plan = codegen::make_plan(g, twin);
  int panel_stages = 0;
  for (const codegen::Stage& s : plan.stages)
    panel_stages += (s.kind == codegen::StageKind::MatMul || s.kind == codegen::StageKind::Gemm) &&
                    s.weight_blocks.has_value();
  CHECK(panel_stages == 7);
  std::set<std::string> weights;
  for (ValueId v : plan.weights) weights.insert(plan.graph.value(v).name);
  CHECK(weights == std::set<std::string>{"w70_panels", "w300_panels", "wt_panels", "w128_panels",
                                         "w3_panels", "w3", "sq", "bias", "c300"});
  // A panel holds B's columns for every k, zeros past the last column; B^T's for transB.
  const ir::Tensor& p70 = plan_weight(plan, "w70_panels");
  CHECK(p70.dims() == std::vector<int64_t>{2, 13, 64});
  const ir::Tensor& w70_data = *g.weight_data(w70);
  const ir::Tensor& pt = plan_weight(plan, "wt_panels");
  CHECK(pt.dims() == std::vector<int64_t>{2, 37, 64});
  const ir::Tensor& wt_data = *g.weight_data(wt);
  for (int64_t panel = 0; panel < 2; ++panel)
    for (int64_t j = 0; j < 64; ++j) {
      const int64_t col = panel * 64 + j;
      for (int64_t k = 0; k < 13; ++k)
        CHECK(p70.get((panel * 13 + k) * 64 + j) == (col < 70 ? w70_data.get(k * 70 + col) : 0.0));
      for (int64_t k = 0; k < 37; ++k)
        CHECK(pt.get((panel * 37 + k) * 64 + j) == (col < 70 ? wt_data.get(col * 37 + k) : 0.0));
    }
  // CUDA prints no plan with panels (it would read B, which the blob lacks).
  CHECK_THROWS_WITH(codegen::print_kernels(plan, codegen::Target::Cuda),
                    Catch::Contains("only the C++ twin"));
  for (int64_t rows : {1, 5, 8}) {
    INFO("rows " << rows);
    const std::vector<std::vector<int64_t>> dims = {{rows, 5, 13}, {rows, 11}, {11, rows},
                                                    {rows, 37},    {rows, 5},  {37, rows}};
    for_each_vector_width([&] { check_twin(g, dims); });
    // The same through CBLAS (EQFUSE_BLAS=1, where this machine has one): a call per panel.
    ::setenv("EQFUSE_BLAS", "1", 1);
    check_twin(g, dims);
    ::unsetenv("EQFUSE_BLAS");
  }
}

TEST_CASE("products with B transposed: tiles of dot products, K tails, ragged rows, f64") {
  // K of 13, 37 and 131: dot products that are all tail, one or two vectors and a tail, eight
  // and a tail at every vector width; 70 columns are an item of 64 and one of 6, whose last
  // tile of columns is partial. Rows 6 and 9 end in a block of fewer than 4 (a tile of 2; a row).
  for (int64_t m : {1, 3, 6, 9})
    for (int64_t k : {13, 37, 131}) {
      INFO("rows " << m << ", K " << k);
      GraphBuilder b;
      ValueId a = b.input("a", DType::f32, {Dim(m), Dim(k)});
      ValueId wt = b.input("wt", DType::f32, {Dim(70), Dim(k)});
      ValueId c = b.input("c", DType::f32, {Dim(m), Dim(1)});  // C varies along the rows
      b.output(b.op("Tanh", {b.op("Gemm", {a, wt, c},
                                  {{"transB", int64_t{1}}, {"alpha", 0.5}, {"beta", 2.0}})}));
      const int64_t f64 = ir::onnx_dtype_code(DType::f64);
      b.output(b.op("Gemm", {b.op("Cast", {a}, {{"to", f64}}), b.op("Cast", {wt}, {{"to", f64}})},
                    {{"transB", int64_t{1}}}));
      ir::Graph g = std::move(b).finish();
      std::string cpu = codegen::print_kernels(codegen::make_plan(g), codegen::Target::Cpu);
      CHECK(occurrences(cpu, "EQF_LANES(") > 0);
      for_each_vector_width([&] { check_twin(g, {{m, k}, {70, k}, {m, 1}}); });
    }
}

TEST_CASE("every elementwise op of the table compiles and matches") {
  GraphBuilder b;
  ValueId x = b.input("x", DType::f32, {Dim(17)});
  ValueId y = b.input("y", DType::f32, {Dim(17)});
  for (const char* op :
       {"Abs",      "Neg",  "Exp",   "Tanh",        "Erf",       "Sigmoid",   "Relu",
        "Floor",    "Ceil", "Round", "Sign",        "Sin",       "Cos",       "Atan",
        "Softplus", "Elu",  "Selu",  "HardSigmoid", "LeakyRelu", "Reciprocal"})
    b.output(b.op(op, {x}));
  for (const char* op : {"Add", "Sub", "Mul", "Div", "Max", "Min", "PRelu"})
    b.output(b.op(op, {x, y}));
  b.output(b.op("Where", {b.op("Less", {x, y}), x, y}));
  b.output(b.op("Cast", {b.op("Greater", {x, y})}, {{"to", int64_t{1}}}));
  check_twin(std::move(b).finish(), {{17}, {17}});
}

TEST_CASE("an op without a generated kernel is refused by name") {
  GraphBuilder b;
  ValueId x = b.input("x", DType::f32, {Dim(4)});
  b.output(b.opaque("MyCustomOp", {x}, {{DType::f32, ir::Shape({Dim(4)})}})[0]);
  ir::Graph g = std::move(b).finish();
  try {
    codegen::make_plan(g);
    FAIL("no error");
  } catch (const Error& e) {
    CHECK(e.kind() == Error::Kind::Unsupported);
    CHECK_THAT(e.what(), Catch::Contains("MyCustomOp"));
  }
}

TEST_CASE("--dynamic-batch refuses a model whose constant Reshape fixes the batch") {
  // Exported at batch 1 with the shape written out as constants: (1, 4, 8) -> (4, 8) holds at
  // batch 1 only, and a build for every batch would be silently wrong at any other.
  GraphBuilder fixed("fixed");
  ValueId x = fixed.input("x", DType::f32, {Dim(1), Dim(4), Dim(8)});
  ValueId shape =
      fixed.weight("shape", ir::Tensor::from_vector(DType::i64, {2}, std::vector<int64_t>{4, 8}));
  fixed.output(fixed.op("Relu", {fixed.op("Reshape", {x, shape})}));
  ir::Graph g = std::move(fixed).finish();
  CHECK_THROWS_WITH(codegen::make_batch_dynamic(g),
                    Catch::Contains("Reshape") && Catch::Contains("one batch size only"));

  // The same model with the batch kept (0 copies it, -1 takes the rest) follows any batch.
  GraphBuilder kept("kept");
  x = kept.input("x", DType::f32, {Dim(1), Dim(4), Dim(8)});
  shape =
      kept.weight("shape", ir::Tensor::from_vector(DType::i64, {2}, std::vector<int64_t>{0, -1}));
  kept.output(kept.op("Relu", {kept.op("Reshape", {x, shape})}));
  ir::Graph h = std::move(kept).finish();
  codegen::make_batch_dynamic(h);
  CHECK(h.value(h.outputs()[0]).type.str() == "f32[batch,32]");
  check_twin(h, {{3, 4, 8}});
}

namespace {

// v through `stored` and back: what a value stored at that precision reads as.
ValueId rounded(GraphBuilder& b, ValueId v, DType stored) {
  ValueId low = b.op("Cast", {v}, {{"to", int64_t(ir::onnx_dtype_code(stored))}});
  return b.op("Cast", {low}, {{"to", int64_t(ir::onnx_dtype_code(DType::f32))}});
}

// A contraction, a row reduction and a pointwise kernel with weights; with `stored` given,
// every tensor the plan stores (weights, the input the MatMul reads, the MatMul's and the
// LayerNorm's outputs) is passed through it explicitly, which is what --precision does
// implicitly.
ir::Graph stored_graph(std::optional<DType> stored) {
  GraphBuilder b;
  auto store = [&](ValueId v) { return stored ? rounded(b, v, *stored) : v; };
  ValueId x = b.input("x", DType::f32, {Dim::symbol("n"), Dim(13)});
  ValueId w = store(b.weight("w", random_tensor({13, 29}, 3)));
  ValueId bias = store(b.weight("bias", random_tensor({29}, 4)));
  ValueId gamma = store(b.weight("gamma", random_tensor({29}, 5)));
  ValueId h = store(b.op("MatMul", {store(x), w}));
  ValueId ln = store(b.op("LayerNormalization", {h, gamma, bias}, {{"axis", int64_t{-1}}}));
  b.output(kernel(b, "(Mul (Add ?0 ?1) (Sigmoid ?0))", {ln, bias}));
  return std::move(b).finish();
}

}  // namespace

TEST_CASE("--precision stores weights and intermediates at 16 bits, rounded to nearest even") {
  std::vector<ir::Tensor> inputs = {random_tensor({7, 13}, 9)};
  ir::Graph plain = stored_graph(std::nullopt);
  std::vector<ir::Tensor> exact = ir::Interpreter(plain).run(inputs);
  for (DType precision : {DType::bf16, DType::f16}) {
    INFO(ir::dtype_name(precision));
    codegen::PlanOptions options;
    options.precision = precision;
    auto twin = codegen::CpuModule::build(plain, nullptr, {}, options);
    for (const codegen::Buffer& buf : twin->plan().buffers) {
      bool lowered =
          buf.storage == codegen::Storage::Weight || buf.storage == codegen::Storage::Arena;
      CHECK(buf.dtype == (lowered ? precision : DType::f32));
    }
    // The MatMul reads x rounded by a copy stage, so that on CUDA both operands go to GemmEx.
    CHECK(twin->plan().stages.front().source == plain.inputs()[0]);
    const std::string source = codegen::print_kernels(twin->plan(), codegen::Target::Cuda);
    CHECK(source.find("cublasGemmStridedBatchedEx") != std::string::npos);
    // The pointwise stage reads the 16-bit LayerNorm output 4 elements (8 bytes) at a time.
    CHECK(source.find("const eqf_" + std::string(ir::dtype_name(precision)) + "x4 g") !=
          std::string::npos);
    std::vector<ir::Tensor> got = twin->run(inputs);
    // The same roundings written out as Casts, in the interpreter: equal up to float sums; the
    // CUDA source (emulated) too.
    std::vector<ir::Tensor> want = ir::Interpreter(stored_graph(precision)).run(inputs);
    frontend::Comparison same = frontend::compare_tensors(got[0], want[0], 1e-4, 1e-5);
    INFO("against the explicit roundings: " << same.str());
    CHECK(same.match);
    std::vector<ir::Tensor> cuda = testing::run_cuda_emulated(plain, inputs, options);
    frontend::Comparison same_cuda = frontend::compare_tensors(cuda[0], want[0], 1e-4, 1e-5);
    INFO("CUDA, emulated, against the explicit roundings: " << same_cuda.str());
    CHECK(same_cuda.match);
    // And it is an approximation of the f32 model: visibly off, within the stated tolerance.
    auto [rtol, atol] = codegen::precision_tolerance(precision);
    frontend::Comparison approx = frontend::compare_tensors(got[0], exact[0], rtol, atol);
    INFO("against f32: " << approx.str());
    CHECK(approx.match);
    CHECK(approx.max_abs_error > 1e-4);
  }
}

TEST_CASE("f16 and bf16 models run in the twin: loads widen to float, stores round") {
  for (DType t : {DType::f16, DType::bf16}) {
    GraphBuilder b;
    ValueId x = b.input("x", t, {Dim::symbol("n"), Dim(11)});
    ValueId w = b.input("w", t, {Dim(11), Dim(5)});
    b.output(b.op("Softmax", {b.op("MatMul", {b.op("Tanh", {x}), w})}, {{"axis", int64_t{-1}}}));
    b.output(b.op("Cast", {x}, {{"to", int64_t(ir::onnx_dtype_code(DType::f32))}}));
    // A product with B transposed over 16-bit rows of 44: the twin's dot tiles widen each
    // element as they load it.
    ir::Tensor wt(DType::f32, {7, 44});
    for (int64_t i = 0; i < wt.numel(); ++i) wt.set(i, 0.05 * double(i % 13) - 0.3);
    b.output(b.op(
        "Gemm", {b.op("Concat", {x, x, x, x}, {{"axis", int64_t{1}}}), b.weight("wt", wt.cast(t))},
        {{"transB", int64_t{1}}}));
    // Ops read at computed places over 16-bit loads (a CUDA group loads floats).
    b.output(b.op("Trilu", {x}));
    b.output(b.op(
        "Pad", {x, b.constant(ir::Tensor::from_vector<int64_t>(DType::i64, {4}, {0, 1, 0, 2}))}));
    auto channels = [&](const char* name, double base) {
      ir::Tensor c(DType::f32, {11});
      for (int64_t i = 0; i < 11; ++i) c.set(i, base + 0.1 * double(i));
      return b.weight(name, c.cast(t));
    };
    ValueId rows = b.op(
        "Reshape", {x, b.constant(ir::Tensor::from_vector<int64_t>(DType::i64, {3}, {-1, 11, 1}))});
    b.output(b.op("BatchNormalization", {rows, channels("s", 0.5), channels("b", -0.4),
                                         channels("m", 0.1), channels("v", 0.6)}));
    // InstanceNormalization's statistics in f32 (as its decomposition), each row's 11 values
    // offset by 300 (a square of the 16-bit deviation would overflow f16 from 256).
    ValueId planes = b.op(
        "Reshape", {x, b.constant(ir::Tensor::from_vector<int64_t>(DType::i64, {3}, {1, -1, 11}))});
    ir::Tensor offset(DType::f32, {});
    offset.set(0, 300.0);
    b.output(b.op(
        "InstanceNormalization",
        {b.op("Mul", {planes, b.weight("offset", offset.cast(t))}),
         b.weight("in_s", ir::Tensor::from_vector<float>(DType::f32, {3}, {1, 2, 3}).cast(t)),
         b.weight("in_b", ir::Tensor::from_vector<float>(DType::f32, {3}, {0, 1, -1}).cast(t))}));
    ir::Graph g = std::move(b).finish();
    std::vector<ir::Tensor> inputs = {random_tensor({3, 11}, 1).cast(t),
                                      random_tensor({11, 5}, 2).cast(t)};
    auto twin = codegen::CpuModule::build(g);
    std::vector<ir::Tensor> want = ir::Interpreter(g).run(inputs);
    // One rounding of each stored tensor apart (the interpreter rounds after every op); on
    // CUDA the pointwise stages load and store the 16-bit buffers 4 elements at a time.
    auto [rtol, atol] = codegen::precision_tolerance(t);
    for (const char* where : {"twin", "CUDA, emulated"}) {
      std::vector<ir::Tensor> got =
          std::string(where) == "twin" ? twin->run(inputs) : testing::run_cuda_emulated(g, inputs);
      REQUIRE(got[0].dtype() == t);
      for (size_t k = 0; k < got.size(); ++k) {
        frontend::Comparison c = frontend::compare_tensors(got[k], want[k], rtol, atol);
        INFO(where << ", " << ir::dtype_name(t) << " output " << k << ": " << c.str());
        CHECK(c.match);
      }
    }
  }
}

TEST_CASE("CUDA convolution tiles on tensor cores where the operands are 16-bit") {
  // The convolution-tiles graph of the test above, under --precision and as a bf16 model: each
  // tile multiplies on mma.sync m16n8k16 (channel and k tails, groups, a merged epilogue),
  // against the twin (one rounding of each stored value, sums in float) and the f32 model.
  GraphBuilder b;
  auto ints = [](std::vector<int64_t> v) { return ir::AttrValue(std::move(v)); };
  const Dim n = Dim::symbol("n");
  ValueId x = b.input("x", DType::f32, {n, Dim(20), Dim(11), Dim(9)});
  ValueId w = b.weight("w", random_tensor({72, 20, 3, 3}, 21));
  ValueId bias = b.weight("bias", random_tensor({72}, 22));
  ValueId res = b.input("res", DType::f32, {n, Dim(72), Dim(11), Dim(9)});
  ValueId wg = b.weight("wg", random_tensor({40, 10, 3, 5}, 23));
  ValueId conv = b.op("Conv", {x, w, bias}, {{"pads", ints({1, 1, 1, 1})}});
  b.output(b.op("Relu", {b.op("Add", {conv, res})}));
  b.output(b.op("Conv", {x, wg},
                {{"group", int64_t{2}}, {"strides", ints({2, 1})}, {"pads", ints({0, 2, 1, 3})}}));
  ir::Graph g = std::move(b).finish();
  const std::vector<ir::Tensor> inputs = {random_tensor({3, 20, 11, 9}, 24),
                                          random_tensor({3, 72, 11, 9}, 25)};
  const std::vector<ir::Tensor> exact = ir::Interpreter(g).run(inputs);
  for (DType precision : {DType::bf16, DType::f16}) {
    INFO(ir::dtype_name(precision));
    codegen::PlanOptions options;
    options.precision = precision;
    const codegen::KernelPlan plan = codegen::make_plan(g, options);
    const std::string cuda = codegen::print_kernels(plan, codegen::Target::Cuda);
    const std::string mma = "eqf_mma_" + std::string(ir::dtype_name(precision)) + "(acc[r][c]";
    CHECK(occurrences(cuda, mma) == 3);  // 128x64 and 32x64 for 72 channels, 32x64 for 20 a group
    auto [rtol, atol] = codegen::precision_tolerance(precision);
    const std::vector<ir::Tensor> twin =
        codegen::CpuModule::build(g, nullptr, {}, options)->run(inputs);
    const std::vector<ir::Tensor> got = testing::run_cuda_emulated(g, inputs, options);
    for (size_t k = 0; k < got.size(); ++k) {
      frontend::Comparison to_twin = frontend::compare_tensors(got[k], twin[k], rtol, atol);
      frontend::Comparison to_f32 = frontend::compare_tensors(got[k], exact[k], rtol, atol);
      INFO("output " << k << ": against the twin " << to_twin.str() << "; against f32 "
                     << to_f32.str());
      CHECK(to_twin.match);
      CHECK(to_f32.match);
    }
  }
  // The larger tiles, as the f32 test above runs them: 40 channels in 64x64 tiles (266 of
  // them), 72 at a column stride of 2 in 128x64 tiles (134).
  GraphBuilder big;
  ValueId bx = big.input("x", DType::f32, {n, Dim(8), Dim(128), Dim(133)});
  ValueId bw = big.weight("w", random_tensor({40, 8, 3, 3}, 27));
  ValueId bw72 = big.weight("w72", random_tensor({72, 8, 3, 3}, 28));
  ValueId bb72 = big.weight("b72", random_tensor({72}, 29));
  big.output(big.op("Conv", {bx, bw}, {{"pads", ints({1, 1, 1, 1})}}));
  big.output(big.op("Relu", {big.op("Conv", {bx, bw72, bb72},
                                    {{"pads", ints({1, 1, 1, 1})}, {"strides", ints({1, 2})}})}));
  ir::Graph bg = std::move(big).finish();
  const std::vector<ir::Tensor> big_in = {random_tensor({1, 8, 128, 133}, 30)};
  const std::vector<ir::Tensor> big_exact = ir::Interpreter(bg).run(big_in);
  for (DType precision : {DType::bf16, DType::f16}) {
    codegen::PlanOptions options;
    options.precision = precision;
    const std::string cuda =
        codegen::print_kernels(codegen::make_plan(bg, options), codegen::Target::Cuda);
    CHECK(cuda.find("uint16_t As[128][24]") != std::string::npos);
    CHECK(cuda.find("uint16_t As[64][24]") != std::string::npos);
    auto [rtol, atol] = codegen::precision_tolerance(precision);
    const std::vector<ir::Tensor> twin =
        codegen::CpuModule::build(bg, nullptr, {}, options)->run(big_in);
    const std::vector<ir::Tensor> got = testing::run_cuda_emulated(bg, big_in, options);
    for (size_t k = 0; k < got.size(); ++k) {
      frontend::Comparison to_twin = frontend::compare_tensors(got[k], twin[k], rtol, atol);
      frontend::Comparison to_f32 = frontend::compare_tensors(got[k], big_exact[k], rtol, atol);
      INFO(ir::dtype_name(precision) << " large tiles, output " << k << ": against the twin "
                                     << to_twin.str() << "; against f32 " << to_f32.str());
      CHECK(to_twin.match);
      CHECK(to_f32.match);
    }
  }
  // A bf16 model: its values are bf16 in the graph, the tiles the same.
  GraphBuilder m;
  ValueId mx = m.input("x", DType::bf16, {n, Dim(20), Dim(11), Dim(9)});
  ValueId mw = m.weight("w", random_tensor({72, 20, 3, 3}, 21).cast(DType::bf16));
  m.output(m.op("Relu", {m.op("Conv", {mx, mw}, {{"pads", ints({1, 1, 1, 1})}})}));
  ir::Graph mg = std::move(m).finish();
  const std::vector<ir::Tensor> in16 = {random_tensor({2, 20, 11, 9}, 26).cast(DType::bf16)};
  CHECK(codegen::print_kernels(codegen::make_plan(mg), codegen::Target::Cuda)
            .find("eqf_mma_bf16(acc[r][c]") != std::string::npos);
  auto [rtol, atol] = codegen::precision_tolerance(DType::bf16);
  const std::vector<ir::Tensor> want = ir::Interpreter(mg).run(in16);
  const std::vector<ir::Tensor> got = testing::run_cuda_emulated(mg, in16);
  frontend::Comparison c = frontend::compare_tensors(got[0], want[0], rtol, atol);
  INFO("bf16 model: " << c.str());
  CHECK(c.match);
}

TEST_CASE("before sm_80, 16-bit attention and convolution tiles run on the FP32 units") {
  // `--arch sm_75` (a T4) has no mma.sync m16n8k16: PlanOptions::tensor_cores off prints the
  // f32 forms over the 16-bit buffers (loads convert to float), which the twin checks.
  CHECK(codegen::arch_has_tensor_cores("sm_90a"));
  CHECK(codegen::arch_has_tensor_cores("sm_80"));
  CHECK(codegen::arch_has_tensor_cores("86"));
  CHECK_FALSE(codegen::arch_has_tensor_cores("sm_75"));
  CHECK_FALSE(codegen::arch_has_tensor_cores("sm_70"));
  CHECK(codegen::arch_has_tensor_cores("sm_100a"));
  CHECK(codegen::arch_has_tensor_cores("80;90a-real"));  // CMake's forms, as trees pass it on
  CHECK_FALSE(codegen::arch_has_tensor_cores("75;90"));
  CHECK(codegen::arch_has_tensor_cores("native"));
  CHECK_FALSE(codegen::arch_has_tensor_cores("all"));  // sm_50 and up: the FP32 forms
  CHECK_THROWS_WITH(codegen::arch_has_tensor_cores("sm_9x"),
                    Catch::Contains("'sm_9x': expected sm_NN"));
  CHECK_THROWS_AS(codegen::arch_has_tensor_cores(""), Error);
  CHECK_THROWS_AS(codegen::arch_has_tensor_cores("80;"), Error);

  GraphBuilder b;
  const Dim n = Dim::symbol("n");
  ValueId x = b.input("x", DType::f32, {n, Dim(20), Dim(11), Dim(9)});
  ValueId w = b.weight("w", random_tensor({72, 20, 3, 3}, 31));
  ValueId bias = b.weight("bias", random_tensor({72}, 32));
  b.output(b.op("Relu", {b.op("Conv", {x, w, bias},
                              {{"pads", ir::AttrValue(std::vector<int64_t>{1, 1, 1, 1})}})}));
  ir::Graph conv = std::move(b).finish();
  ir::Graph attention = attention_graph("causal", 2, 37, 67, 8, 5);
  const std::vector<ir::Tensor> conv_in = {random_tensor({2, 20, 11, 9}, 33)};
  const std::vector<ir::Tensor> attention_in = {
      random_tensor({2, 2, 37, 8}, 34), random_tensor({2, 2, 67, 8}, 35),
      random_tensor({2, 2, 67, 5}, 36), random_tensor({37, 67}, 37)};
  codegen::PlanOptions options;
  options.precision = DType::f16;
  options.tensor_cores = false;
  auto [rtol, atol] = codegen::precision_tolerance(DType::f16);
  for (const auto& [g, inputs] :
       {std::pair{&conv, &conv_in}, std::pair{&attention, &attention_in}}) {
    const std::string cuda =
        codegen::print_kernels(codegen::make_plan(*g, options), codegen::Target::Cuda);
    CHECK(cuda.find("eqf_mma_") == std::string::npos);
    CHECK(cuda.find("sm_80 or newer") == std::string::npos);
    const std::vector<ir::Tensor> twin =
        codegen::CpuModule::build(*g, nullptr, {}, options)->run(*inputs);
    const std::vector<ir::Tensor> got = testing::run_cuda_emulated(*g, *inputs, options);
    frontend::Comparison c = frontend::compare_tensors(got[0], twin[0], rtol, atol);
    INFO(c.str());
    CHECK(c.match);
  }
  CHECK(codegen::print_kernels(codegen::make_plan(conv, options), codegen::Target::Cuda)
            .find("float As[16]") != std::string::npos);  // the FP32 tile
}

TEST_CASE("a precision other than f32, f16 and bf16 is refused") {
  GraphBuilder b;
  b.output(b.op("Relu", {b.input("x", DType::f32, {Dim(4)})}));
  codegen::PlanOptions options;
  options.precision = DType::i8;
  CHECK_THROWS_WITH(codegen::make_plan(std::move(b).finish(), options),
                    Catch::Contains("expected f32, f16 or bf16"));
}

TEST_CASE("a run-time dim broadcasts against a static one as 1 or as its equal") {
  // [n, 5] + [5, 5] infers [5, 5] (n must be 1 or 5): at n = 1 each element reads row 0.
  GraphBuilder b;
  ValueId a = b.input("a", DType::f32, {Dim::symbol("n"), Dim(5)});
  ValueId w = b.weight("w", random_tensor({5, 5}, 35));
  ValueId x = b.input("x", DType::f32, {Dim(5), Dim(5)});
  b.output(b.op("Add", {b.op("MatMul", {x, w}), a}));                    // a product's epilogue
  b.output(b.op("Mul", {x, a}));                                         // a pointwise stage
  b.output(b.op("LayerNormalization", {x, a}, {{"axis", int64_t{0}}}));  // a row's scale
  // A batched product's batch dim: [m, 4, 8] x [3, 8, 5] infers [3, 4, 5].
  ValueId xb = b.input("xb", DType::f32, {Dim::symbol("m"), Dim(4), Dim(8)});
  ValueId yb = b.input("yb", DType::f32, {Dim(3), Dim(8), Dim(5)});
  b.output(b.op("Tanh", {b.op("MatMul", {xb, yb})}));
  ir::Graph g = std::move(b).finish();
  for (int64_t n : {1, 5})
    for (int64_t m : {1, 3}) check_twin(g, {{n, 5}, {5, 5}, {m, 4, 8}, {3, 8, 5}});
}
