// TileSpec's field table: every row reaches the JSON form, equality, canonicalization, the baked
// constants and its bench names.
#include "fa4jit/codegen/baked_dims.h"
#include "fa4jit/codegen/heuristics.h"
#include "fa4jit/codegen/spec_fields.h"
#include "fa4jit/codegen/spec_io.h"

#include "expected_checks.h"

#include <catch2/catch.hpp>

#include <set>
#include <string>

using namespace fa4jit;

namespace {

// A value of the field's type other than `v` that the type can hold.
int otherValue(const TileField &f, int v) {
  switch (f.type) {
  case FieldType::Bool: return v ? 0 : 1;
  case FieldType::Int: return v + 1;
  case FieldType::Schedule: return v == 0 ? 1 : 0;
  case FieldType::KvStaging: return (v + 1) % 3;
  case FieldType::Ablation: return (v + 1) % 6;
  }
  return v;
}

KernelSpec wgmmaSpec() { return defaultAttentionSpec(Route::DirectP, 128, false, Target::Sm90a); }

} // namespace

TEST_CASE("every tile field round-trips through the canonical JSON and takes part in equality",
          "[codegen][spec]") {
  for (const TileField &f : tileFields()) {
    INFO(f.name);
    KernelSpec s = wgmmaSpec();
    const KernelSpec base = s;
    f.set(s.attention.tile, otherValue(f, f.get(s.attention.tile)));
    CHECK_FALSE(specsEqual(s, base));
    llvm::Expected<KernelSpec> back = parseSpec(toJson(s));
    REQUIRE_OK(back);
    if (f.type == FieldType::Schedule)
      continue; // (mma.sync: canonicalize resets the wgmma fields, checked below)
    CHECK(f.get(back->attention.tile) == f.get(canonicalize(s).attention.tile));
    CHECK(toJson(*back) == toJson(s));
  }
}

TEST_CASE("wgmma-only tile fields are reset off the wgmma schedule, the others kept", "[codegen][spec]") {
  const KernelSpec mma = withAttentionSchedule(wgmmaSpec(), AttentionSchedule::MmaSync);
  const TileSpec defaults;
  for (const TileField &f : tileFields()) {
    INFO(f.name);
    KernelSpec s = mma;
    const int changed = otherValue(f, f.get(defaults));
    if (f.type == FieldType::Schedule)
      continue;
    f.set(s.attention.tile, changed);
    const int canonical = f.get(canonicalize(s).attention.tile);
    CHECK(canonical == (f.wgmma_only ? f.get(defaults) : changed));
    const bool in_json = toJson(s).find(std::string("\"") + f.name + "\"") != std::string::npos;
    CHECK(in_json == !f.wgmma_only);
  }
}

TEST_CASE("each baked tile field is a constant of the generated config", "[codegen][spec]") {
  llvm::Expected<DimensionSplit> split = splitDimensions(wgmmaSpec());
  REQUIRE_OK(split);
  std::set<std::string> names;
  for (const BakedConstant &c : split->baked)
    names.insert(c.name);
  for (const TileField &f : tileFields()) {
    INFO(f.name);
    if (f.baked == FieldBaked::Never)
      CHECK(names.count(f.name) == 0);
    else if (f.type == FieldType::KvStaging)
      CHECK((names.count("kv_prewidened") == 1 && names.count("kv_tensor_map") == 1));
    else
      CHECK(names.count(f.name) == 1);
  }
}

TEST_CASE("bench names map back to their field and value, and no name is taken twice", "[codegen][spec]") {
  std::set<std::string> seen;
  for (const TileField &f : tileFields()) {
    for (int i = 0; i < 3; ++i) {
      const char *n = f.bench.names[i];
      if (!n)
        continue;
      INFO(n);
      CHECK(seen.insert(n).second);
      int value = -1;
      CHECK(benchVariantField(n, value) == &f);
      CHECK(value == (f.type == FieldType::Bool ? (i == 0 ? 1 : 0) : i));
    }
    if (f.bench.prefix) {
      int value = -1;
      const std::string hi = std::string(f.bench.prefix) + std::to_string(f.bench.hi);
      CHECK(benchVariantField(hi, value) == &f);
      CHECK(value == f.bench.hi);
      CHECK(benchVariantField(std::string(f.bench.prefix) + std::to_string(f.bench.hi + 1), value) == nullptr);
    }
  }
}
