// Symbolic integers (ir/sym_int.h): canonical forms, the simplifications shape inference relies
// on, evaluation under a binding, and dims built from them.
#include "ir/sym_int.h"

#include <catch2/catch.hpp>

#include "ir/shape.h"

using namespace eqfuse::ir;

TEST_CASE("SymInt keeps one canonical form per polynomial", "[fast]") {
  SymInt b = SymInt::symbol("batch"), s = SymInt::symbol("seq");
  CHECK((b * SymInt(64)).str() == "batch*64");
  CHECK((SymInt(64) * b) == (b * SymInt(64)));
  CHECK((b * s).str() == (s * b).str());
  CHECK((b * s).str() == "batch*seq");
  CHECK((b + SymInt(1)).str() == "batch+1");
  CHECK((b - SymInt(1)).str() == "batch-1");
  CHECK((b - b).constant() == 0);
  CHECK((b + s - b) == s);
  CHECK((SymInt(3) * SymInt(4)).constant() == 12);
  CHECK(SymInt::unknown().str() == "?");
  CHECK(!(b + SymInt::unknown()).is_known());
}

TEST_CASE("SymInt divides what divides exactly and keeps the rest as an atom", "[fast]") {
  SymInt b = SymInt::symbol("batch"), s = SymInt::symbol("seq");
  CHECK(floor_div(b * SymInt(64), SymInt(64)) == b);
  CHECK(floor_div(b * SymInt(64), SymInt(16)) == b * SymInt(4));
  CHECK(floor_div(b * s * SymInt(8), s) == b * SymInt(8));
  CHECK(floor_div(b * SymInt(4) + SymInt(3), SymInt(4)) == b);  // (4b+3)/4 = b
  CHECK(floor_div(s - SymInt(1), SymInt(2)).str() == "(seq-1)/2");
  CHECK(ceil_div(s, SymInt(2)).str() == "(seq+1)/2");
  CHECK(mod(b * SymInt(6) + SymInt(5), SymInt(3)).constant() == 2);
  CHECK(floor_div(SymInt(-7), SymInt(2)).constant() == -4);
  CHECK(!floor_div(b, SymInt(0)).is_known());
}

TEST_CASE("SymInt min and max decide what holds for every size >= 1", "[fast]") {
  SymInt b = SymInt::symbol("batch");
  CHECK(sym_max(b - SymInt(1), SymInt(0)) == b - SymInt(1));
  CHECK(sym_min(b + SymInt(2), b) == b);
  CHECK(sym_min(SymInt(64), b).str() == "min(64,batch)");
  CHECK(sym_min(b, SymInt(64)) == sym_min(SymInt(64), b));
  CHECK(surely_greater(b * SymInt(6), b * SymInt(4)));
  CHECK(!surely_greater(b, SymInt(1)));
  CHECK(surely_at_least(b, SymInt(1)));
}

TEST_CASE("SymInt evaluates under a binding", "[fast]") {
  SymInt b = SymInt::symbol("batch"), s = SymInt::symbol("seq");
  std::map<std::string, int64_t> at{{"batch", 5}, {"seq", 7}};
  CHECK((b * SymInt(64)).evaluate(at) == 320);
  CHECK(floor_div(s - SymInt(1), SymInt(2)).evaluate(at) == 3);
  CHECK(sym_min(SymInt(4), s).evaluate(at) == 4);
  CHECK(mod(s, SymInt(4)).evaluate(at) == 3);
  CHECK(!(b * s).evaluate({{"batch", 2}}));
  CHECK((b * s + floor_div(b, s)).symbols() == std::vector<std::string>{"batch", "seq"});
}

TEST_CASE("Dims made from SymInts are static, symbolic or unknown", "[fast]") {
  SymInt b = SymInt::symbol("batch");
  CHECK(Dim::from_sym(SymInt(3)) == Dim(3));
  CHECK(Dim::from_sym(b) == Dim::symbol("batch"));
  Dim d = Dim::from_sym(b * SymInt(64));
  CHECK(!d.is_static());
  CHECK(d.str() == "batch*64");
  CHECK(d.symbol_name() == "batch*64");
  CHECK(d.evaluate({{"batch", 2}}) == 128);
  CHECK(d.sym() == b * SymInt(64));
  CHECK(Dim::from_sym(SymInt(-1)) == Dim::unknown());
  CHECK(Dim::from_sym(SymInt::unknown()) == Dim::unknown());
  CHECK(Dim::symbol("n").sym() == SymInt::symbol("n"));
  CHECK(Dim(4).sym().constant() == 4);
}
