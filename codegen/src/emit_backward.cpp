// The attention-backward family, against the instantiation contract of templates/fa4jit/
// attention_backward/config.cuh: include, config struct, pinning static_asserts, and four
// extern "C" entry points taking BackwardParams by value, in launch order (prep, stage, main, dq).
#include <sstream>

#include "emit_common.h"
#include "fa4jit/codegen/spec_io.h"
#include "fa4jit/codegen/spec_validate.h"

namespace fa4jit::detail {

llvm::Expected<EmittedKernel> emitBackward(const KernelSpec &spec, const DimensionSplit &split) {
  constexpr int kPassThreads = 256; // kPrepThreads of attention_backward/params.cuh (prep, stage, dq)
  EmittedKernel k;
  k.name = kernelName(spec);
  const BackwardSpec b = canonicalize(spec).backward;
  const int threads = b.tile.warps * 32, shared = backwardSharedBytes(b);
  const std::string ns = split.device_namespace, cfg = "GeneratedConfig";
  const char *traits = b.mma == BackwardMma::Wgmma ? "BackwardWgmmaTraits" : "BackwardTraits";
  std::ostringstream os;
  const bool wgmma = b.mma == BackwardMma::Wgmma;
  os << emitHeaderComment(spec, k.name, split) << "#include \"fa4jit/attention_backward/"
     << (wgmma ? "main_wgmma.cuh" : "kernel.cuh") << "\"\n\n"
     << "namespace " << ns << " {\nnamespace {\n"
     << emitConfigStruct(split, cfg)
     << "static_assert(" << traits << "<" << cfg << ">::kThreads == " << threads
     << ", \"generator and template disagree on threads\");\n"
     << "static_assert(" << traits << "<" << cfg << ">::kSharedBytes == " << shared
     << ", \"generator and template disagree on shared memory\");\n"
     << "static_assert(kPrepThreads == " << kPassThreads << ", \"generator and template disagree on threads\");\n"
     << "} // namespace\n} // namespace " << ns << "\n";
  const struct {
    const char *suffix, *fn;
    int threads, shared;
  } entries[] = {{"_prep", "backwardPrep", kPassThreads, 0},
                 {"_stage", "backwardStage", kPassThreads, 0},
                 {"", wgmma ? "backwardMainWgmma" : "backwardMain", threads, shared},
                 {"_dq", "backwardDq", kPassThreads, 0}};
  for (const auto &e : entries) {
    const std::string name = k.name + e.suffix;
    // One main CTA per SM is the register budget's assumption (its dK/dV accumulators take most
    // of the 255 registers); without it ptxas trades registers for occupancy and spills.
    os << "\nextern \"C\" __global__ void __launch_bounds__(" << e.threads << (e.shared > 0 ? ", 1" : "") << ")\n"
       << name << "(const " << ns << "::" << split.params_type << " params) {\n"
       << "  " << ns << "::" << e.fn << "<" << ns << "::" << cfg << ">(params);\n}\n";
    k.entries.push_back({name, e.threads, e.shared});
  }
  k.source = os.str();
  return k;
}

} // namespace fa4jit::detail
