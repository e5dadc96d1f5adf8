// fa4jit emit: print the generated source of one kernel (or its canonical spec and the baked /
// run-time split with --json). The spec comes from the heuristics' default for the flags given,
// with the flags' overrides applied, or from a JSON file (--spec).
#include "cli_flags.h"
#include "cli_values.h"
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
    "  --family attention|quantize|attention-backward|merge-states|paged-kv   (default attention)\n"
    "  --target sm_80|sm_89|sm_90a|sm_100a   (default sm_90a)\n"
    "  --head-dim 64|128|256     (default 128)\n"
    " attention (defaults from the heuristics for route, head dim, causal, target):\n"
    "  --route bf16|nvfp8|directp    (default directp)\n"
    "  --causal [0|1]            (alone it means 1)\n"
    "  --classifier piecewise|threshold|affine|mixed  --alpha A  --beta B  --y-split Y\n"
    "  --block-m M  --block-n N  --warps W  --permute-v\n"
    "  --softmax-scale S         (default 1/sqrt(head dim))\n"
    " attention-backward (sm_90a; the nvfp8 training forward's backward):\n"
    "  --causal, --softmax-scale, --block-m, --block-n, --warps as above\n"
    "  --pv e4m3|mxfp4           P and V in dV = P^T dO, dP = dO V^T (default e4m3)\n"
    "  --qk bf16|saved-nvfp4     Q and K in dQ = dS K, dK = dS^T Q (default bf16)\n"
    "  --deterministic           dQ added in key-block order (same bits every run)\n"
    "  --mma mma-sync|wgmma      the main pass's tensor-core instructions (default: the heuristic)\n"
    " quantize:\n"
    "  --format nvfp4|mxfp4|fp8  (default nvfp4; mxfp4 and fp8 write V^T)\n"
    "  --fp32-input, --fp16-input  (default bf16 input)\n"
    "  --permute-keys            V^T keys in Hopper register-P order\n"
    "  --threads T               (default 256)\n"
    " merge-states:\n"
    "  --state-type bf16|f16|f32 the parts' and the merged O (default bf16)\n"
    "  --threads T               (default 128)\n"
    " paged-kv (append, decode and combine over a paged NVFP4 K / FP8 V cache; head dim 64|128):\n"
    "  --page-size N             tokens per page, a power of two in [16, 256] (default 16)\n"
    "  --warps W                 decode warps per CTA, 4 or 8 (default 4)\n"
    "  --value-format fp8|mxfp4  the cache's V codes (default fp8)\n"
    " output:\n"
    "  --json                    print the canonical spec, kernel name, entry points and the\n"
    "                            baked / run-time split instead of the source\n"
    "  --list                    print the name and spec of every variant the generator emits\n";

int fail(const std::string &msg) {
  std::fprintf(stderr, "fa4jit emit: %s\n", msg.c_str());
  return 2;
}

// The flags that describe the kernel (refused beside --spec, which describes all of it).
const std::initializer_list<llvm::StringRef> kSpecFlags = {
    "family", "target", "head-dim", "route", "causal", "format", "fp32-input", "permute-keys", "permute-v",
    "classifier", "alpha", "beta", "y-split", "block-m", "block-n", "warps", "threads", "softmax-scale",
    "fp16-input", "pv", "qk", "deterministic", "mma", "state-type", "page-size", "value-format"};

llvm::Error optionalInt(const CliFlags &flags, llvm::StringRef name, int &out) {
  if (!flags.has(name))
    return llvm::Error::success();
  auto v = flags.integer(name, 0, -1000000, 1000000);
  if (!v)
    return v.takeError();
  out = static_cast<int>(*v);
  return llvm::Error::success();
}

llvm::Error optionalFloat(const CliFlags &flags, llvm::StringRef name, float &out) {
  if (!flags.has(name))
    return llvm::Error::success();
  auto v = flags.number(name, 0.0);
  if (!v)
    return v.takeError();
  out = static_cast<float>(*v);
  return llvm::Error::success();
}

llvm::Expected<KernelSpec> readSpecFile(const std::string &path) {
  auto buf = llvm::MemoryBuffer::getFile(path);
  if (!buf)
    return llvm::createStringError(buf.getError(), "cannot read " + path + ": " + buf.getError().message());
  llvm::Expected<KernelSpec> parsed = parseSpec((*buf)->getBuffer());
  if (!parsed)
    return llvm::createStringError(llvm::inconvertibleErrorCode(), path + ": " + llvm::toString(parsed.takeError()));
  return parsed;
}

