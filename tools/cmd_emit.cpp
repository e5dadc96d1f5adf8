// fa4jit emit: print the generated source of one kernel (or its canonical spec and the baked /
// run-time split with --json). The spec comes from the heuristics' default for the flags given,
// with the flags' overrides applied, or from a JSON file (--spec).
#include "subcommands.h"

#include <cstdio>
#include <cstdlib>
#include <string>

#include "fa4jit/codegen/baked_dims.h"
#include "fa4jit/codegen/emitter.h"
#include "fa4jit/codegen/heuristics.h"
#include "fa4jit/codegen/variants.h"
#include "fa4jit/codegen/spec_io.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/raw_ostream.h"

namespace fa4jit::tools {
namespace {

const char *kUsage =
    "usage: fa4jit emit [options]\n"
    "\n"
    "Prints the generated instantiation source of one kernel.\n"
    "\n"
    "  --spec FILE.json          read the spec (canonical JSON, see --json); other spec flags are refused\n"
    "  --family attention|quantize   (default attention)\n"
    "  --target sm_80|sm_89|sm_90a|sm_100a   (default sm_90a)\n"
    "  --head-dim 64|128|256     (default 128)\n"
    " attention (defaults from the heuristics for route, head dim, causal, target):\n"
    "  --route bf16|nvfp8|directp    (default directp)\n"
    "  --causal\n"
    "  --classifier piecewise|threshold|affine|mixed  --alpha A  --beta B  --y-split Y\n"
    "  --block-m M  --block-n N  --warps W  --permute-v\n"
    "  --softmax-scale S         (default 1/sqrt(head dim))\n"
    " quantize:\n"
    "  --format nvfp4|mxfp4|fp8  (default nvfp4; mxfp4 and fp8 write V^T)\n"
    "  --fp32-input              (default bf16 input)\n"
    "  --permute-keys            V^T keys in Hopper register-P order\n"
    "  --threads T               (default 256)\n"
    " output:\n"
    "  --json                    print the canonical spec, kernel name, entry points and the\n"
    "                            baked / run-time split instead of the source\n"
    "  --list                    print the name and spec of every variant the generator emits\n";

struct EmitArgs {
  std::string spec_file;
  KernelFamily family = KernelFamily::AttentionForward;
  Target target = Target::Sm90a;
  int head_dim = 128;
  Route route = Route::DirectP;
  bool causal = false;
  QuantFormat format = QuantFormat::Nvfp4;
  bool fp32_input = false, permute_keys = false, json = false, list = false;
  // Overrides applied after the defaults; empty = keep the default.
  std::string classifier, alpha, beta, y_split, block_m, block_n, warps, threads, softmax_scale;
  bool permute_v = false;
  int spec_flags = 0; // flags that describe the spec (refused together with --spec)
};

bool fail(const std::string &msg) {
  std::fprintf(stderr, "fa4jit emit: %s\n", msg.c_str());
  return false;
}

template <typename T> bool take(llvm::Expected<T> v, T &out) {
  if (!v)
    return fail(llvm::toString(v.takeError()));
  out = *v;
  return true;
}

bool parseIntArg(const char *flag, const std::string &text, int &out) {
  char *end = nullptr;
  const long v = std::strtol(text.c_str(), &end, 10);
  if (text.empty() || *end || v < -1000000 || v > 1000000)
    return fail(std::string(flag) + ": '" + text + "' is not an integer");
  out = static_cast<int>(v);
  return true;
}

bool parseFloatArg(const char *flag, const std::string &text, float &out) {
  char *end = nullptr;
  const float v = std::strtof(text.c_str(), &end);
  if (text.empty() || *end)
    return fail(std::string(flag) + ": '" + text + "' is not a number");
  out = v;
  return true;
}

bool parseArgs(int argc, char **argv, EmitArgs &a, bool &help) {
  for (int i = 1; i < argc; ++i) {
    std::string flag = argv[i], value;
    const bool has_inline = flag.find('=') != std::string::npos;
    if (has_inline) {
      value = flag.substr(flag.find('=') + 1);
      flag = flag.substr(0, flag.find('='));
    }
    auto needValue = [&]() -> bool {
      if (has_inline)
        return true;
      if (i + 1 >= argc)
        return fail(flag + " needs a value");
      value = argv[++i];
      return true;
    };
    auto specValue = [&](std::string &out) {
      ++a.spec_flags;
      if (!needValue())
        return false;
      out = value;
      return true;
    };
    if (flag == "--help" || flag == "-h") {
      help = true;
    } else if (flag == "--json") {
      a.json = true;
    } else if (flag == "--list") {
      a.list = true;
    } else if (flag == "--spec") {
      if (!needValue())
        return false;
      a.spec_file = value;
    } else if (flag == "--family") {
      ++a.spec_flags;
      if (!needValue() || !take(parseKernelFamily(value), a.family))
        return false;
    } else if (flag == "--target") {
      ++a.spec_flags;
      if (!needValue() || !take(parseTarget(value), a.target))
        return false;
    } else if (flag == "--route") {
      ++a.spec_flags;
      if (!needValue() || !take(parseRoute(value), a.route))
        return false;
    } else if (flag == "--format") {
      ++a.spec_flags;
      if (!needValue() || !take(parseQuantFormat(value), a.format))
        return false;
    } else if (flag == "--head-dim") {
      ++a.spec_flags;
      if (!needValue() || !parseIntArg("--head-dim", value, a.head_dim))
        return false;
    } else if (flag == "--causal") {
      ++a.spec_flags, a.causal = true;
    } else if (flag == "--fp32-input") {
      ++a.spec_flags, a.fp32_input = true;
    } else if (flag == "--permute-keys") {
      ++a.spec_flags, a.permute_keys = true;
    } else if (flag == "--permute-v") {
      ++a.spec_flags, a.permute_v = true;
    } else if (flag == "--classifier") {
      if (!specValue(a.classifier))
        return false;
    } else if (flag == "--alpha") {
      if (!specValue(a.alpha))
        return false;
    } else if (flag == "--beta") {
      if (!specValue(a.beta))
        return false;
    } else if (flag == "--y-split") {
      if (!specValue(a.y_split))
        return false;
    } else if (flag == "--block-m") {
      if (!specValue(a.block_m))
        return false;
    } else if (flag == "--block-n") {
      if (!specValue(a.block_n))
        return false;
    } else if (flag == "--warps") {
      if (!specValue(a.warps))
        return false;
    } else if (flag == "--threads") {
      if (!specValue(a.threads))
        return false;
    } else if (flag == "--softmax-scale") {
      if (!specValue(a.softmax_scale))
        return false;
    } else {
      return fail("unknown option '" + flag + "' (try 'fa4jit emit --help')");
    }
  }
  if (!a.spec_file.empty() && a.spec_flags > 0)
    return fail("--spec describes the whole kernel: drop the other spec flags");
  return true;
}

bool buildSpec(const EmitArgs &a, KernelSpec &spec) {
  if (!a.spec_file.empty()) {
    auto buf = llvm::MemoryBuffer::getFile(a.spec_file);
    if (!buf)
      return fail("cannot read " + a.spec_file + ": " + buf.getError().message());
    llvm::Expected<KernelSpec> parsed = parseSpec((*buf)->getBuffer());
    if (!parsed)
      return fail(a.spec_file + ": " + llvm::toString(parsed.takeError()));
    spec = *parsed;
    return true;
  }
  if (a.family == KernelFamily::Quantize) {
    spec = defaultQuantizeSpec(a.format, a.head_dim, a.target, a.fp32_input);
    spec.quantize.keys_permuted16 = a.permute_keys; // for NVFP4 too, so that validation says why not
    return a.threads.empty() || parseIntArg("--threads", a.threads, spec.quantize.threads);
  }
  spec = defaultAttentionSpec(a.route, a.head_dim, a.causal, a.target);
  AttentionSpec &t = spec.attention;
  if (a.permute_v)
    t.operands.v_keys_permuted16 = true;
  if (!a.classifier.empty() && !take(parseClassifierKind(a.classifier), t.classifier.kind))
    return false;
  return (a.alpha.empty() || parseFloatArg("--alpha", a.alpha, t.classifier.alpha)) &&
         (a.beta.empty() || parseFloatArg("--beta", a.beta, t.classifier.beta)) &&
         (a.y_split.empty() || parseFloatArg("--y-split", a.y_split, t.classifier.y_split)) &&
         (a.softmax_scale.empty() || parseFloatArg("--softmax-scale", a.softmax_scale, t.softmax_scale)) &&
         (a.block_m.empty() || parseIntArg("--block-m", a.block_m, t.tile.shape.block_m)) &&
         (a.block_n.empty() || parseIntArg("--block-n", a.block_n, t.tile.shape.block_n)) &&
         (a.warps.empty() || parseIntArg("--warps", a.warps, t.tile.shape.warps));
}

int printJson(const KernelSpec &spec, const EmittedKernel &k) {
  llvm::Expected<DimensionSplit> split = splitDimensions(spec);
  if (!split)
    return fail(llvm::toString(split.takeError())), 1;
  llvm::json::Array baked, runtime, entries;
  for (const BakedConstant &c : split->baked)
    baked.push_back(llvm::json::Object{{"name", c.name}, {"type", c.type}, {"value", c.value}, {"note", c.note}});
  for (const RuntimeArgument &r : split->runtime)
    runtime.push_back(llvm::json::Object{{"name", r.name}, {"meaning", r.meaning}});
  for (const EntryPoint &e : k.entries)
    entries.push_back(llvm::json::Object{
        {"name", e.name}, {"threads", e.threads}, {"dynamic_shared_bytes", e.dynamic_shared_bytes}});
  llvm::Expected<llvm::json::Value> canonical = llvm::json::parse(toJson(spec));
  if (!canonical)
    return fail(llvm::toString(canonical.takeError())), 1;
  llvm::json::Object out{{"kernel", k.name},
                         {"spec_sha256", specHash(spec)},
                         {"spec", std::move(*canonical)},
                         {"entries", std::move(entries)},
                         {"params", split->device_namespace + "::" + split->params_type},
                         {"params_header", split->params_header},
                         {"baked", std::move(baked)},
                         {"runtime", std::move(runtime)}};
  llvm::outs() << llvm::formatv("{0:2}", llvm::json::Value(std::move(out))) << "\n";
  return 0;
}

int listVariants() {
  for (const KernelSpec &s : enumerateVariants())
    llvm::outs() << kernelName(s) << " " << toJson(s) << "\n";
  if (!attentionTemplatesAvailable())
    llvm::errs() << "fa4jit emit: attention templates not available in this build; listed quantizers only\n";
  return 0;
}

} // namespace

int runEmit(int argc, char **argv) {
  EmitArgs args;
  bool help = false;
  if (!parseArgs(argc, argv, args, help))
    return 2;
  if (help) {
    std::fputs(kUsage, stdout);
    return 0;
  }
  if (args.list)
    return listVariants();
  KernelSpec spec;
  if (!buildSpec(args, spec))
    return 2;
  llvm::Expected<EmittedKernel> k = emitKernel(spec);
  if (!k) {
    std::fprintf(stderr, "fa4jit emit: %s\n", llvm::toString(k.takeError()).c_str());
    return 1;
  }
  if (args.json)
    return printJson(spec, *k);
  llvm::outs() << k->source;
  return 0;
}

} // namespace fa4jit::tools
