// Op group "elementwise": unary and binary ops with numpy broadcasting, comparisons, logic,
// Where, Clip, Cast. Each entry states its meaning once as a ScalarExpr (ir/scalar_expr.h); the
// kernel is the same for all of them: compile that expression and run it over the broadcast
// inputs (ir/scalar_program.h). Semantics are ONNX opset 17.
#include <fmt/format.h>

#include <cmath>
#include <limits>

#include "ir/broadcast.h"
#include "ir/op_table.h"
#include "ir/scalar_expr.h"
#include "ir/scalar_program.h"

namespace eqfuse::ir {

namespace {

using namespace sx;

// How an op's output dtype follows from its inputs.
enum class OutType { Input0, Bool, Input1, CastTo };

// What dtypes an op accepts (checked at inference, so bad models fail at import).
enum class InTypes { Any, Numeric, Floating, Bool };

ScalarExprPtr op(ScalarOp o, ScalarExprPtr a) {
  return make(o, {std::move(a)});
}
ScalarExprPtr op(ScalarOp o, ScalarExprPtr a, ScalarExprPtr b) {
  return make(o, {std::move(a), std::move(b)});
}

// Cast's target: a dtype name ("f32"), or, as an ONNX model spells it, a TensorProto code. Both
// are accepted so that a node keeps working whichever form the frontend passes on.
DType cast_target(const OpContext& ctx) {
  const AttrValue* v = ctx.node.attrs.find("to");
  if (!v) ctx.fail("attribute 'to' is required");
  if (const auto* name = std::get_if<std::string>(v)) {
    if (auto t = parse_dtype(*name)) return *t;
    ctx.fail("attribute 'to' names an unknown dtype '" + *name + "'");
  }
  if (const auto* code = std::get_if<int64_t>(v)) {
    if (auto t = dtype_from_onnx_code(*code)) return *t;
    throw Error(fmt::format("{}: cast to ONNX dtype {} is not supported", ctx.label(), *code),
                Error::Kind::Unsupported);
  }
  ctx.fail("attribute 'to' should be a dtype name or an ONNX dtype code");
}

std::vector<TensorType> infer_elementwise(const OpContext& ctx, OutType out, InTypes accepts,
                                          bool same_dtype_inputs, size_t first_same = 0) {
  std::vector<Shape> shapes;
  const TensorType* ref = nullptr;
  for (size_t i = 0; i < ctx.num_inputs(); ++i) {
    if (!ctx.has_input(i)) continue;
    const TensorType& t = ctx.input_type(i);
    shapes.push_back(t.shape);
    if (i < first_same) continue;
    if (!ref) {
      ref = &t;
      bool ok = accepts == InTypes::Any ||
                (accepts == InTypes::Numeric && t.dtype != DType::boolean) ||
                (accepts == InTypes::Floating && is_floating(t.dtype)) ||
                (accepts == InTypes::Bool && t.dtype == DType::boolean);
      if (!ok) ctx.fail(fmt::format("does not take {} inputs", dtype_name(t.dtype)));
    } else if (same_dtype_inputs && t.dtype != ref->dtype) {
      ctx.fail(fmt::format("inputs have different dtypes: {} and {}", dtype_name(ref->dtype),
                           dtype_name(t.dtype)));
    }
  }
  Shape shape;
  try {
    shape = broadcast_shapes(shapes);
  } catch (const Error& e) {
    ctx.fail(e.what());
  }
  DType dtype = ctx.input_type(0).dtype;
  switch (out) {
    case OutType::Input0:
      break;
    case OutType::Bool:
      dtype = DType::boolean;
      break;
    case OutType::Input1:
      dtype = ctx.input_type(1).dtype;
      break;
    case OutType::CastTo: {
      if (ctx.def.name == "CastLike") {
        dtype = ctx.input_type(1).dtype;
        shape = ctx.input_type(0).shape;
      } else {
        dtype = cast_target(ctx);
      }
      break;
    }
  }
  return {TensorType{dtype, shape}};
}

OpWork work_elementwise(const OpContext& ctx, const std::vector<TensorType>& outs) {
  OpWork w;
  ScalarExprPtr e = node_scalar_expr(ctx);
  double per_element = e ? static_cast<double>(std::max<int64_t>(op_count(*e), 0)) : 1.0;
  w.flops = per_element * element_count(outs[0]);
  for (size_t i = 0; i < ctx.num_inputs(); ++i) {
    if (ctx.has_input(i)) w.bytes_read += byte_count(ctx.input_type(i));
  }
  w.bytes_written = byte_count(outs[0]);
  return w;
}

std::vector<Tensor> kernel_elementwise(const OpContext& ctx) {
  ScalarExprPtr e = node_scalar_expr(ctx);
  std::vector<const Tensor*> inputs;
  Tensor filler;
  for (size_t i = 0; i < ctx.num_inputs(); ++i) {
    if (ctx.input_value(i)) {
      inputs.push_back(ctx.input_value(i));
    } else {
      // An omitted optional input that the bound expression no longer reads: a scalar of
      // input 0's dtype keeps the compute type and the broadcast shape unchanged.
      filler = Tensor(ctx.input_value(0)->dtype(), {});
      inputs.push_back(&filler);
    }
  }
  DType out = ctx.def.infer(ctx)[0].dtype;
  if (ctx.def.name == "CastLike") inputs.resize(1);
  return {evaluate_elementwise(*e, inputs, out)};
}

struct Spec {
  std::string name;
  ScalarExprPtr expr;
  std::vector<AttrSpec> attrs = {};
  OutType out = OutType::Input0;
  InTypes accepts = InTypes::Numeric;
  int min_inputs = -1;  // default: the expression's input count
  int max_inputs = -1;  // default: min_inputs
  bool same_dtype = true;
  FusionClass fusion = FusionClass::Elementwise;
};

void add(OpTableBuilder& table, Spec s,
         std::function<ScalarExprPtr(const OpContext&)> for_node = nullptr) {
  OpDef d;
  d.name = s.name;
  int n = static_cast<int>(num_inputs(*s.expr));
  d.min_inputs = s.min_inputs >= 0 ? s.min_inputs : n;
  d.max_inputs = s.max_inputs != -1 ? s.max_inputs : (s.min_inputs >= 0 ? s.min_inputs : n);
  if (s.max_inputs == -2) d.max_inputs = -1;  // variadic
  d.attrs = std::move(s.attrs);
  d.fusion = s.fusion;
  OutType out = s.out;
  InTypes accepts = s.accepts;
  bool same = s.same_dtype;
  size_t first_same = s.name == "Where" ? 1 : 0;
  d.infer = [=](const OpContext& ctx) {
    return infer_elementwise(ctx, out, accepts, same, first_same);
  };
  d.work = work_elementwise;
  d.kernel = kernel_elementwise;
  d.scalar = std::move(s.expr);
  d.scalar_for_node = std::move(for_node);
  table.add(std::move(d));
}

AttrSpec float_attr(std::string name, double value) {
  return {std::move(name), AttrKind::Float, AttrValue{value}};
}
AttrSpec int_attr(std::string name, int64_t value) {
  return {std::move(name), AttrKind::Int, AttrValue{value}};
}

// Left fold of a binary op over all the node's inputs (Sum, Max, Min, Mean).
std::function<ScalarExprPtr(const OpContext&)> fold(ScalarOp o, bool mean) {
  return [o, mean](const OpContext& ctx) {
    ScalarExprPtr e = x(0);
    for (size_t i = 1; i < ctx.num_inputs(); ++i) e = op(o, e, x(static_cast<int64_t>(i)));
    if (mean) e = div(e, c(static_cast<double>(ctx.num_inputs())));
    return e;
  };
}

}  // namespace

void register_elementwise_ops(OpTableBuilder& table) {
  const double inf = std::numeric_limits<double>::infinity();
  ScalarExprPtr x0 = x(0), x1 = x(1);
  auto unary = [&](std::string name, ScalarExprPtr e, InTypes acc = InTypes::Floating,
                   std::vector<AttrSpec> attrs = {}) {
    add(table,
        {.name = std::move(name), .expr = std::move(e), .attrs = std::move(attrs), .accepts = acc});
  };
  auto binary = [&](std::string name, ScalarExprPtr e, InTypes acc = InTypes::Numeric,
                    OutType out = OutType::Input0) {
    add(table, {.name = std::move(name),
                .expr = std::move(e),
                .out = out,
                .accepts = acc,
                .fusion = FusionClass::Broadcast});
  };

  // Arithmetic. Div on integers truncates toward zero; Pow's exponent may have another dtype.
  binary("Add", add(x0, x1));
  binary("Sub", sub(x0, x1));
  binary("Mul", mul(x0, x1));
  binary("Div", div(x0, x1));
  add(table, {.name = "Pow",
              .expr = op(ScalarOp::Pow, x0, x1),
              .same_dtype = false,
              .fusion = FusionClass::Broadcast});
  // Mod: fmod=0 takes the sign of the divisor (integers only in ONNX), fmod=1 of the dividend.
  add(table, {.name = "Mod",
              .expr = select(attr("fmod"), op(ScalarOp::FMod, x0, x1), op(ScalarOp::Mod, x0, x1)),
              .attrs = {int_attr("fmod", 0)},
              .fusion = FusionClass::Broadcast});
  for (auto [name, o, mean] :
       {std::tuple{"Sum", ScalarOp::Add, false}, std::tuple{"Mean", ScalarOp::Add, true},
        std::tuple{"Max", ScalarOp::Max, false}, std::tuple{"Min", ScalarOp::Min, false}}) {
    ScalarExprPtr two = op(o, x0, x1);
    add(table,
        {.name = name,
         .expr = mean ? div(two, c(2)) : two,
         .min_inputs = 1,
         .max_inputs = -2,
         .fusion = FusionClass::Broadcast},
        fold(o, mean));
  }

  // Unary math.
  unary("Neg", neg(x0), InTypes::Numeric);
  unary("Abs", sx::abs(x0), InTypes::Numeric);
  unary("Sign", op(ScalarOp::Sign, x0), InTypes::Numeric);
  unary("Exp", sx::exp(x0));
  unary("Log", sx::log(x0));
  unary("Sqrt", sx::sqrt(x0));
  unary("Reciprocal", op(ScalarOp::Recip, x0));
  unary("Floor", op(ScalarOp::Floor, x0));
  unary("Ceil", op(ScalarOp::Ceil, x0));
  unary("Round", op(ScalarOp::Round, x0));
  for (auto [name, o] : {std::pair{"Erf", ScalarOp::Erf}, std::pair{"Tanh", ScalarOp::Tanh},
                         std::pair{"Sin", ScalarOp::Sin}, std::pair{"Cos", ScalarOp::Cos},
                         std::pair{"Tan", ScalarOp::Tan}, std::pair{"Asin", ScalarOp::Asin},
                         std::pair{"Acos", ScalarOp::Acos}, std::pair{"Atan", ScalarOp::Atan},
                         std::pair{"Sinh", ScalarOp::Sinh}, std::pair{"Cosh", ScalarOp::Cosh},
                         std::pair{"Asinh", ScalarOp::Asinh}, std::pair{"Acosh", ScalarOp::Acosh},
                         std::pair{"Atanh", ScalarOp::Atanh}}) {
    unary(name, op(o, x0));
  }

  // Activations.
  unary("Relu", sx::max(x0, c(0)), InTypes::Numeric);
  unary("Sigmoid", div(c(1), sx::add(c(1), sx::exp(neg(x0)))));
  unary("LeakyRelu", select(lt(x0, c(0)), mul(attr("alpha"), x0), x0), InTypes::Floating,
        {float_attr("alpha", 0.01)});
  unary("Elu", select(lt(x0, c(0)), mul(attr("alpha"), sub(sx::exp(x0), c(1))), x0),
        InTypes::Floating, {float_attr("alpha", 1.0)});
  unary("Selu",
        mul(attr("gamma"),
            select(le(x0, c(0)), sub(mul(attr("alpha"), sx::exp(x0)), attr("alpha")), x0)),
        InTypes::Floating,
        {float_attr("alpha", 1.67326319217681884765625),
         float_attr("gamma", 1.05070102214813232421875)});
  unary("Celu",
        sx::add(sx::max(c(0), x0),
                sx::min(c(0), mul(attr("alpha"), sub(sx::exp(div(x0, attr("alpha"))), c(1))))),
        InTypes::Floating, {float_attr("alpha", 1.0)});
  unary("HardSigmoid", sx::max(c(0), sx::min(c(1), sx::add(mul(attr("alpha"), x0), attr("beta")))),
        InTypes::Floating, {float_attr("alpha", 0.2), float_attr("beta", 0.5)});
  unary("HardSwish", mul(x0, sx::max(c(0), sx::min(c(1), sx::add(div(x0, c(6)), c(0.5))))));
  unary("Softplus", sx::log(sx::add(sx::exp(x0), c(1))));
  unary("Softsign", div(x0, sx::add(c(1), sx::abs(x0))));
  unary("ThresholdedRelu", select(gt(x0, attr("alpha")), x0, c(0)), InTypes::Floating,
        {float_attr("alpha", 1.0)});
  unary("Shrink",
        select(lt(x0, neg(attr("lambd"))), sx::add(x0, attr("bias")),
               select(gt(x0, attr("lambd")), sub(x0, attr("bias")), c(0))),
        InTypes::Numeric, {float_attr("bias", 0.0), float_attr("lambd", 0.5)});
  binary("PRelu", select(lt(x0, c(0)), mul(x1, x0), x0));

  // Clip: bounds from inputs 1 and 2 (opset >= 11) or attributes min/max (older); absent bounds
  // do not clip.
  add(table,
      {.name = "Clip",
       .expr = sx::min(sx::max(x0, x1), x(2)),
       .attrs = {{"min", AttrKind::Float, std::nullopt}, {"max", AttrKind::Float, std::nullopt}},
       .min_inputs = 1,
       .max_inputs = 3},
      [inf](const OpContext& ctx) {
        auto bound = [&](size_t input, const char* attr_name, double none) -> ScalarExprPtr {
          if (ctx.has_input(input)) return x(static_cast<int64_t>(input));
          if (ctx.has_attr(attr_name)) return c(ctx.attr_float(attr_name));
          return c(none);
        };
        return sx::min(sx::max(x(0), bound(1, "min", -inf)), bound(2, "max", inf));
      });

  // Comparisons and logic give bool.
  for (auto [name, o] : {std::pair{"Equal", ScalarOp::Eq}, std::pair{"Less", ScalarOp::Lt},
                         std::pair{"LessOrEqual", ScalarOp::Le}, std::pair{"Greater", ScalarOp::Gt},
                         std::pair{"GreaterOrEqual", ScalarOp::Ge}}) {
    binary(name, op(o, x0, x1), name == std::string("Equal") ? InTypes::Any : InTypes::Numeric,
           OutType::Bool);
  }
  for (auto [name, o] : {std::pair{"And", ScalarOp::And}, std::pair{"Or", ScalarOp::Or},
                         std::pair{"Xor", ScalarOp::Xor}}) {
    binary(name, op(o, x0, x1), InTypes::Bool, OutType::Bool);
  }
  add(table, {.name = "Not", .expr = op(ScalarOp::Not, x0), .accepts = InTypes::Bool});
  add(table, {.name = "IsNaN",
              .expr = op(ScalarOp::IsNaN, x0),
              .out = OutType::Bool,
              .accepts = InTypes::Floating});
  add(table, {.name = "IsInf",
              .expr = make(ScalarOp::And,
                           {op(ScalarOp::IsInf, x0),
                            make(ScalarOp::Or,
                                 {make(ScalarOp::And, {gt(x0, c(0)), attr("detect_positive")}),
                                  make(ScalarOp::And, {lt(x0, c(0)), attr("detect_negative")})})}),
              .attrs = {int_attr("detect_negative", 1), int_attr("detect_positive", 1)},
              .out = OutType::Bool,
              .accepts = InTypes::Floating});

  // Where(cond, a, b): a and b share a dtype, cond is bool.
  add(table, {.name = "Where",
              .expr = select(x0, x1, x(2)),
              .out = OutType::Input1,
              .accepts = InTypes::Any,
              .fusion = FusionClass::Broadcast});

  // Cast and CastLike: the identity on values; the conversion happens when the result is stored
  // in the target dtype (floats to integers truncate toward zero and saturate).
  add(table, {.name = "Cast",
              .expr = x0,
              // "to": an ONNX dtype code (or a dtype name, from C++); see cast_target().
              .attrs = {{"to", AttrKind::Int, std::nullopt, true}, int_attr("saturate", 1)},
              .out = OutType::CastTo,
              .accepts = InTypes::Any});
  add(table, {.name = "CastLike",
              .expr = x0,
              .attrs = {int_attr("saturate", 1)},
              .out = OutType::CastTo,
              .accepts = InTypes::Any,
              .min_inputs = 2,
              .same_dtype = false});
}

}  // namespace eqfuse::ir
