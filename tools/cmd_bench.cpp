// `fa4jit bench`: TFLOP/s per route over a shape grid on the GPU, two ways: the call a user makes
// (Engine::forward from BF16 tensors, quantization included) and the attention kernel alone on
// operands quantized beforehand (as FlashAttention-3's FP8 numbers are taken). One JSON line per
// point with --json, for scripts/bench_compare.py to set beside PyTorch SDPA of the same run.
#include "bench_backward.h"
#include "bench_decode.h"
#include "decode_flags.h"
#include "bench_support.h"
#include "bench_variants.h"
#include "cli_flags.h"
#include "cli_values.h"
#include "subcommands.h"

#include "fa4jit/codegen/heuristics.h"
#include "fa4jit/codegen/spec_io.h"

#include <fmt/format.h>

#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"

#include <algorithm>
#include <cstdio>
#include <optional>

namespace fa4jit::tools {

namespace {
const char kUsage[] =
    "usage: fa4jit bench [options]\n"
    "\n"
    "Times the attention forward of each route on a grid of shapes (CUDA events, 5 warm-up runs,\n"
    "median of --reps, two input sets rotated). Batch x heads fill the GPU: heads 32/16/8 for\n"
    "head dim 64/128/256 and batch = --tokens / (heads x seqlen). Each column shows\n"
    "end-to-end / kernel TFLOP/s: the forward from BF16 tensors (quantization included), and the\n"
    "kernel alone on operands quantized beforehand (JSON: e2e_tflops, tflops).\n"
    "\n"
    "options (lists are comma-separated; --routes, --head-dims and --seqlens are accepted too):\n"
    "  --route LIST      (default bf16,nvfp8,directp; also fp8, fp8-directp: E4M3 Q/K)\n"
    "  --head-dim LIST   (default 64,128,256)\n"
    "  --seqlen LIST     (default 1024,4096,8192,16384,32768)\n"
    "  --causal [LIST]   0, 1 or 0,1; alone it means 1 (default 0,1)\n"
    "  --tokens N        batch*heads*seqlen per point (default 524288)\n"
    "  --reps N          timed repeats (default 20)\n"
    "  --schedule S      mma-sync | wgmma-ws (sm_90a) | default (the engine's choice)\n"
    "                    (a named schedule takes its own tiles, not the engine's per-length\n"
    "                    choice: wgmma-ws runs causal calls on one CTA per work tile; leave the\n"
    "                    default to time variants of the kernel the engine runs)\n"
    "  --variants LIST   kernels beside the chosen one, one column each (default: default):\n"
    "                    names joined by '+' from the tile fields' names (spec_fields.h): serial, overlap (wgmma consumer order), in-kernel,\n"
    "                    prewidened (where FP4 K/V are widened), tensor-map (bf16 tiles by TMA\n"
    "                    tensor maps instead of a repacking pass), pingpong, no-pingpong, stages1..4\n"
    "                    (wgmma ring depth), keys64, keys80 (bf16, D256), keys96, keys128, keys192\n"
    "                    (wgmma keys per tile),\n"
    "                    rows128, rows192 (wgmma query rows per CTA: two or three consumers),\n"
    "                    slack0..slack8 (range-guard slack: O rescaled only when a tile max\n"
    "                    passes the row max by more than that many log2 units),\n"
    "                    mma-sum, alu-sum (l from the PV wgmma or the ALUs),\n"
    "                    persistent, per-tile (wgmma grid: one CTA per SM looping over work tiles,\n"
    "                    or one CTA per work tile), fused-widening, widening-passes (the\n"
    "                    persistent FP8-fed grid writes its K/V and Q images itself, or passes\n"
    "                    before it do), multicast, no-multicast (two-CTA clusters\n"
    "                    sharing each K/V stage; persistent), thread-blocks, quad-blocks\n"
    "                    (directp: each 32-key block in one thread's S columns, or in a quad's;\n"
    "                    thread-blocks needs keys128), fp16-scores, fp32-scores (FP8-fed routes:\n"
    "                    QK^T accumulates S in FP16, with Q/K widened by 2^-7 or 2^-8, or in\n"
    "                    FP32), pieces-from-scores, pieces-from-y (directp on FP16 scores: the\n"
    "                    piecewise classifier's pieces read S directly, or y formed first),\n"
    "                    piecewise, threshold,\n"
    "                    affine (directp classifier, fitted), skip-loads, skip-qk, skip-softmax,\n"
    "                    skip-pv, softmax-twice (leave-one-out timing variants: wrong results)\n"
    "  --json            one JSON object per line\n"
    "  --backward        the training route instead (nvfp8, head dim 64 or 128): the forward from\n"
    "                    BF16 (quantization included), the backward, and the two as one step; ms\n"
    "                    and TFLOP/s (the backward counted as 2.5x the forward's FLOPs). Defaults\n"
    "                    become --head-dim 64,128 --seqlen 1024,4096,8192,16384; --variants takes\n"
    "                    default, deterministic, mxfp4 (P/V), saved-nvfp4 (Q/K of the dS products),\n"
    "                    mma-sync, wgmma (the main pass's instructions), tileMxNxW (its query\n"
    "                    step, keys per CTA and warps, e.g. tile64x128x8). JSON rows have kind\n"
    "                    fa4jit-backward; scripts/bench_backward.py times cuDNN's backward beside\n"
    "                    the same calls from PyTorch\n"
    "  --decode          decode over the paged NVFP4-K / FP8-V cache (Engine::decode, splits and\n"
    "                    their combine included) instead: ms, GB/s on the cache's bytes and their\n"
    "                    fraction of a device copy's, the cache's and a BF16 cache's time at copy\n"
    "                    bandwidth. Takes --batch LIST (1,4,16,64), --context LIST (4096,16384,\n"
    "                    65536,131072), --page-size LIST (16,64), --splits LIST (0: the heuristic),\n"
    "                    --value-format LIST (fp8,mxfp4), --q-heads (32), --kv-heads (8),\n"
    "                    --head-dim (128), --queries (1). JSON rows\n"
    "                    have kind fa4jit-decode; scripts/bench_decode.py adds PyTorch SDPA's BF16\n"
    "                    decode at the same shapes\n"
    "  --help\n";

int fail(const std::string &m) {
  std::fprintf(stderr, "fa4jit bench: %s\n", m.c_str());
  return 1;
}
// A flag or value bench cannot take (exit 2, as every subcommand).
int usage(const std::string &m) {
  std::fprintf(stderr, "fa4jit bench: %s\n", m.c_str());
  return 2;
}
llvm::Expected<std::vector<int>> intList(const CliFlags &flags, llvm::StringRef name, llvm::StringRef fallback) {
  auto items = flags.list(name, fallback);
  if (!items)
    return items.takeError();
  std::vector<int> out;
  for (const std::string &item : *items) {
    int v = 0;
    if (llvm::StringRef(item).getAsInteger(10, v) || v < 0)
      return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                     "--" + name.str() + ": '" + item + "' is not a non-negative integer");
    out.push_back(v);
  }
  return out;
}

int benchDecode(const CliFlags &flags) {
  if (flags.has("route") || flags.has("backward") || flags.has("seqlen") || flags.has("causal"))
    return usage("--decode times decode over the paged cache: no --route, --backward, --seqlen or --causal");
  auto grid = readDecodeGridFlags(flags, {"1,4,16,64", "4096,16384,65536,131072", "16,64", "fp8,mxfp4"});
  if (!grid)
    return usage(llvm::toString(grid.takeError()));
  DecodeBenchOptions o;
  o.batches = grid->batches, o.contexts = grid->contexts, o.page_sizes = grid->page_sizes;
  o.value_formats = grid->value_formats;
  o.q_heads = grid->q_heads, o.kv_heads = grid->kv_heads, o.head_dim = grid->head_dim, o.queries = grid->queries;
  auto splits = intList(flags, "splits", "0");
  if (!splits)
    return usage(llvm::toString(splits.takeError()));
  o.splits = *splits;
  auto reps = flags.integer("reps", 10, 1, 1 << 20);
  if (!reps)
    return usage(llvm::toString(reps.takeError()));
  o.reps = int(*reps);
  o.json = flags.has("json");
  return runDecodeBench(o);
}
} // namespace

