// Instantiation file of the sm_100a attention kernel (templates/fa4jit/attention_sm100/kernel.cuh):
// include, config struct (the mma.sync members + stages + TMEM columns, all from splitDimensions),
// static_asserts pinning threads and shared memory, one extern "C" entry point.
#include "emit_attention_sm100.h"

#include <cstring>
#include <sstream>

#include "emit_common.h"
#include "fa4jit/codegen/sm100_attention.h"
#include "fa4jit/codegen/spec_io.h"
#include "fa4jit/templates/embedded.h"

namespace fa4jit::detail {
namespace {

constexpr const char *kSm100Header = "fa4jit/attention_sm100/kernel.cuh";

bool sm100HeaderEmbedded() {
  std::size_t count = 0;
  const templates::EmbeddedHeader *headers = templates::embeddedHeaders(&count);
  for (std::size_t i = 0; i < count; ++i)
    if (!std::strcmp(headers[i].name, kSm100Header))
      return true;
  return false;
}

llvm::Error unsupported(const std::string &why) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                 "attention spec for sm_100a not supported by the tcgen05 template: %s", why.c_str());
}

// What the template's static_asserts require, as errors naming the field.
llvm::Error checkTcgen05Supports(const AttentionSpec &a) {
  if (a.tile.shape.block_m != Tcgen05AttentionTiles::kBlockM || a.tile.shape.warps != Tcgen05AttentionTiles::kWarps)
    return unsupported("attention.tile.shape.block_m must be 128 and warps 4 (one M = 128 Q tile, thread i = TMEM lane i)");
  if (a.tile.shape.block_n != Tcgen05AttentionTiles::kBlockN)
    return unsupported("attention.tile.shape.block_n must be 128 (QK's N; one scale-factor atom of P per tile)");
  if (a.tile.pipeline.stages != 1 && a.tile.pipeline.stages != 2)
    return unsupported("attention.tile.pipeline.stages must be 1 or 2");
  if (a.route == Route::DirectP && a.operands.v_widening != Widening::Native)
    return unsupported("attention.operands.v_widening must be native for directp (MXFP4 P/V through kind::mxf4)");
  if (a.route == Route::Nvfp8 && a.operands.v_widening != Widening::E4m3)
    return unsupported("attention.operands.v_widening must be e4m3 for nvfp8 (E4M3 P/V through kind::f8f6f4)");
  return llvm::Error::success();
}

} // namespace

llvm::Expected<EmittedKernel> emitAttentionSm100(const KernelSpec &spec, const DimensionSplit &split) {
  if (!sm100HeaderEmbedded())
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   "attention templates not available: %s is not embedded in this build", kSm100Header);
  const AttentionSpec a = canonicalize(spec).attention;
  if (llvm::Error e = checkTcgen05Supports(a))
    return e;
  EmittedKernel k;
  k.name = kernelName(spec);
  const int threads = a.tile.shape.warps * 32;
  const int shared = tcgen05AttentionSharedBytes(a);
  const std::string ns = split.device_namespace;
  const char *cfg = "GeneratedConfig";
  std::ostringstream os;
  os << emitHeaderComment(spec, k.name, split) << "#include \"" << kSm100Header << "\"\n\n"
     << "namespace " << ns << " {\nnamespace {\n"
     << emitConfigStruct(split, cfg)
     << "static_assert(Sm100AttentionTraits<" << cfg << ">::kThreads == " << threads
     << ", \"generator and template disagree on threads\");\n"
     << "static_assert(Sm100AttentionTraits<" << cfg << ">::kSharedBytes == " << shared
     << ", \"generator and template disagree on shared memory\");\n"
     << "} // namespace\n} // namespace " << ns << "\n\n"
     << "extern \"C\" __global__ void __launch_bounds__(" << threads << ", 1)\n"
     << k.name << "(const " << ns << "::" << split.params_type << " params) {\n"
     << "  " << ns << "::attentionForwardSm100<" << ns << "::" << cfg << ">(params);\n}\n";
  k.entries.push_back({k.name, threads, shared});
  k.source = os.str();
  emitNonFiniteRowsEntry(spec, split, cfg, k);
  return k;
}

} // namespace fa4jit::detail