// The spec the flags describe: the defaults of the family, then the overrides.
llvm::Expected<KernelSpec> buildSpec(const CliFlags &flags) {
  if (flags.has("spec")) {
    if (flags.countGiven(kSpecFlags) > 0)
      return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                     "--spec describes the whole kernel: drop the other spec flags");
    return readSpecFile(flags.str("spec", ""));
  }
  auto family = parseKernelFamily(flags.str("family", "attention"));
  if (!family)
    return family.takeError();
  auto target = targetFlag(flags, "sm_90a");
  if (!target)
    return target.takeError();
  auto head_dim = headDimFlag(flags, "128");
  if (!head_dim)
    return head_dim.takeError();
  KernelSpec spec;
  if (*family == KernelFamily::Quantize) {
    auto format = parseQuantFormat(flags.str("format", "nvfp4"));
    if (!format)
      return format.takeError();
    if (flags.has("fp32-input") && flags.has("fp16-input"))
      return llvm::createStringError(llvm::inconvertibleErrorCode(), "--fp32-input and --fp16-input: give one");
    spec = defaultQuantizeSpec(*format, *head_dim, *target,
                               flags.has("fp32-input")   ? QuantInput::F32
                               : flags.has("fp16-input") ? QuantInput::F16
                                                         : QuantInput::Bf16);
    spec.quantize.keys_permuted16 = flags.has("permute-keys"); // for NVFP4 too, so that validation says why not
    if (auto e = optionalInt(flags, "threads", spec.quantize.threads))
      return e;
    return spec;
  }
  if (*family == KernelFamily::MergeStates) {
    auto value = parseStateType(flags.str("state-type", "bf16"));
    if (!value)
      return value.takeError();
    spec = defaultMergeSpec(*value, *head_dim, *target);
    if (auto e = optionalInt(flags, "threads", spec.merge.threads))
      return e;
    return spec;
  }
  if (*family == KernelFamily::PagedKv) {
    spec = defaultPagedKvSpec(*head_dim, 16, 4, *target);
    if (auto e = optionalInt(flags, "page-size", spec.paged.page_size))
      return e;
    if (auto e = optionalInt(flags, "warps", spec.paged.warps))
      return e;
    auto value = parseKvValueFormat(flags.str("value-format", "fp8"));
    if (!value)
      return value.takeError();
    spec.paged.value_format = *value;
    return spec;
  }
  auto causal = flags.boolean("causal", false);
  if (!causal)
    return causal.takeError();
  if (*family == KernelFamily::AttentionBackward) {
    spec = defaultBackwardSpec(*head_dim, *causal, 0.0f, *target);
    BackwardSpec &b = spec.backward;
    if (flags.has("pv")) {
      auto pv = parseBackwardPvFormat(flags.str("pv", ""));
      if (!pv)
        return pv.takeError();
      b.pv = *pv;
    }
    if (flags.has("qk")) {
      auto qk = parseBackwardQkOperands(flags.str("qk", ""));
      if (!qk)
        return qk.takeError();
      b.qk = *qk;
    }
    if (flags.has("mma")) {
      auto mma = parseBackwardMma(flags.str("mma", ""));
      if (!mma)
        return mma.takeError();
      spec = withBackwardMma(spec, *mma);
    }
    b.deterministic = flags.has("deterministic");
    llvm::Error errors[] = {optionalFloat(flags, "softmax-scale", b.forward.softmax_scale),
                            optionalInt(flags, "block-m", b.tile.block_m),
                            optionalInt(flags, "block-n", b.tile.block_n), optionalInt(flags, "warps", b.tile.warps)};
    llvm::Error bad_value = llvm::Error::success();
    for (llvm::Error &e : errors)
      bad_value = llvm::joinErrors(std::move(bad_value), std::move(e));
    if (bad_value)
      return bad_value;
    return spec;
  }
  auto route = routeFlag(flags, "directp");
  if (!route)
    return route.takeError();
  spec = defaultAttentionSpec(*route, *head_dim, *causal, *target);
  AttentionSpec &t = spec.attention;
  if (flags.has("permute-v"))
    t.operands.v_keys_permuted16 = true;
  if (flags.has("classifier")) {
    auto kind = parseClassifierKind(flags.str("classifier", ""));
    if (!kind)
      return kind.takeError();
    t.classifier.kind = *kind;
  }
  llvm::Error errors[] = {optionalFloat(flags, "alpha", t.classifier.alpha),
                          optionalFloat(flags, "beta", t.classifier.beta),
                          optionalFloat(flags, "y-split", t.classifier.y_split),
                          optionalFloat(flags, "softmax-scale", t.softmax_scale),
                          optionalInt(flags, "block-m", t.tile.shape.block_m),
                          optionalInt(flags, "block-n", t.tile.shape.block_n),
                          optionalInt(flags, "warps", t.tile.shape.warps)};
  llvm::Error bad_value = llvm::Error::success();
  for (llvm::Error &e : errors)
    bad_value = llvm::joinErrors(std::move(bad_value), std::move(e));
  if (bad_value)
    return bad_value;
  return spec;
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
  CliFlags flags({{"spec"}, {"family"}, shared_flags::target(), shared_flags::headDim(), shared_flags::route(),
                  shared_flags::causal(), {"classifier"}, {"alpha"}, {"beta"}, {"y-split"}, {"block-m"},
                  {"block-n"}, {"warps"}, {"permute-v", FlagValue::None}, {"softmax-scale"}, {"format"},
                  {"fp32-input", FlagValue::None}, {"fp16-input", FlagValue::None}, {"permute-keys", FlagValue::None}, shared_flags::threads(),
                  {"pv"}, {"qk"}, {"deterministic", FlagValue::None}, {"mma"}, {"state-type"}, {"page-size"}, {"value-format"},
                  shared_flags::json(), {"list", FlagValue::None}});
  if (auto e = flags.parse(argc, argv))
    return fail(llvm::toString(std::move(e)) + " (try 'fa4jit emit --help')");
  if (flags.help())
    return std::fputs(kUsage, stdout), 0;
  if (flags.has("list"))
    return listVariants();
  llvm::Expected<KernelSpec> spec_or = buildSpec(flags);
  if (!spec_or)
    return fail(llvm::toString(spec_or.takeError()));
  const KernelSpec &spec = *spec_or;
  llvm::Expected<EmittedKernel> k = emitKernel(spec);
  if (!k) {
    std::fprintf(stderr, "fa4jit emit: %s\n", llvm::toString(k.takeError()).c_str());
    return 1;
  }
  if (flags.has("json"))
    return printJson(spec, *k);
  llvm::outs() << k->source;
  return 0;
}

} // namespace fa4jit::tools
