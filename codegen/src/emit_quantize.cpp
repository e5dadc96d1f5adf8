// The quantizer family: the amax and encode passes over one config struct, and where the target
// has clusters and the format needs the head's maximum before it encodes, the one-pass cluster
// kernel beside them, then for NVFP4 and E4M3 rows the pipelined one-pass kernel
// (templates/fa4jit/quantize/kernels.cuh has the instantiation contract).
#include <sstream>
#include <vector>

#include "emit_common.h"
#include "fa4jit/codegen/emitter.h"
#include "fa4jit/codegen/spec_io.h"
#include "fa4jit/quantize/params.cuh"

namespace fa4jit {

bool quantizeHasClusterPass(const KernelSpec &spec) {
  const bool has_clusters = spec.target == Target::Sm90a || spec.target == Target::Sm100a;
  return spec.family == KernelFamily::Quantize && has_clusters && spec.quantize.format != QuantFormat::Mxfp4;
}

const EntryPoint *entryWithSuffix(const EmittedKernel &kernel, llvm::StringRef suffix) {
  for (const EntryPoint &e : kernel.entries)
    if (llvm::StringRef(e.name).endswith(suffix))
      return &e;
  return nullptr;
}

bool quantizeHasPipelinedPass(const KernelSpec &spec) {
  const QuantFormat f = spec.quantize.format;
  return spec.family == KernelFamily::Quantize && (f == QuantFormat::Nvfp4 || f == QuantFormat::E4m3Rows) &&
         device::quantize::quantizePipelinedFits(spec.quantize.threads, spec.quantize.head_dim);
}

} // namespace fa4jit

namespace fa4jit::detail {

llvm::Expected<EmittedKernel> emitQuantize(const KernelSpec &spec, const DimensionSplit &split) {
  EmittedKernel k;
  k.name = kernelName(spec);
  const int threads = spec.quantize.threads;
  const std::string ns = split.device_namespace;
  const char *cfg = "GeneratedConfig";
  std::ostringstream os;
  os << emitHeaderComment(spec, k.name, split) << "#include \"fa4jit/quantize/kernels.cuh\"\n\n"
     << "namespace " << ns << " {\nnamespace {\n"
     << emitConfigStruct(split, cfg)
     << "static_assert(QuantizeTraits<" << cfg << ">::kThreads == " << threads
     << ", \"generator and template disagree on threads\");\n"
     << "} // namespace\n} // namespace " << ns << "\n";
  struct Pass {
    const char *suffix, *pass;
  };
  std::vector<Pass> passes = {{"_amax", "amaxPass"}, {"_encode", "encodePass"}};
  if (quantizeHasClusterPass(spec))
    passes.push_back({kQuantizeClusterSuffix, "clusterPass"});
  if (quantizeHasPipelinedPass(spec))
    passes.push_back({kQuantizePipelinedSuffix, "pipelinedPass"});
  for (const Pass &p : passes) {
    const std::string entry = k.name + p.suffix;
    os << "\nextern \"C\" __global__ void __launch_bounds__(" << threads << ")\n"
       << entry << "(const " << ns << "::" << split.params_type << " params) {\n"
       << "  " << ns << "::" << p.pass << "<" << ns << "::" << cfg << ">(params);\n}\n";
    k.entries.push_back({entry, threads, 0});
  }
  k.source = os.str();
  return k;
}

} // namespace fa4jit::detail
