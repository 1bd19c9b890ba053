// `eqfuse viz INPUT --out FILE.svg|.png|.dot [--optimize] [--device NAME|FILE] [--dim NAME=SIZE
// ...] [--no-weights] [--class ID] [--depth N] [--no-choice]`: draws a model (an ONNX file; its
// fused kernels as coloured boxes around the ops they replace, with predicted times) or an
// e-graph (egraph-serialize JSON; e-classes as clusters, the extracted term highlighted, or the
// neighbourhood of one e-class). SVG and PNG need Graphviz's `dot`. Exit 0 written, 2 bad input.
#include <fmt/format.h>

#include <iostream>
#include <memory>

#include "cost/cost_model.h"
#include "egraph/serialized_egraph.h"
#include "frontend/onnx_import.h"
#include "optimizer/optimize.h"
#include "support/error.h"
#include "tools/command.h"
#include "tools/progress_line.h"
#include "tools/random_inputs.h"
#include "viz/egraph_dot.h"
#include "viz/graph_dot.h"
#include "viz/render.h"

namespace eqfuse::tools {
namespace {

struct VizArgs {
  std::string input, out, device = "h200", focus;
  std::vector<std::string> dims;
  size_t depth = 2;
  bool optimize = false, no_weights = false, no_choice = false;
};

int run_viz(const VizArgs& args) {
  std::string dot;
  std::string what;
  if (args.input.size() > 5 && args.input.substr(args.input.size() - 5) == ".json") {
    egraph::SerializedEGraph egraph = egraph::read_serialized_egraph(args.input);
    viz::EGraphDotOptions options;
    options.focus_class = args.focus;
    options.depth = args.depth;
    if (!args.no_choice) options.chosen = viz::extracted_nodes(egraph);
    dot = viz::egraph_dot(egraph, options);
    what = fmt::format("{} e-nodes", egraph.nodes.size());
  } else {
    if (!args.focus.empty()) fail("--class draws an e-graph (a .json file), not a model");
    ir::Graph graph = frontend::import_onnx(args.input);
    cost::CostOptions cost_options;
    cost_options.dim_bindings = parse_dim_options(args.dims);
    if (args.optimize) {
      optimizer::OptimizeOptions options;
      options.device = args.device;
      options.dim_bindings = cost_options.dim_bindings;
      ProgressLine line;
      graph = optimizer::optimize(graph, options,
                                  [&line](const std::string& phase, const std::string& what) {
                                    line.update("[" + phase + "] " + what);
                                  })
                  .graph;
    }
    cost::CostModel model(cost::DeviceProfile::load(args.device), cost_options);
    viz::GraphDotOptions options;
    options.cost = &model;
    options.weights = !args.no_weights;
    dot = viz::graph_dot(graph, options);
    what =
        fmt::format("{} nodes, {} kernels", graph.nodes().size(), optimizer::count_kernels(graph));
  }
  viz::write_picture(dot, args.out);
  std::cout << fmt::format("wrote {} ({})\n", args.out, what);
  return 0;
}

RegisterCommand viz_command{
    {"viz", "Draw a model with its fused kernels, or an e-graph, as SVG, PNG or dot",
     [](CLI::App& app) {
       auto args = std::make_shared<VizArgs>();
       app.add_option("input", args->input, "ONNX model, or an e-graph (egraph-serialize .json)")
           ->required();
       app.add_option("--out,-o", args->out, "FILE.svg, FILE.png (Graphviz's dot) or FILE.dot")
           ->required();
       app.add_flag("--optimize", args->optimize, "model: optimize it first, then draw the result");
       app.add_option("--device", args->device,
                      "model: the device profile for predicted times (default h200)");
       app.add_option("--dim", args->dims,
                      "model: NAME=SIZE for a symbolic dim in predicted times (repeatable)");
       app.add_flag("--no-weights", args->no_weights, "model: leave the weights out");
       app.add_option("--class", args->focus,
                      "e-graph: draw only the neighbourhood of this e-class");
       app.add_option("--depth", args->depth,
                      "e-graph: child or parent steps around --class (default 2)");
       app.add_flag("--no-choice", args->no_choice,
                    "e-graph: do not highlight the term DAG extraction picks");
       app.footer(
           "Examples:\n  eqfuse viz model.onnx --out before.svg\n"
           "  eqfuse viz model.onnx --optimize --out after.svg\n"
           "  eqfuse saturate --rules r.rules --term \"(* (+ a b) 1)\" --dump eg.json\n"
           "  eqfuse viz eg.json --out eg.svg --class 3 --depth 1");
       return CommandMain([args] { return run_viz(*args); });
     }}};

}  // namespace
}  // namespace eqfuse::tools
