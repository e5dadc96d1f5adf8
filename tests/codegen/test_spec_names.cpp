#include "fa4jit/codegen/spec.h"

#include <catch2/catch.hpp>
#include <string>

TEST_CASE("spec enums have the names the CLI and JSON use", "[codegen]") {
  CHECK(std::string(fa4jit::toString(fa4jit::Target::Sm90a)) == "sm_90a");
  CHECK(std::string(fa4jit::toString(fa4jit::Target::Sm100a)) == "sm_100a");
  CHECK(std::string(fa4jit::toString(fa4jit::Route::DirectP)) == "directp");
  CHECK(std::string(fa4jit::toString(fa4jit::ClassifierKind::Mixed)) == "mixed");
}
