#include "egraph/serialized_egraph.h"

#include <catch2/catch.hpp>
#include <filesystem>

#include "support/error.h"

using eqfuse::Error;
using eqfuse::egraph::parse_serialized_egraph;
using eqfuse::egraph::read_serialized_egraph;
using eqfuse::egraph::serialized_egraph_to_json;
using eqfuse::egraph::write_serialized_egraph;

TEST_CASE("serialized e-graph: nodes in file order, ids as strings, defaults", "[serialized]") {
  auto g = parse_serialized_egraph(R"({
    "nodes": {
      "z": {"op": "mul", "children": ["b", "a"], "eclass": 7, "cost": 2.5},
      "b": {"op": "2", "children": [], "eclass": "c2"},
      "a": {"op": "x", "eclass": 3, "cost": 0}
    },
    "root_eclasses": [7],
    "class_data": {"7": {"type": "f32"}},
    "comment": "ignored"
  })");
  REQUIRE(g.nodes.size() == 3);
  CHECK(g.nodes[0].id == "z");
  CHECK(g.nodes[1].id == "b");
  CHECK(g.nodes[2].id == "a");
  CHECK(g.nodes[0].eclass == "7");
  CHECK(g.nodes[0].children == std::vector<std::string>{"b", "a"});
  CHECK(g.nodes[0].cost == 2.5);
  CHECK(g.nodes[1].cost == 1.0);  // absent cost counts 1
  CHECK(g.nodes[2].children.empty());
  CHECK(g.root_eclasses == std::vector<std::string>{"7"});
  CHECK(g.class_data["7"]["type"] == "f32");
}

TEST_CASE("serialized e-graph: write and read back", "[serialized]") {
  auto g = parse_serialized_egraph(R"({"nodes": {
      "2": {"op": "f", "children": ["1", "1"], "eclass": "b", "cost": 0.004863999783992767},
      "1": {"op": "x", "children": [], "eclass": "a", "cost": 1e13}},
    "root_eclasses": ["b"]})");
  auto path = std::filesystem::temp_directory_path() / "eqfuse_serialized_roundtrip.json";
  write_serialized_egraph(g, path);
  auto h = read_serialized_egraph(path);
  std::filesystem::remove(path);
  REQUIRE(h.nodes.size() == 2);
  CHECK(h.nodes[0].id == "2");
  CHECK(h.nodes[0].cost == g.nodes[0].cost);  // doubles survive exactly
  CHECK(h.nodes[1].cost == 1e13);
  CHECK(h.root_eclasses == g.root_eclasses);
  CHECK(h.class_data.is_null());
  CHECK(serialized_egraph_to_json(h) == serialized_egraph_to_json(g));
}

TEST_CASE("serialized e-graph: malformed input is a BadInput error", "[serialized]") {
  auto bad = [](const char* text) {
    try {
      parse_serialized_egraph(text, "t.json");
    } catch (const Error& e) {
      CHECK(e.kind() == Error::Kind::BadInput);
      CHECK(std::string(e.what()).find("t.json") != std::string::npos);
      return true;
    }
    return false;
  };
  CHECK(bad("{"));
  CHECK(bad("[]"));
  CHECK(bad(R"({"root_eclasses": []})"));
  CHECK(bad(R"({"nodes": {"a": {"children": [], "eclass": "x"}}})"));                // no op
  CHECK(bad(R"({"nodes": {"a": {"op": "f", "children": []}}})"));                    // no eclass
  CHECK(bad(R"({"nodes": {"a": {"op": "f", "children": ["q"], "eclass": "x"}}})"));  // bad child
  CHECK(bad(R"({"nodes": {"a": {"op": "f", "eclass": "x", "cost": "high"}}})"));
  CHECK(bad(R"({"nodes": {"a": {"op": "f", "eclass": "x"}}, "root_eclasses": ["y"]})"));
  CHECK(bad(R"({"nodes": {"a": {"op": "f", "eclass": "x"}, "a": {"op": "g", "eclass": "x"}}})"));
  CHECK_THROWS_AS(read_serialized_egraph("/nonexistent/eqfuse.json"), Error);
}
