#pragma once
// The field table of TileSpec: one row per knob of the attention kernel's tiles and schedule. The
// canonical JSON (spec_io), equality, canonicalization, the generated config struct (baked_dims)
// and `fa4jit bench --variants` names all walk this table, so a new knob is one row here plus the
// kernel code that reads its baked constant.
//
// Row order is the order of the keys in the canonical JSON's "tile" object, which every spec hash
// and cache key depends on: append new rows, never reorder.
#include <cstdint>
#include <string>

#include "fa4jit/codegen/spec.h"
#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"

namespace fa4jit {

// How a field's value is spelled (in JSON, in the generated source) and parsed.
enum class FieldType : uint8_t { Int, Bool, Schedule, KvStaging, Ablation };

// Which generated config structs carry a field as a constant.
enum class FieldBaked : uint8_t {
  Never, // it picks the kernel template itself (the emitter), no constant
  Every, // every attention kernel's
  Wgmma, // the wgmma kernel's only
};

// When the canonical JSON writes a field. Fields introduced after specs were first hashed are
// written only when set, so that every spec that does not use them keeps its hash (and cache key).
enum class FieldJson : uint8_t { Always, UnlessDefault };

// `fa4jit bench --variants` names that set a field: a Bool field takes names[0] for true and
// names[1] for false; an enum field names[i] for value i; an Int field `prefix` followed by a value
// in [lo, hi] (e.g. "keys128").
struct BenchNames {
  const char *names[3] = {nullptr, nullptr, nullptr};
  const char *prefix = nullptr;
  int lo = 0, hi = 0;
};

struct TileField {
  const char *name; // JSON key under attention.tile, and the generated config member (but KvStaging)
  FieldType type;
  // The field means something to the wgmma schedule only: canonicalize() resets it to its
  // default on other schedules and the canonical JSON omits it there.
  bool wgmma_only;
  FieldBaked baked;
  FieldJson json;
  int (*get)(const TileSpec &);
  void (*set)(TileSpec &, int);
  const char *note; // what the value means, written beside the baked constant
  BenchNames bench;
};

// Every TileSpec field, in canonical JSON order.
llvm::ArrayRef<TileField> tileFields();

// The field whose bench variant `variant` is, and the value it sets; nullptr when none.
const TileField *benchVariantField(llvm::StringRef variant, int &value);

// The name of one value in the field's type (JSON and messages): "true", "128", "wgmma-ws", ...
std::string fieldValueText(const TileField &f, int value);

} // namespace fa4jit
