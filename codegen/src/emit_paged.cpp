// The paged-kv family: one module with the append, decode and combine kernels over one config
// struct (templates/fa4jit/paged/{append,decode}.cuh have the instantiation contract).
#include <sstream>

#include "emit_common.h"
#include "fa4jit/codegen/spec_io.h"
#include "fa4jit/paged/decode.cuh"

namespace fa4jit::detail {

llvm::Expected<EmittedKernel> emitPaged(const KernelSpec &spec, const DimensionSplit &split) {
  EmittedKernel k;
  k.name = kernelName(spec);
  const PagedKvSpec &p = spec.paged;
  const int decode_threads = p.warps * 32;
  const std::string ns = split.device_namespace, cfg = "GeneratedConfig";
  std::ostringstream os;
  os << emitHeaderComment(spec, k.name, split) << "#include \"fa4jit/paged/append.cuh\"\n"
     << "#include \"fa4jit/paged/decode.cuh\"\n\n"
     << "namespace " << ns << " {\nnamespace {\n"
     << emitConfigStruct(split, cfg) << "static_assert(DecodeTraits<" << cfg << ">::kThreads == " << decode_threads
     << ", \"generator and template disagree on decode threads\");\n"
     << "} // namespace\n} // namespace " << ns << "\n";
  const auto entry = [&](const std::string &suffix, const char *params, const char *function, int threads,
                         const char *min_blocks = "") {
    os << "\nextern \"C\" __global__ void __launch_bounds__(" << threads << min_blocks << ")\n"
       << k.name << suffix << "(const " << ns << "::" << params << " params) {\n"
       << "  " << ns << "::" << function << "<" << ns << "::" << cfg << ">(params);\n}\n";
  };
  // (one CTA per SM at least: without it ptxas caps sm_100a's head dim 64 decode at 128 registers
  // and spills; the decode heuristic counts on its register use, not on occupancy it forces)
  entry("_decode", "DecodeParams", "decodeAttention", decode_threads, ", 1");
  entry("_combine", "DecodeParams", "combineSplits", decode_threads);
  entry("_append", "AppendParams", "appendKv", kPagedAppendThreads);
  k.entries.push_back({k.name + "_decode", decode_threads, device::paged::decodeSharedBytes(p.head_dim, p.warps, int(p.value_format), p.kv_stages)});
  k.entries.push_back({k.name + "_combine", decode_threads, 0});
  k.entries.push_back({k.name + "_append", kPagedAppendThreads, 0});
  k.source = os.str();
  return k;
}

} // namespace fa4jit::detail
