// The attention-forward family, against the instantiation contract at the top of
// templates/fa4jit/attention/kernel.cuh (mma.sync schedule) or templates/fa4jit/attention_sm90/
// kernel.cuh (wgmma schedule): include, config struct, two pinning static_asserts, one extern "C"
// entry point taking AttentionParams by value.
#include <cstring>
#include <sstream>

#include "emit_attention_sm100.h"
#include "emit_common.h"
#include "fa4jit/codegen/sm100_attention.h"
#include "fa4jit/codegen/spec_io.h"
#include "fa4jit/codegen/spec_validate.h"
#include "fa4jit/templates/embedded.h"

namespace fa4jit {

namespace {
bool headerEmbedded(const char *name) {
  std::size_t count = 0;
  const templates::EmbeddedHeader *headers = templates::embeddedHeaders(&count);
  for (std::size_t i = 0; i < count; ++i)
    if (!std::strcmp(headers[i].name, name))
      return true;
  return false;
}
} // namespace

bool attentionTemplatesAvailable() { return headerEmbedded("fa4jit/attention/kernel.cuh"); }
bool backwardTemplatesAvailable() { return headerEmbedded("fa4jit/attention_backward/kernel.cuh"); }

namespace detail {
namespace {

constexpr int kWidenKvThreads = 128; // attention_sm90/widen_kv.cuh, widen_q.cuh: one warpgroup per tile

llvm::Error unsupported(const KernelSpec &spec, const std::string &why) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                 "attention spec for %s not supported by the mma.sync attention template: %s",
                                 toString(spec.target), why.c_str());
}

// What the one attention template there is (mma.sync, 16 rows per warp) can instantiate; the
// hardware and numerics rules were checked by validateSpec already.
llvm::Error checkTemplateSupports(const KernelSpec &spec) {
  const AttentionSpec &a = spec.attention;
  if (a.tile.schedule.kernel == AttentionSchedule::WgmmaWarpSpecialized)
    return llvm::Error::success(); // validateSpec holds every rule of that template
  if (a.tile.shape.block_m != 16 * a.tile.shape.warps)
    return unsupported(spec, "attention.tile.shape.block_m (" + std::to_string(a.tile.shape.block_m) + ") must be 16 * warps (" +
                                 std::to_string(16 * a.tile.shape.warps) + ")");
  if (a.route == Route::Bf16)
    return llvm::Error::success();
  if (a.operands.qk_widening == Widening::Native)
    return unsupported(spec, "attention.operands.qk_widening native needs the tcgen05 template (not written yet); "
                             "use e4m3 or bf16");
  if (a.operands.v_widening != Widening::E4m3)
    return unsupported(spec, std::string("attention.operands.v_widening ") + toString(a.operands.v_widening) +
                                 ": V and P are fed to FP8 mma.sync as E4M3; use e4m3");
  return llvm::Error::success();
}

} // namespace

