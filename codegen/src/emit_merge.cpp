// The merge-states family: one entry point over one config struct (templates/fa4jit/merge/merge.cuh
// has the instantiation contract).
#include <sstream>

#include "emit_common.h"
#include "fa4jit/codegen/spec_io.h"

namespace fa4jit::detail {

llvm::Expected<EmittedKernel> emitMerge(const KernelSpec &spec, const DimensionSplit &split) {
  EmittedKernel k;
  k.name = kernelName(spec);
  const int threads = spec.merge.threads;
  const std::string ns = split.device_namespace, cfg = "GeneratedConfig";
  std::ostringstream os;
  os << emitHeaderComment(spec, k.name, split) << "#include \"fa4jit/merge/merge.cuh\"\n\n"
     << "namespace " << ns << " {\nnamespace {\n"
     << emitConfigStruct(split, cfg) << "static_assert(MergeTraits<" << cfg << ">::kThreads == " << threads
     << ", \"generator and template disagree on threads\");\n"
     << "} // namespace\n} // namespace " << ns << "\n"
     << "\nextern \"C\" __global__ void __launch_bounds__(" << threads << ")\n"
     << k.name << "(const " << ns << "::" << split.params_type << " params) {\n"
     << "  " << ns << "::mergeStates<" << ns << "::" << cfg << ">(params);\n}\n";
  k.entries.push_back({k.name, threads, 0});
  k.source = os.str();
  return k;
}

} // namespace fa4jit::detail
