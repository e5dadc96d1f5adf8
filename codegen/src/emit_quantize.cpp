// The quantizer family: two entry points (amax pass, encode pass) over one config struct
// (templates/fa4jit/quantize/kernels.cuh has the instantiation contract).
#include <sstream>

#include "emit_common.h"
#include "fa4jit/codegen/spec_io.h"

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
  const struct {
    const char *suffix, *pass;
  } passes[] = {{"_amax", "amaxPass"}, {"_encode", "encodePass"}};
  for (const auto &p : passes) {
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