llvm::Expected<EmittedKernel> emitAttention(const KernelSpec &spec, const DimensionSplit &split) {
  if (isTcgen05Attention(spec))
    return emitAttentionSm100(spec, split);
  if (!attentionTemplatesAvailable())
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   "attention templates not available: fa4jit/attention/kernel.cuh is not embedded "
                                   "in this build");
  if (llvm::Error e = checkTemplateSupports(spec))
    return e;
  EmittedKernel k;
  k.name = kernelName(spec);
  const AttentionSpec a = canonicalize(spec).attention;
  const int threads = a.tile.shape.warps * 32;
  const int shared = attentionSharedBytes(a);
  const std::string ns = split.device_namespace;
  const char *cfg = "GeneratedConfig";
  std::ostringstream os;
  if (a.tile.schedule.kernel == AttentionSchedule::WgmmaWarpSpecialized) {
    if (!headerEmbedded("fa4jit/attention_sm90/kernel.cuh"))
      return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                     "attention templates not available: fa4jit/attention_sm90/kernel.cuh is not "
                                     "embedded in this build");
    const std::string sm90 = "fa4jit::device::attention_sm90";
    os << emitHeaderComment(spec, k.name, split) << "#include \"fa4jit/attention_sm90/kernel.cuh\"\n\n"
       << "namespace " << ns << " {\nnamespace {\n"
       << emitConfigStruct(split, cfg)
       << "static_assert(" << sm90 << "::Sm90Traits<" << cfg << ">::kThreads == " << threads
       << ", \"generator and template disagree on threads\");\n"
       << "static_assert(" << sm90 << "::Sm90Traits<" << cfg << ">::kSharedBytes == " << shared
       << ", \"generator and template disagree on shared memory\");\n"
       << "} // namespace\n} // namespace " << ns << "\n\n"
       << "extern \"C\" __global__ void __launch_bounds__(" << threads << ", 1)\n";
    if (a.tile.staging.kv == KvStaging::TensorMap) // the maps in parameter space, where TMA reads them
      os << k.name << "(const " << ns << "::" << split.params_type << " params, const __grid_constant__ " << sm90
         << "::AttentionTensorMaps maps) {\n"
         << "  " << sm90 << "::attentionForwardSm90<" << ns << "::" << cfg << ">(params, &maps);\n}\n";
    else
      os << k.name << "(const " << ns << "::" << split.params_type << " params) {\n"
         << "  " << sm90 << "::attentionForwardSm90<" << ns << "::" << cfg << ">(params);\n}\n";
    k.entries.push_back({k.name, threads, shared});
    // A widening pass (launched before the attention entry): entry <name><suffix> calling fn.
    auto widening = [&](const char *suffix, const char *fn) {
      const std::string widen = k.name + suffix;
      os << "\nextern \"C\" __global__ void __launch_bounds__(" << kWidenKvThreads << ")\n"
         << widen << "(const " << ns << "::" << split.params_type << " params) {\n"
         << "  " << sm90 << "::" << fn << "<" << ns << "::" << cfg << ", " << sm90 << "::Sm90Traits<" << ns
         << "::" << cfg << ">>(params);\n}\n";
      k.entries.push_back({widen, kWidenKvThreads, 0});
    };
    // (fused widening: the kernel writes both kinds of images itself, attention_sm90/widen_ahead.cuh)
    if (a.tile.staging.kv == KvStaging::Prewidened && !a.tile.staging.fused_widening)
      widening("_widen_kv", "widenKvTiles"); // attention_sm90/widen_kv.cuh
    if (a.tile.schedule.persistent && a.tile.staging.kv != KvStaging::TensorMap && !a.tile.staging.fused_widening)
      widening("_widen_q", "widenQTiles"); // attention_sm90/widen_q.cuh: the persistent kernel's Q
    k.source = os.str();
    emitNonFiniteRowsEntry(spec, split, cfg, k);
    return k;
  }
  os << emitHeaderComment(spec, k.name, split) << "#include \"fa4jit/attention/kernel.cuh\"\n\n"
     << "namespace " << ns << " {\nnamespace {\n"
     << emitConfigStruct(split, cfg)
     << "static_assert(AttentionTraits<" << cfg << ">::kThreads == " << threads
     << ", \"generator and template disagree on threads\");\n"
     << "static_assert(AttentionTraits<" << cfg << ">::kSharedBytes == " << shared
     << ", \"generator and template disagree on shared memory\");\n"
     << "} // namespace\n} // namespace " << ns << "\n\n"
     << "extern \"C\" __global__ void __launch_bounds__(" << threads << ")\n"
     << k.name << "(const " << ns << "::" << split.params_type << " params) {\n"
     << "  " << ns << "::attentionForward<" << ns << "::" << cfg << ">(params);\n}\n";
  k.entries.push_back({k.name, threads, shared});
  k.source = os.str();
  emitNonFiniteRowsEntry(spec, split, cfg, k);
  return k;
}

} // namespace detail
} // namespace fa4jit
