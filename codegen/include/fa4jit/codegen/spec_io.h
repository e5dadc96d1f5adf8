#pragma once
// Canonical JSON form of a KernelSpec, its hash and the kernel name derived from it.
//
// Canonical means: one spelling per spec. Keys are written in a fixed (sorted) order, only the
// sub-object of the spec's family is written, fields that cannot change the kernel are reset to
// their defaults first (canonicalize), and every float is written as the shortest decimal that
// parses back to the same bits. So equal kernels hash equally and a spec read from a file and
// written again is byte-identical.
#include <string>

#include "fa4jit/codegen/spec.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

namespace fa4jit {

// Version of the JSON layout; written as "schema" and checked on parse.
inline constexpr int kSpecSchemaVersion = 1;

// Resets the fields that the spec's family, route and target do not use (the classifier outside
// directp, the widening knobs of the bf16 route, the TMEM plan outside sm_100a, the other
// family's sub-spec) so that they cannot split the cache.
KernelSpec canonicalize(const KernelSpec &spec);

// Field-by-field equality; floats compare by bit pattern (so -0 != 0 and NaN == same NaN).
bool specsEqual(const KernelSpec &a, const KernelSpec &b);

// Canonical JSON of canonicalize(spec). indent 0 gives the compact form that is hashed.
std::string toJson(const KernelSpec &spec, unsigned indent = 0);

// Parses a spec. Unknown keys, wrong types and bad enum names are errors naming the field's
// path (e.g. "attention.classifier.kind"); missing keys keep the KernelSpec defaults.
llvm::Expected<KernelSpec> parseSpec(llvm::StringRef json);

// SHA-256 of the compact canonical JSON, 64 lowercase hex digits.
std::string specHash(const KernelSpec &spec);

// Short, readable, unique kernel name, e.g. fa4jit_attn_directp_d128_c0_1a2b3c4d or
// fa4jit_quant_nvfp4_d128_1a2b3c4d (the suffix is the first 8 hex digits of specHash).
std::string kernelName(const KernelSpec &spec);

// Shortest decimal that parses (strtod, then rounding to float) back to the same float;
// "nan", "inf" and "-inf" for non-finite values.
std::string formatFloat(float value);

// Enum names (the toString spellings) back to values; the error lists the accepted names.
llvm::Expected<Target> parseTarget(llvm::StringRef name);
llvm::Expected<Route> parseRoute(llvm::StringRef name);
llvm::Expected<Widening> parseWidening(llvm::StringRef name);
llvm::Expected<QkFormat> parseQkFormat(llvm::StringRef name);
llvm::Expected<ClassifierKind> parseClassifierKind(llvm::StringRef name);
llvm::Expected<GuardKind> parseGuardKind(llvm::StringRef name);
llvm::Expected<AttentionSchedule> parseAttentionSchedule(llvm::StringRef name);
llvm::Expected<StageAblation> parseStageAblation(llvm::StringRef name);
llvm::Expected<KvStaging> parseKvStaging(llvm::StringRef name);
llvm::Expected<QuantFormat> parseQuantFormat(llvm::StringRef name);
llvm::Expected<QuantLayout> parseQuantLayout(llvm::StringRef name);
llvm::Expected<KernelFamily> parseKernelFamily(llvm::StringRef name);
llvm::Expected<BackwardPvFormat> parseBackwardPvFormat(llvm::StringRef name);
llvm::Expected<BackwardQkOperands> parseBackwardQkOperands(llvm::StringRef name);
llvm::Expected<StateType> parseStateType(llvm::StringRef name);
llvm::Expected<KvValueFormat> parseKvValueFormat(llvm::StringRef name);
llvm::Expected<BackwardMma> parseBackwardMma(llvm::StringRef name);

} // namespace fa4jit
