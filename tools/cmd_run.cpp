// `fa4jit run`: the README's main job. Generates, compiles (NVRTC) and caches a Direct-P attention
// for an embedded default shape, then on a GPU runs and times it and checks it against the CPU
// model and FP64; without a GPU it stops after the compile and reports the CPU model's accuracy.
#include "bench_support.h"
#include "cli_flags.h"
#include "cli_values.h"
#include "subcommands.h"

#include "fa4jit/codegen/formats.h"
#include "fa4jit/codegen/heuristics.h"
#include "fa4jit/codegen/spec_io.h"
#include "fa4jit/cpu/model.h"
#include "fa4jit/cpu/reference.h"
#include "fa4jit/runtime/gpu_arch.h"

#include <fmt/format.h>

#include "llvm/Support/JSON.h"
#include "llvm/Support/raw_ostream.h"

#include <cmath>
#include <cstdio>
#include <optional>
#include <random>

namespace fa4jit::tools {

namespace {

const char kUsage[] =
    "usage: fa4jit run [options]\n"
    "\n"
    "Generates, compiles (NVRTC), caches and runs one attention forward. Default: the embedded\n"
    "shape batch 4, 16 heads, seqlen 4096, head dim 128, route directp, non-causal. On a GPU it\n"
    "prints the speed and the accuracy against the CPU model and FP64; without one it compiles\n"
    "for --target and prints the CPU model's accuracy on a sample of rows.\n"
    "\n"
    "options:\n"
    "  --route R        bf16 | nvfp8 | directp | fp8 | fp8-directp (default directp)\n"
    "  --batch N        (default 4)     --heads N     (default 16)   --kv-heads N (default = heads)\n"
    "  --seqlen N       (default 4096)  --seqlen-k N  (default = seqlen)\n"
    "  --head-dim D     64 | 128 | 256 (default 128)\n"
    "  --causal [0|1]   causal mask (bottom-right aligned); alone it means 1\n"
    "  --target T       compile-only target without a GPU (default sm_90a)\n"
    "  --rows N         query rows checked against the CPU model (default 64)\n"
    "  --seed N         input seed (default: fresh)\n"
    "  --json           one JSON object instead of text\n"
    "  --help           this text\n";

struct RunReport {
  std::string kernel, target, cache_layer;
  double compile_s = 0;
  int registers = -1, spill_bytes = -1, shared_bytes = 0;
  bool gpu = false;
  std::string device, no_gpu_reason;
  double ms = 0, tflops = 0;
  double cos_vs_fp64 = NAN, rel_l2_vs_model = NAN, cos_model_vs_fp64 = NAN;
};

// A failure of the run itself (exit 1), and a usage error: a flag or value the command cannot
// take (exit 2, as every subcommand).
int fail(const std::string &m) {
  std::fprintf(stderr, "fa4jit run: %s\n", m.c_str());
  return 1;
}
int usage(const std::string &m) {
  std::fprintf(stderr, "fa4jit run: %s\n", m.c_str());
  return 2;
}

// Model and FP64 reference of (batch 0, head 0) for the selected rows; returns cosine of `gpu_o`
// (BF16 bits of those rows, or empty) against FP64 and its rel-L2 against the model.
void checkHead(const AttnShape &s, const KernelSpec &spec, const std::vector<uint16_t> &q,
               const std::vector<uint16_t> &k, const std::vector<uint16_t> &v, const std::vector<int> &rows,
               const std::vector<uint16_t> *gpu_o, RunReport &r) {
  const std::size_t nq = std::size_t(s.seqlen_q) * s.head_dim, nk = std::size_t(s.seqlen_k) * s.head_dim;
  std::vector<float> fq(nq), fk(nk), fv(nk);
  for (std::size_t i = 0; i < nq; ++i)
    fq[i] = formats::bf16ToFloat(q[i]);
  for (std::size_t i = 0; i < nk; ++i)
    fk[i] = formats::bf16ToFloat(k[i]), fv[i] = formats::bf16ToFloat(v[i]);
  cpu::AttentionProblem p;
  p.shape = {1, 1, 1, s.seqlen_q, s.seqlen_k, s.head_dim};
  p.q = cpu::TensorRef::contiguous(fq.data(), 1, s.seqlen_q, s.head_dim);
  p.k = cpu::TensorRef::contiguous(fk.data(), 1, s.seqlen_k, s.head_dim);
  p.v = cpu::TensorRef::contiguous(fv.data(), 1, s.seqlen_k, s.head_dim);
  cpu::ModelOptions mo;
  mo.selection.rows = rows;
  auto model = cpu::runRouteModel(spec.attention, p, mo);
  cpu::ReferenceOptions ro;
  ro.causal = s.causal;
  ro.selection.rows = rows;
  auto ref = cpu::referenceAttention(p, ro);
  if (!model || !ref) {
    if (!model)
      std::fprintf(stderr, "fa4jit run: model: %s\n", llvm::toString(model.takeError()).c_str());
    if (!ref)
      std::fprintf(stderr, "fa4jit run: reference: %s\n", llvm::toString(ref.takeError()).c_str());
    return;
  }
  r.cos_model_vs_fp64 = cpu::compareOutputs(model->result, *ref).cosine;
  if (!gpu_o)
    return;
  double d2 = 0, m2 = 0, dot = 0, g2 = 0, f2 = 0;
  for (std::size_t i = 0; i < rows.size(); ++i)
    for (int d = 0; d < s.head_dim; ++d) {
      const double g = formats::bf16ToFloat((*gpu_o)[std::size_t(rows[i]) * s.head_dim + d]);
      const double m = model->result.oRow(0, 0, int(i))[d], f = ref->oRow(0, 0, int(i))[d];
      d2 += (g - m) * (g - m), m2 += m * m, dot += g * f, g2 += g * g, f2 += f * f;
    }
  r.rel_l2_vs_model = std::sqrt(d2 / std::max(m2, 1e-300));
  r.cos_vs_fp64 = dot / std::sqrt(std::max(g2 * f2, 1e-300));
}

} // namespace

int runRun(int argc, char **argv) {
  CliFlags flags({shared_flags::route(), {"batch"}, {"heads"}, {"kv-heads"}, shared_flags::seqlen(), {"seqlen-k"},
                  shared_flags::headDim(), shared_flags::target(), {"rows"}, {"seed"}, shared_flags::causal(),
                  shared_flags::json()});
  if (auto e = flags.parse(argc, argv))
    return std::fprintf(stderr, "fa4jit run: %s\n%s", llvm::toString(std::move(e)).c_str(), kUsage), 2;
  if (flags.help())
    return std::fputs(kUsage, stdout), 0;
  auto preset = routePresetFlag(flags, "directp");
  if (!preset)
    return usage(llvm::toString(preset.takeError()));
  const Route route = preset->route;
  const std::string route_name = toString(*preset);
  auto head_dim = headDimFlag(flags, "128");
  if (!head_dim)
    return usage(llvm::toString(head_dim.takeError()));
  auto causal = flags.boolean("causal", false);
  if (!causal)
    return usage(llvm::toString(causal.takeError()));
  AttnShape s;
  s.head_dim = *head_dim;
  s.causal = *causal;
  auto num = [&](const char *n, long def, long lo, long hi, int &out) -> bool {
    auto v = flags.integer(n, def, lo, hi);
    if (!v) {
      usage(llvm::toString(v.takeError()));
      return false;
    }
    out = int(*v);
    return true;
  };
  int rowsChecked = 0;
  if (!num("batch", 4, 1, 65535, s.batch) || !num("heads", 16, 1, 65535, s.heads_q) ||
      !num("kv-heads", s.heads_q, 1, s.heads_q, s.heads_kv) || !num("seqlen", 4096, 1, kMaxCliSeqlen, s.seqlen_q) ||
      !num("seqlen-k", s.seqlen_q, 1, kMaxCliSeqlen, s.seqlen_k) || !num("rows", 64, 1, 1 << 20, rowsChecked))
    return 2;
  if (s.heads_q % s.heads_kv)
    return usage(fmt::format("--heads {} is not a multiple of --kv-heads {}", s.heads_q, s.heads_kv));
  auto seedFlag = flags.integer("seed", -1);
  if (!seedFlag)
    return usage(llvm::toString(seedFlag.takeError()));
  const uint64_t seed = *seedFlag >= 0 ? uint64_t(*seedFlag) : uint64_t(std::random_device{}());
  const bool json = flags.has("json");
  RunReport r;

  // A GPU decides the target; without one, compile for --target.
  auto engine = Engine::create();
  Target target;
  if (engine) {
    r.gpu = true;
    target = (*engine)->target();
    r.device = (*engine)->device().name;
  } else {
    r.no_gpu_reason = llvm::toString(engine.takeError());
    auto t = targetFlag(flags, "sm_90a");
    if (!t)
      return usage(llvm::toString(t.takeError()));
    target = *t;
  }
  r.target = toString(target);
  KernelSpec spec = withQkFormat(defaultAttentionSpec(route, s.head_dim, s.causal, target), preset->qk_format);

  runtime::KernelJit *jit = nullptr;
  std::unique_ptr<runtime::KernelJit> ownJit;
  if (r.gpu) {
    jit = &(*engine)->jit();
  } else {
    auto config = runtime::loadConfig();
    if (!config)
      return fail(llvm::toString(config.takeError()));
    auto created = runtime::KernelJit::create(*config);
    if (!created)
      return fail(llvm::toString(created.takeError()));
    ownJit = std::move(*created);
    jit = ownJit.get();
  }
  auto compiled = jit->get(spec);
  if (!compiled)
    return fail(llvm::toString(compiled.takeError()));
  const runtime::CompiledKernel &ck = **compiled;
  r.kernel = ck.emitted.name;
  r.cache_layer = cache::layerName(ck.layer);
  r.compile_s = ck.compile_seconds;
  r.shared_bytes = ck.emitted.entries.at(0).dynamic_shared_bytes;
  if (const runtime::CubinKernelInfo *ki = ck.info.find(ck.emitted.entries.at(0).name)) {
    r.registers = ki->registers;
    r.spill_bytes = ki->spill_store_bytes;
  }
  if (!json)
    std::printf("kernel   %s for %s: %s%s, %d registers, %s spill bytes, %d B shared memory\n", r.kernel.c_str(),
                r.target.c_str(), r.cache_layer == std::string("produced") ? "compiled by NVRTC in " : "cache hit (",
                r.cache_layer == std::string("produced") ? fmt::format("{:.2f} s", r.compile_s).c_str()
                                                         : (r.cache_layer + ")").c_str(),
                r.registers, r.spill_bytes < 0 ? "unknown" : std::to_string(r.spill_bytes).c_str(), r.shared_bytes);

  std::vector<int> rows;
  for (int i = 0; i < std::min(rowsChecked, s.seqlen_q); ++i)
    rows.push_back(int((long(i) * s.seqlen_q) / std::min(rowsChecked, s.seqlen_q)));

  std::vector<uint16_t> hq, hk, hv;
  if (r.gpu) {
    Engine &eng = **engine;
    auto inputs = makeDeviceInputs(eng, s, seed, &hq, &hk, &hv);
    if (!inputs)
      return fail(llvm::toString(inputs.takeError()));
    ForwardArgs args = inputs->args(s, route);
    args.qk_format = preset->qk_format;
    // Quantized once; the timed region is the attention kernel alone (as FA3's FP8 numbers).
    std::optional<QuantizedTensor> qq, qk, qv;
    if (route != Route::Bf16) {
      // E4M3 Q/K carry the shift of the kernel the forward runs.
      auto chosen = eng.attentionSpecFor(route, s.head_dim, s.causal, s.seqlen_k, std::nullopt, preset->qk_format);
      if (!chosen)
        return fail(llvm::toString(chosen.takeError()));
      const QkQuantization qk_quant = qkQuantizationOf(chosen->attention);
      auto a = eng.quantize(args.q, qk_quant.format, "q", nullptr, qk_quant.code_shift);
      auto b = eng.quantize(args.k, qk_quant.format, "k", nullptr, qk_quant.code_shift);
      auto c = eng.quantize(args.v, route == Route::DirectP ? QuantFormat::Mxfp4 : QuantFormat::Fp8PerHead, "v");
      if (!a || !b || !c)
        return fail(!a ? llvm::toString(a.takeError()) : !b ? llvm::toString(b.takeError()) : llvm::toString(c.takeError()));
      qq = std::move(*a), qk = std::move(*b), qv = std::move(*c);
    }
    auto once = [&](int) -> llvm::Error {
      if (route == Route::Bf16)
        return eng.forward(args);
      QuantizedForwardArgs qa;
      qa.q = &*qq, qa.k = &*qk, qa.v = &*qv, qa.o = args.o, qa.lse = args.lse, qa.route = route,
      qa.causal = s.causal;
      return eng.forward(qa);
    };
    auto t = timeOnDevice(eng, once, 3, 20);
    if (!t)
      return fail(llvm::toString(t.takeError()));
    r.ms = t->median_ms;
    r.tflops = attentionFlops(s) / (r.ms * 1e-3) / 1e12;
    std::vector<uint16_t> o(std::size_t(s.seqlen_q) * s.head_dim);
    if (auto e = inputs->o.copyToHost(o.data(), o.size() * 2))
      return fail(llvm::toString(std::move(e)));
    checkHead(s, spec, hq, hk, hv, rows, &o, r);
  } else {
    // No GPU: the CPU model of the same spec on one head with a sample of rows.
    hq = randomBf16Bits(std::size_t(s.seqlen_q) * s.head_dim, seed * 3 + 1);
    hk = randomBf16Bits(std::size_t(s.seqlen_k) * s.head_dim, seed * 3 + 2);
    hv = randomBf16Bits(std::size_t(s.seqlen_k) * s.head_dim, seed * 3 + 3);
    checkHead(s, spec, hq, hk, hv, rows, nullptr, r);
  }

  if (json) {
    // A value this run did not measure is null: no GPU (time, rate, device), a cosine not
    // computed, a register count the cubin did not report.
    const auto number = [](double v) -> llvm::json::Value { return std::isnan(v) ? llvm::json::Value(nullptr) : v; };
    const auto count = [](int v) -> llvm::json::Value { return v < 0 ? llvm::json::Value(nullptr) : v; };
    llvm::json::Object o{
        {"kernel", r.kernel},
        {"target", r.target},
        {"cache_layer", r.cache_layer},
        {"compile_s", r.cache_layer == "produced" ? llvm::json::Value(r.compile_s) : nullptr},
        {"registers", count(r.registers)},
        {"spill_bytes", count(r.spill_bytes)},
        {"shared_bytes", r.shared_bytes},
        {"gpu", r.gpu},
        {"device", r.gpu ? llvm::json::Value(r.device) : nullptr},
        {"no_gpu_reason", r.gpu ? llvm::json::Value(nullptr) : llvm::json::Value(r.no_gpu_reason)},
        {"route", route_name},
        {"batch", s.batch},
        {"heads", s.heads_q},
        {"kv_heads", s.heads_kv},
        {"seqlen_q", s.seqlen_q},
        {"seqlen_k", s.seqlen_k},
        {"head_dim", s.head_dim},
        {"causal", s.causal},
        {"ms", r.gpu ? number(r.ms) : nullptr},
        {"tflops", r.gpu ? number(r.tflops) : nullptr},
        {"cos_vs_fp64", number(r.cos_vs_fp64)},
        {"rel_l2_vs_model", number(r.rel_l2_vs_model)},
        {"model_cos_vs_fp64", number(r.cos_model_vs_fp64)},
        {"seed", static_cast<int64_t>(seed)},
    };
    llvm::outs() << llvm::json::Value(std::move(o)) << "\n";
    llvm::outs().flush();
    return 0;
  }
  std::printf("shape    batch %d, heads %d/%d, seqlen %d/%d, head dim %d, %s, route %s\n", s.batch, s.heads_q,
              s.heads_kv, s.seqlen_q, s.seqlen_k, s.head_dim, s.causal ? "causal" : "non-causal", route_name.c_str());
  if (r.gpu) {
    std::printf("device   %s: %.3f ms (median of 20), %.1f TFLOP/s\n", r.device.c_str(), r.ms, r.tflops);
    std::printf("accuracy %zu rows of head 0: cosine vs FP64 %.4f, rel-L2 vs CPU model %.2e (model vs FP64 %.4f)\n",
                rows.size(), r.cos_vs_fp64, r.rel_l2_vs_model, r.cos_model_vs_fp64);
  } else {
    std::printf("no GPU   %s\n         compile-only for %s; CPU model of this kernel on %zu rows of one head:\n",
                r.no_gpu_reason.c_str(), r.target.c_str(), rows.size());
    std::printf("accuracy cosine vs FP64 %.4f\n", r.cos_model_vs_fp64);
  }
  return 0;
}

} // namespace fa4jit::tools
