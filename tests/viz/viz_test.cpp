// viz/: the dot text of models (kernels as clusters around their ops) and of e-graphs (e-classes
// as clusters, the neighbourhood of one e-class, the extracted choice), and writing pictures.
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>

#include "frontend/onnx_import.h"
#include "ir/builder.h"
#include "optimizer/optimize.h"
#include "support/error.h"
#include "viz/dot_text.h"
#include "viz/egraph_dot.h"
#include "viz/graph_dot.h"
#include "viz/render.h"

using namespace eqfuse;
namespace fs = std::filesystem;

namespace {

size_t count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

ir::Graph mlp() {
  return frontend::import_onnx(fs::path(EQFUSE_SOURCE_DIR) / "examples/models/mlp/model.onnx");
}

// Two classes: the root a+b (also b+a), and the leaves.
const char* kEGraph = R"({"nodes": {
  "a": {"op": "a", "children": [], "eclass": "1", "cost": 1},
  "b": {"op": "b", "children": [], "eclass": "2", "cost": 1},
  "ab": {"op": "+", "children": ["a", "b"], "eclass": "3", "cost": 2},
  "ba": {"op": "+", "children": ["b", "a"], "eclass": "3", "cost": 1},
  "m": {"op": "*", "children": ["ab", "ab"], "eclass": "4", "cost": 1}},
  "root_eclasses": ["4"]})";

}  // namespace

TEST_CASE("a model's picture draws each fused kernel as a cluster around its body's ops") {
  ir::Graph before = mlp();
  cost::CostModel model(cost::DeviceProfile::load("h200"));
  viz::GraphDotOptions options;
  options.cost = &model;
  std::string dot = viz::graph_dot(before, options);
  CHECK(count(dot, "subgraph cluster_") == 0);
  CHECK(dot.find("LayerNormalization") != std::string::npos);
  CHECK(dot.find("f32[8,128,256]") != std::string::npos);  // edges carry types
  CHECK(dot.find(" ms") != std::string::npos);             // predicted times

  optimizer::OptimizeOptions opt;
  opt.verify = false;
  ir::Graph after = optimizer::optimize(before, opt).graph;
  size_t kernels = 0;
  for (const ir::Node& n : after.nodes()) kernels += n.op_type == "Kernel";
  REQUIRE(kernels > 0);
  std::string fused = viz::graph_dot(after, options);
  CHECK(count(fused, "subgraph cluster_k") == kernels);
  std::vector<std::string> names = after.unique_node_names();
  for (ir::NodeId n = 0; n < after.nodes().size(); ++n)
    if (after.node(n).op_type == "Kernel")
      CHECK(fused.find("\"" + names[n] + ": ") != std::string::npos);
  // The ops a kernel replaced are still drawn, inside it.
  CHECK(fused.find("\"Erf\"") != std::string::npos);
  CHECK(fused.find("style=dashed") != std::string::npos);

  viz::GraphDotOptions bare;
  bare.weights = false;
  CHECK(viz::graph_dot(after, bare).find("shape=note") == std::string::npos);
}

TEST_CASE("an e-graph's picture: clusters, the choice, and the neighbourhood of one e-class") {
  egraph::SerializedEGraph g = egraph::parse_serialized_egraph(kEGraph, "test");
  std::vector<std::string> chosen = viz::extracted_nodes(g);
  CHECK(std::find(chosen.begin(), chosen.end(), "ba") != chosen.end());  // the cheaper +
  CHECK(std::find(chosen.begin(), chosen.end(), "ab") == chosen.end());

  viz::EGraphDotOptions all;
  all.chosen = chosen;
  std::string dot = viz::egraph_dot(g, all);
  CHECK(count(dot, "subgraph cluster_c") == 4);
  CHECK(dot.find("e-class 4 (root)") != std::string::npos);
  CHECK(count(dot, viz::kChosenColour) == chosen.size());
  CHECK(dot.find("stub") == std::string::npos);

  viz::EGraphDotOptions near;
  near.focus_class = "4";
  near.depth = 1;
  std::string part = viz::egraph_dot(g, near);
  CHECK(count(part, "subgraph cluster_c") == 2);           // 4 and its child 3
  CHECK(part.find("e-class 1 ...") != std::string::npos);  // stubs for what lies beyond
  CHECK(part.find("e-class 2 ...") != std::string::npos);

  near.focus_class = "99";
  CHECK_THROWS_WITH(viz::egraph_dot(g, near), Catch::Contains("no such e-class"));
  viz::EGraphDotOptions small;
  small.max_classes = 3;
  CHECK_THROWS_WITH(viz::egraph_dot(g, small), Catch::Contains("--class ID --depth N"));
}

TEST_CASE("pictures are written as dot text or rendered, by extension") {
  fs::path dir = fs::temp_directory_path() / "eqfuse_viz_test";
  fs::create_directories(dir);
  std::string dot = "digraph g { a -> b; }\n";
  viz::write_picture(dot, dir / "g.dot");
  std::ifstream in(dir / "g.dot");
  std::string back((std::istreambuf_iterator<char>(in)), {});
  CHECK(back == dot);
  CHECK_THROWS_WITH(viz::write_picture(dot, dir / "g.txt"), Catch::Contains(".svg, .png or .dot"));
  CHECK_THROWS_WITH(viz::write_picture(dot, dir / "no/such/dir/g.dot"),
                    Catch::Contains("cannot write"));
  if (std::system("command -v dot >/dev/null 2>&1") == 0) {
    viz::write_picture(dot, dir / "g.svg");
    std::ifstream svg(dir / "g.svg");
    std::string text((std::istreambuf_iterator<char>(svg)), {});
    CHECK(text.find("<svg") != std::string::npos);
    CHECK(text.find("</svg>") != std::string::npos);
  }
  fs::remove_all(dir);
}
