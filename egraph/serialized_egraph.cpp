#include "egraph/serialized_egraph.h"

#include <cmath>
#include <fstream>
#include <sstream>
#include <unordered_map>
#include <unordered_set>

#include "support/error.h"

namespace eqfuse::egraph {
namespace {

using json = nlohmann::json;

// nlohmann's object keeps keys sorted; the file's node order matters (tie-breaking), and an
// ordered_json is quadratic to build on 50k nodes. So parse into a plain json while recording
// the order of the keys of the "nodes" object.
class OrderRecordingParser {
 public:
  using number_integer_t = json::number_integer_t;
  using number_unsigned_t = json::number_unsigned_t;
  using number_float_t = json::number_float_t;
  using string_t = json::string_t;
  using binary_t = json::binary_t;

  explicit OrderRecordingParser(json& root) : dom_(root) {}

  std::vector<std::string> node_order;
  std::string error;

  bool null() { return dom_.null(); }
  bool boolean(bool v) { return dom_.boolean(v); }
  bool number_integer(number_integer_t v) { return dom_.number_integer(v); }
  bool number_unsigned(number_unsigned_t v) { return dom_.number_unsigned(v); }
  bool number_float(number_float_t v, const string_t& s) { return dom_.number_float(v, s); }
  bool string(string_t& v) { return dom_.string(v); }
  bool binary(binary_t& v) { return dom_.binary(v); }
  bool start_object(std::size_t n) {
    ++depth_;
    return dom_.start_object(n);
  }
  bool end_object() {
    --depth_;
    return dom_.end_object();
  }
  bool start_array(std::size_t n) {
    ++depth_;
    return dom_.start_array(n);
  }
  bool end_array() {
    --depth_;
    return dom_.end_array();
  }
  bool key(string_t& k) {
    if (depth_ == 1) top_key_ = k;
    if (depth_ == 2 && top_key_ == "nodes") node_order.push_back(k);
    return dom_.key(k);
  }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception& e) {
    error = e.what();
    return false;
  }

 private:
  nlohmann::detail::json_sax_dom_parser<json> dom_;
  int depth_ = 0;
  std::string top_key_;
};

// Ids are strings in egraph-serialize, but some writers emit numbers.
std::string id_string(const json& value, std::string_view what, std::string_view source) {
  if (value.is_string()) return value.get<std::string>();
  if (value.is_number_integer()) return std::to_string(value.get<long long>());
  if (value.is_number_unsigned()) return std::to_string(value.get<unsigned long long>());
  fail(std::string(source) + ": " + std::string(what) + " must be a string or integer id, got " +
       value.dump());
}

}  // namespace

SerializedEGraph parse_serialized_egraph(std::string_view text, std::string_view source_name) {
  const std::string source(source_name);
  json root;
  OrderRecordingParser parser(root);
  bool ok =
      json::sax_parse(text.begin(), text.end(), &parser, nlohmann::detail::input_format_t::json,
                      /*strict=*/true);
  if (!ok) fail(source + ": not valid JSON: " + parser.error);
  if (!root.is_object()) fail(source + ": expected a JSON object with \"nodes\"");
  auto nodes_it = root.find("nodes");
  if (nodes_it == root.end() || !nodes_it->is_object())
    fail(source + ": missing \"nodes\" object (egraph-serialize format)");
  const json& nodes = *nodes_it;
  if (parser.node_order.size() != nodes.size()) fail(source + ": duplicate node ids in \"nodes\"");

  SerializedEGraph out;
  out.nodes.reserve(nodes.size());
  for (const std::string& id : parser.node_order) {
    const json& n = nodes.at(id);
    const std::string where = source + ": node " + id;
    if (!n.is_object()) fail(where + ": expected an object");
    SerializedNode node;
    node.id = id;
    auto op = n.find("op");
    if (op == n.end() || !op->is_string()) fail(where + ": missing string \"op\"");
    node.op = op->get<std::string>();
    auto eclass = n.find("eclass");
    if (eclass == n.end()) fail(where + ": missing \"eclass\"");
    node.eclass = id_string(*eclass, "\"eclass\"", where);
    if (auto children = n.find("children"); children != n.end()) {
      if (!children->is_array()) fail(where + ": \"children\" must be an array");
      node.children.reserve(children->size());
      for (const json& c : *children) node.children.push_back(id_string(c, "child", where));
    }
    if (auto cost = n.find("cost"); cost != n.end() && !cost->is_null()) {
      if (!cost->is_number()) fail(where + ": \"cost\" must be a number");
      node.cost = cost->get<double>();
      if (!std::isfinite(node.cost)) fail(where + ": \"cost\" must be finite");
    }
    if (auto origin = n.find("origin"); origin != n.end() && !origin->is_null()) {
      if (!origin->is_string()) fail(where + ": \"origin\" must be a string");
      node.origin = origin->get<std::string>();
    }
    out.nodes.push_back(std::move(node));
  }

  std::unordered_set<std::string_view> ids, classes;
  for (const auto& n : out.nodes) {
    ids.insert(n.id);
    classes.insert(n.eclass);
  }
  for (const auto& n : out.nodes)
    for (const auto& c : n.children)
      if (!ids.count(c)) fail(source + ": node " + n.id + " has unknown child node " + c);

  if (auto roots = root.find("root_eclasses"); roots != root.end()) {
    if (!roots->is_array()) fail(source + ": \"root_eclasses\" must be an array");
    for (const json& r : *roots) {
      std::string id = id_string(r, "root e-class", source);
      if (!classes.count(id)) fail(source + ": root e-class " + id + " has no e-node");
      out.root_eclasses.push_back(std::move(id));
    }
  }
  if (auto cd = root.find("class_data"); cd != root.end()) {
    if (!cd->is_object() && !cd->is_null()) fail(source + ": \"class_data\" must be an object");
    out.class_data = *cd;
  }
  return out;
}

SerializedEGraph read_serialized_egraph(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) fail(path.string() + ": cannot open e-graph file");
  std::ostringstream buffer;
  buffer << in.rdbuf();
  if (in.bad()) fail(path.string() + ": cannot read e-graph file");
  return parse_serialized_egraph(buffer.str(), path.string());
}

std::string serialized_egraph_to_json(const SerializedEGraph& egraph) {
  // Written by hand, not through an ordered json object, to keep node order in linear time.
  std::string out = "{\n  \"nodes\": {";
  bool first = true;
  for (const auto& n : egraph.nodes) {
    json body = {{"op", n.op}, {"children", n.children}, {"eclass", n.eclass}, {"cost", n.cost}};
    if (!n.origin.empty()) body["origin"] = n.origin;
    out += first ? "\n    " : ",\n    ";
    first = false;
    out += json(n.id).dump();
    out += ": ";
    out += body.dump();
  }
  out += "\n  },\n  \"root_eclasses\": ";
  out += json(egraph.root_eclasses).dump();
  if (!egraph.class_data.is_null()) {
    out += ",\n  \"class_data\": ";
    out += egraph.class_data.dump();
  }
  out += "\n}\n";
  return out;
}

void write_serialized_egraph(const SerializedEGraph& egraph, const std::filesystem::path& path) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) fail(path.string() + ": cannot open for writing");
  out << serialized_egraph_to_json(egraph);
  out.close();
  if (!out) fail(path.string() + ": write failed");
}

}  // namespace eqfuse::egraph