int runBench(int argc, char **argv) {
  CliFlags flags({shared_flags::route(), shared_flags::headDim(), shared_flags::seqlen(), shared_flags::causal(),
                  {"tokens"}, {"reps"}, {"schedule"}, {"variants"}, shared_flags::json(),
                  {"backward", FlagValue::None}, {"decode", FlagValue::None}, {"batch"}, {"context"},
                  {"page-size"}, {"splits"}, {"q-heads"}, {"kv-heads"}, {"queries"}, {"value-format"}});
  if (auto e = flags.parse(argc, argv))
    return std::fprintf(stderr, "fa4jit bench: %s\n%s", llvm::toString(std::move(e)).c_str(), kUsage), 2;
  if (flags.help())
    return std::fputs(kUsage, stdout), 0;
  if (flags.has("decode"))
    return benchDecode(flags);
  const bool backward = flags.has("backward");
  auto dims = headDimsFlag(flags, backward ? "64,128" : "64,128,256");
  if (!dims)
    return usage(llvm::toString(dims.takeError()));
  auto seqlens = seqlensFlag(flags, backward ? "1024,4096,8192,16384" : "1024,4096,8192,16384,32768");
  if (!seqlens)
    return usage(llvm::toString(seqlens.takeError()));
  auto causals = causalFlag(flags, "0,1");
  if (!causals)
    return usage(llvm::toString(causals.takeError()));
  auto tokens = flags.integer("tokens", 524288, 1, 1L << 32);
  if (!tokens)
    return usage(llvm::toString(tokens.takeError()));
  auto reps = flags.integer("reps", 20, 1, 100000);
  if (!reps)
    return usage(llvm::toString(reps.takeError()));
  if (backward) {
    if (flags.has("route") || flags.has("schedule"))
      return usage("--backward times the training route (nvfp8) with its own kernels: no --route or --schedule");
    for (int d : *dims)
      if (d != 64 && d != 128)
        return usage(fmt::format("--backward: head dim {} has no backward kernel (64 or 128)", d));
    auto variant_list = flags.list("variants", "default");
    if (!variant_list)
      return usage(llvm::toString(variant_list.takeError()));
    const std::vector<std::string> &known = backwardBenchVariants();
    for (const std::string &v : *variant_list)
      if (std::find(known.begin(), known.end(), v) == known.end() && !parseBackwardBenchTile(v))
        return usage("--backward: unknown variant '" + v +
                     "' (default, deterministic, mxfp4, saved-nvfp4, mma-sync, wgmma, tileMxNxW)");
    BackwardBenchOptions options;
    options.head_dims = *dims, options.seqlens = *seqlens, options.tokens = *tokens, options.reps = int(*reps);
    for (bool c : *causals)
      options.causals.push_back(c);
    options.variants = *variant_list;
    options.json = flags.has("json");
    return runBackwardBench(options);
  }
  auto routes = routePresetsFlag(flags, "bf16,nvfp8,directp");
  if (!routes)
    return usage(llvm::toString(routes.takeError()));
  const bool json = flags.has("json");
  const std::string scheduleName = flags.str("schedule", "default");
  std::optional<AttentionSchedule> schedule;
  if (scheduleName != "default") {
    auto parsed = parseAttentionSchedule(scheduleName);
    if (!parsed)
      return usage(llvm::toString(parsed.takeError()));
    schedule = *parsed;
  }
  auto variant_list = flags.list("variants", "default");
  if (!variant_list)
    return usage(llvm::toString(variant_list.takeError()));
  const std::vector<std::string> &variants = *variant_list;
  if (auto e = checkBenchVariants(variants))
    return usage(llvm::toString(std::move(e)));
  auto engine = Engine::create();
  if (!engine)
    return fail("needs a GPU: " + llvm::toString(engine.takeError()));
  Engine &eng = **engine;
  if (!json)
    std::printf("device %s (%d SMs), driver %s\n\n  D  seqlen causal  batch heads  %s\n", eng.device().name.c_str(),
                eng.device().sm_count, eng.driver().driverVersionString().c_str(),
                [&] {
                  std::string h;
                  for (const RoutePreset &r : *routes)
                    for (const std::string &v : variants)
                      h += fmt::format("{:>14} ", v == "default" ? toString(r) + " TF/s" : toString(r) + "/" + v);
                  return h;
                }()
                    .c_str());
  for (int d : *dims)
    for (int sl : *seqlens)
      for (bool c : *causals) {
        AttnShape s;
        s.head_dim = int(d), s.seqlen_q = s.seqlen_k = int(sl), s.causal = c;
        s.heads_q = s.heads_kv = d == 64 ? 32 : d == 128 ? 16 : 8;
        s.batch = std::max(1, int(*tokens / (long(s.heads_q) * sl)));
        std::string line = fmt::format("{:4d} {:6d} {:5d} {:6d} {:5d}  ", d, sl, int(c), s.batch, s.heads_q);
        // Two input sets, rotated between repeats, so no repeat finds its inputs in L2.
        std::vector<DeviceAttentionInputs> sets;
        for (int i = 0; i < 2; ++i) {
          auto in = makeDeviceInputs(eng, s, 1000 + i);
          if (!in)
            return fail(llvm::toString(in.takeError()));
          sets.push_back(std::move(*in));
        }
        for (const RoutePreset &preset : *routes) {
          const Route route = preset.route;
          const std::string route_name = toString(preset);
          // The kernel-only timing's operands: E4M3 Q/K carry the default kernel's shift (a variant
          // with another one reports the mismatch as its error).
          QkQuantization qk_quant;
          if (route != Route::Bf16) {
            auto chosen = eng.attentionSpecFor(route, s.head_dim, s.causal, s.seqlen_k, std::nullopt, preset.qk_format);
            if (!chosen)
              return fail(llvm::toString(chosen.takeError()));
            qk_quant = qkQuantizationOf(chosen->attention);
          }
          const auto argsFor = [&](int i) {
            ForwardArgs a = sets[i].args(s, route);
            a.qk_format = preset.qk_format;
            return a;
          };
          std::vector<std::optional<QuantizedTensor>> qq(2), qk(2), qv(2);
          if (route != Route::Bf16)
            for (int i = 0; i < 2; ++i) {
              ForwardArgs a = argsFor(i);
              auto x = eng.quantize(a.q, qk_quant.format, "q", nullptr, qk_quant.code_shift);
              auto y = eng.quantize(a.k, qk_quant.format, "k", nullptr, qk_quant.code_shift);
              auto z = eng.quantize(a.v, route == Route::DirectP ? QuantFormat::Mxfp4 : QuantFormat::Fp8PerHead, "v");
              if (!x || !y || !z)
                return fail(!x   ? llvm::toString(x.takeError())
                            : !y ? llvm::toString(y.takeError())
                                 : llvm::toString(z.takeError()));
              qq[i] = std::move(*x), qk[i] = std::move(*y), qv[i] = std::move(*z);
            }
          for (const std::string &variant : variants) {
            std::optional<KernelSpec> spec;
            if (schedule || variant != "default") {
              auto chosen = eng.attentionSpecFor(route, s.head_dim, s.causal, s.seqlen_k, std::nullopt, preset.qk_format);
              if (!chosen)
                return fail(llvm::toString(chosen.takeError()));
              spec = schedule ? withAttentionSchedule(*chosen, *schedule) : *chosen;
              auto changed = applyBenchVariant(*spec, variant, s.seqlen_k, s.causal);
              if (!changed)
                return fail(llvm::toString(changed.takeError()));
              if (!*changed) {
                line += fmt::format("{:>14} ", "-");
                continue;
              }
              spec = **changed;
            }
            auto once = [&](int rep) -> llvm::Error {
              const int i = rep % 2;
              ForwardArgs a = argsFor(i);
              a.spec = spec;
              if (route == Route::Bf16)
                return eng.forward(a);
              QuantizedForwardArgs qa;
              qa.q = &*qq[i], qa.k = &*qk[i], qa.v = &*qv[i], qa.o = a.o, qa.lse = a.lse, qa.route = route,
              qa.causal = s.causal;
              qa.spec = spec;
              return eng.forward(qa);
            };
            auto t = timeOnDevice(eng, once, 5, int(*reps));
            if (!t) {
              const std::string msg = llvm::toString(t.takeError());
              if (json) { // the message may hold quotes and newlines: written by the JSON library
                const llvm::json::Object row{{"kind", "fa4jit"},  {"route", route_name},
                                             {"schedule", scheduleName}, {"variant", variant},
                                             {"head_dim", d},     {"seqlen", sl},
                                             {"causal", c},       {"error", msg}};
                std::printf("%s\n", llvm::formatv("{0}", llvm::json::Value(llvm::json::Object(row))).str().c_str());
              }
              line += fmt::format("{:>14} ", "error");
              continue;
            }
            const double tf = attentionFlops(s) / (t->median_ms * 1e-3) / 1e12;
            // What a user's call costs: the same forward from the BF16 tensors, quantization
            // included (the bf16 route's call is the kernel's).
            Timing e2e = *t;
            if (route != Route::Bf16) {
              auto from_bf16 = timeOnDevice(
                  eng,
                  [&](int rep) {
                    ForwardArgs a = argsFor(rep % 2);
                    a.spec = spec;
                    return eng.forward(a);
                  },
                  5, int(*reps));
              if (!from_bf16)
                return fail(llvm::toString(from_bf16.takeError()));
              e2e = *from_bf16;
            }
            const double e2e_tf = attentionFlops(s) / (e2e.median_ms * 1e-3) / 1e12;
            if (json) {
              llvm::json::Object row{{"kind", "fa4jit"},    {"route", route_name}, {"schedule", scheduleName},
                                     {"variant", variant},  {"head_dim", d},            {"seqlen", sl},
                                     {"causal", int(c)},    {"batch", s.batch},         {"heads", s.heads_q},
                                     {"ms", t->median_ms},  {"min_ms", t->min_ms},      {"max_ms", t->max_ms},
                                     {"tflops", tf},        {"e2e_ms", e2e.median_ms},  {"e2e_tflops", e2e_tf}};
              std::printf("%s\n", llvm::formatv("{0}", llvm::json::Value(std::move(row))).str().c_str());
            }
            line += fmt::format("{:>14} ", fmt::format("{:.0f}/{:.0f}", e2e_tf, tf));
            std::fflush(stdout);
          }
        }
        if (!json)
          std::printf("%s\n", line.c_str());
      }
  return 0;
}

} // namespace fa4jit::tools
