#include "support/error.h"

#include <catch2/catch.hpp>

using eqfuse::Error;

TEST_CASE("an error at a source location shows file:line:col and a caret") {
  Error e({"rules/a.rules", 3, 7}, "expected ')'", "(rewrite x (Add ?a");
  std::string text = e.what();
  CHECK(text.find("rules/a.rules:3:7: error: expected ')'") == 0);
  CHECK(text.find("\n  (rewrite x (Add ?a\n        ^") != std::string::npos);
  CHECK(e.exit_code() == 2);
}

TEST_CASE("error kinds map to the documented exit codes") {
  CHECK(Error("x", Error::Kind::CheckFailed).exit_code() == 1);
  CHECK(Error("x", Error::Kind::BadInput).exit_code() == 2);
  CHECK(Error("x", Error::Kind::Unsupported).exit_code() == 3);
}
