// JSON from files fa4jit does not control is bounded before it is parsed: nesting deep enough to
// overflow the parser's recursion is an error, never a crash.
#include "fa4jit/codegen/json_limits.h"
#include "fa4jit/codegen/spec_io.h"

#include "expected_checks.h"

#include <catch2/catch.hpp>

#include <string>

using namespace fa4jit;

namespace {
std::string nested(unsigned levels) { return std::string(levels, '[') + std::string(levels, ']'); }
} // namespace

TEST_CASE("JSON nested deeper than the bound is an error, not a stack overflow", "[codegen][json]") {
  auto deep = parseJsonBounded(std::string(100000, '['), "probe");
  REQUIRE_ERR(deep);
  CHECK_THAT(llvm::toString(deep.takeError()), Catch::Contains("probe: JSON nested deeper than 64 levels"));
  auto at_bound = parseJsonBounded(nested(kMaxJsonDepth), "probe");
  REQUIRE_OK(at_bound);
  auto past = parseJsonBounded(nested(kMaxJsonDepth + 1), "probe");
  REQUIRE_ERR(past);
  llvm::consumeError(past.takeError());
  // Brackets inside strings (escaped quotes too) are text, not nesting.
  auto strings = parseJsonBounded("{\"a\":\"" + std::string(1000, '[') + "\\\"[[[\"}", "probe");
  REQUIRE_OK(strings);
}

TEST_CASE("a spec file of deep nesting is refused", "[codegen][json]") {
  auto spec = parseSpec("{\"attention\":" + std::string(50000, '[') + "}");
  REQUIRE_ERR(spec);
  CHECK_THAT(llvm::toString(spec.takeError()), Catch::Contains("nested deeper"));
}
