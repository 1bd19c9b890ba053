#pragma once
// The e-class analysis of tensor e-graphs: each class's TensorType (dtype and shape, dims
// possibly symbolic), or the types of a tuple-valued class (a multi-output op, read through
// Proj), and, for small tensors, the constant value. Rule conditions read it
// (rules/condition.h), and the appliers of compiled rules (optimizer/rule_rewrites.h) check
// against it that a right-hand side type-checks and keeps the type of what it replaces.
//
// Types come from the op table's inference over the children's types; a node whose inference
// fails gets no type (`valid == false`) rather than throwing into the runner: a class is as
// well-typed as its best node, and merge keeps the known data. Constant values come from the
// graph's weights and from folding small nodes whose inputs are all constant.
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "egraph/egraph.h"
#include "ir/attribute.h"
#include "ir/graph.h"
#include "ir/op_table.h"

namespace eqfuse::optimizer {

// Leaf and special op names of the tensor language, beside the op table's names.
inline constexpr const char* kInputOp = "Input";    // (Input :name "x")
inline constexpr const char* kWeightOp = "Weight";  // (Weight :name "w")
inline constexpr const char* kNoneOp = "None";      // an omitted optional input
// Nodes the e-graph keeps but rules must not touch (opaque ops, ops used in a way the tensor
// language cannot express) carry this attribute naming the original node.
inline constexpr const char* kNodeKey = "#node";

// Constants up to this many elements carry their value in the analysis.
inline constexpr int64_t kMaxConstantElements = 64;

struct TensorData {
  bool valid = false;
  bool tuple = false;
  bool none = false;                        // the class of an omitted optional input
  std::vector<ir::TensorType> types;        // one, or one per output of a tuple
  std::shared_ptr<const ir::Tensor> value;  // known small constant (not for tuples)
  // Computed from weights alone (some node of the class is): folded at optimize time, so it
  // costs nothing at run time whatever its size.
  bool constant = false;
  const ir::TensorType* type() const { return valid && !tuple ? &types[0] : nullptr; }
};

class TensorAnalysis : public egraph::Analysis {
 public:
  // What leaves and kept nodes mean: registered (by optimizer/tensor_egraph.cpp) before the
  // e-node that names them is added.
  struct Leaf {
    ir::TensorType type;
    std::shared_ptr<const ir::Tensor> value;  // weights' data when small (or always, see below)
  };
  struct KeptNode {
    ir::Node node;                      // op_type, domain, attrs (inputs/outputs unused)
    std::vector<ir::TensorType> types;  // its output types as the graph had them
  };
  void add_input(const std::string& name, ir::TensorType type);
  void add_weight(const std::string& name, ir::TensorType type,
                  std::shared_ptr<const ir::Tensor> data);
  void add_kept_node(const std::string& key, KeptNode node);
  const KeptNode* kept_node(const std::string& key) const;

  // The data of a class (pass a canonical id: egraph.find(c)).
  const TensorData& data(egraph::EClassId c) const;
  // The ir::Attributes of an e-node's payload for op `def` (decoded by the schema's kinds;
  // cached). nullopt when a value does not decode.
  std::optional<ir::Attributes> attributes(egraph::AttrId attrs, const ir::OpDef& def) const;
  // The original attributes of payloads built from a graph (tensor-valued ones included).
  void remember_attributes(egraph::AttrId attrs, ir::Attributes value);

  // An e-node of an op-table op as the op table sees it (ir::TermApplication: the one typing of
  // a term of the tensor language), with whether every child is a known constant. Read by
  // inference (compute) and by the optimizer's cost of an e-node. nullopt for leaves, Proj, kept
  // nodes, ops without an entry, undecodable attributes, a malformed application and children
  // without a type.
  struct OpView {
    ir::TermApplication app;
    bool all_constant = true;
  };
  std::optional<OpView> op_view(const egraph::EGraph& egraph, egraph::NodeId n) const;
  // The kept node (an opaque op) that e-node `n` stands for, or nullptr.
  const KeptNode* kept_node_of(const egraph::EGraph& egraph, egraph::NodeId n) const;

  // The data a node would give its class (what make computes), without storing it.
  TensorData compute(const egraph::EGraph& egraph, egraph::NodeId n) const;

  void make(const egraph::EGraph& egraph, egraph::NodeId n) override;
  egraph::DidMerge merge(egraph::EClassId into, egraph::EClassId from) override;
  bool join(const egraph::EGraph& egraph, egraph::EClassId c, egraph::NodeId n) override;

 private:
  std::string leaf_name(egraph::AttrId attrs) const;
  std::vector<TensorData> data_;
  std::unordered_map<std::string, Leaf> inputs_, weights_;
  std::unordered_map<std::string, KeptNode> kept_;
  std::unordered_map<egraph::AttrId, ir::Attributes> remembered_;
  mutable std::mutex cache_mutex_;
  mutable std::unordered_map<uint64_t, std::optional<ir::Attributes>> decoded_;
};

}  // namespace eqfuse::optimizer
