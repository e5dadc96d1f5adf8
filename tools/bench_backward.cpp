// `fa4jit bench --backward`: per grid point, the training forward from BF16 tensors (Q, K, V
// quantized to NVFP4, NVFP4 and FP8, then the nvfp8 forward writing O and the LSE), the backward
// from dO and what the forward saved, and the two back to back (one training step's attention),
// each timed as bench_support's timeOnDevice times (events, warm-up, median), with two input sets
// rotated. scripts/bench_backward.py sets the same calls from PyTorch beside cuDNN's backward.
#include "bench_backward.h"

#include "bench_support.h"

#include "fa4jit/codegen/heuristics.h"
#include "fa4jit/codegen/spec_io.h"
#include "fa4jit/codegen/spec_validate.h"

#include <fmt/format.h>

#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"

#include <algorithm>
#include <cstdio>
#include <optional>

namespace fa4jit::tools {

namespace {

int fail(const std::string &m) {
  std::fprintf(stderr, "fa4jit bench --backward: %s\n", m.c_str());
  return 1;
}

struct Variant {
  BackwardPvFormat pv = BackwardPvFormat::E4m3;
  BackwardQkOperands qk = BackwardQkOperands::Bf16;
  bool deterministic = false;
  std::optional<BackwardMma> mma;
  std::optional<TileShape> tile;
};

Variant variantNamed(const std::string &name) {
  Variant v;
  if (auto tile = parseBackwardBenchTile(name))
    v.tile = *tile;
  if (name == "deterministic")
    v.deterministic = true;
  else if (name == "mxfp4")
    v.pv = BackwardPvFormat::Mxfp4;
  else if (name == "saved-nvfp4")
    v.qk = BackwardQkOperands::SavedNvfp4;
  else if (name == "mma-sync")
    v.mma = BackwardMma::MmaSync;
  else if (name == "wgmma")
    v.mma = BackwardMma::Wgmma;
  return v;
}

// One input set: the BF16 tensors, dO, the gradients, and the operands the forward saves.
struct TrainingSet {
  DeviceAttentionInputs in;
  runtime::DeviceBuffer d_o, dq, dk, dv;
  QuantizedTensor q, k, v_fp8, v_mxfp4;
};

llvm::Expected<runtime::DeviceBuffer> randomDevice(Engine &eng, std::size_t n, uint64_t seed) {
  std::vector<uint16_t> bits = randomBf16Bits(n, seed);
  auto buf = runtime::DeviceBuffer::allocate(eng.driver(), n * 2);
  if (!buf)
    return buf.takeError();
  if (auto e = buf->copyFromHost(bits.data(), n * 2))
    return e;
  return std::move(*buf);
}

llvm::Expected<TrainingSet> makeSet(Engine &eng, const AttnShape &s, uint64_t seed) {
  TrainingSet t;
  auto in = makeDeviceInputs(eng, s, seed);
  if (!in)
    return in.takeError();
  t.in = std::move(*in);
  const std::size_t nq = std::size_t(s.batch) * s.heads_q * s.seqlen_q * s.head_dim;
  const std::size_t nk = std::size_t(s.batch) * s.heads_kv * s.seqlen_k * s.head_dim;
  auto d_o = randomDevice(eng, nq, seed * 7 + 5);
  if (!d_o)
    return d_o.takeError();
  t.d_o = std::move(*d_o);
  for (auto [buf, n] : {std::pair{&t.dq, nq}, {&t.dk, nk}, {&t.dv, nk}}) {
    auto b = runtime::DeviceBuffer::allocate(eng.driver(), n * 2);
    if (!b)
      return b.takeError();
    *buf = std::move(*b);
  }
  return t;
}

// The training forward from the BF16 tensors: quantize (into the set's operands, allocation-free
// once sized), then the nvfp8 forward on them.
llvm::Error trainingForward(Engine &eng, TrainingSet &t, const AttnShape &s, const Variant &v) {
  const ForwardArgs a = t.in.args(s, Route::Nvfp8);
  if (auto e = eng.quantize(a.q, QuantFormat::Nvfp4, t.q, "q"))
    return e;
  if (auto e = eng.quantize(a.k, QuantFormat::Nvfp4, t.k, "k"))
    return e;
  if (auto e = eng.quantize(a.v, QuantFormat::Fp8PerHead, t.v_fp8, "v"))
    return e;
  QuantizedForwardArgs qa;
  qa.q = &t.q, qa.k = &t.k, qa.v = &t.v_fp8, qa.o = a.o, qa.lse = a.lse;
  qa.route = Route::Nvfp8, qa.causal = s.causal;
  if (auto e = eng.forward(qa))
    return e;
  if (v.pv == BackwardPvFormat::Mxfp4) // (the variant's backward reads V as MXFP4)
    return eng.quantize(a.v, QuantFormat::Mxfp4, t.v_mxfp4, "v");
  return llvm::Error::success();
}

BackwardArgs backwardArgs(TrainingSet &t, const AttnShape &s, const Variant &v) {
  const ForwardArgs a = t.in.args(s, Route::Nvfp8);
  BackwardArgs b;
  b.q = &t.q, b.k = &t.k, b.v = v.pv == BackwardPvFormat::Mxfp4 ? &t.v_mxfp4 : &t.v_fp8;
  b.q_bf16 = a.q, b.k_bf16 = a.k, b.o = a.o, b.lse = a.lse;
  b.d_o = a.o, b.d_o.data = t.d_o.address();
  b.dq = a.o, b.dq.data = t.dq.address();
  b.dk = a.k, b.dk.data = t.dk.address();
  b.dv = a.k, b.dv.data = t.dv.address();
  b.causal = s.causal, b.pv = v.pv, b.qk = v.qk, b.deterministic = v.deterministic;
  return b;
}

} // namespace

std::optional<TileShape> parseBackwardBenchTile(const std::string &name) {
  TileShape t{};
  char tail = 0;
  if (std::sscanf(name.c_str(), "tile%dx%dx%d%c", &t.block_m, &t.block_n, &t.warps, &tail) != 3)
    return std::nullopt;
  if (t.block_m <= 0 || t.block_n <= 0 || t.warps <= 0)
    return std::nullopt;
  return t;
}

const std::vector<std::string> &backwardBenchVariants() {
  static const std::vector<std::string> names{"default", "deterministic", "mxfp4", "saved-nvfp4", "mma-sync", "wgmma"};
  return names;
}

int runBackwardBench(const BackwardBenchOptions &o) {
  auto engine = Engine::create();
  if (!engine)
    return fail("needs a GPU: " + llvm::toString(engine.takeError()));
  Engine &eng = **engine;
  if (!o.json) {
    std::printf("device %s (%d SMs), driver %s\n", eng.device().name.c_str(), eng.device().sm_count,
                eng.driver().driverVersionString().c_str());
    std::printf("training route: forward from BF16 (quantization included), backward, and the step (both);\n"
                "cells: forward / backward / step ms, then backward / step TFLOP/s\n\n  D  seqlen causal  batch "
                "heads  ");
    for (const std::string &v : o.variants)
      std::printf("%34s ", v.c_str());
    std::printf("\n");
  }
  for (int d : o.head_dims)
    for (int sl : o.seqlens)
      for (bool c : o.causals) {
        AttnShape s;
        s.head_dim = d, s.seqlen_q = s.seqlen_k = sl, s.causal = c;
        s.heads_q = s.heads_kv = d == 64 ? 32 : 16;
        s.batch = std::max(1, int(o.tokens / (long(s.heads_q) * sl)));
        std::string line = fmt::format("{:4d} {:6d} {:5d} {:6d} {:5d}  ", d, sl, int(c), s.batch, s.heads_q);
        std::vector<TrainingSet> sets;
        for (int i = 0; i < 2; ++i) {
          auto set = makeSet(eng, s, 2000 + i);
          if (!set)
            return fail(llvm::toString(set.takeError()));
          sets.push_back(std::move(*set));
        }
        // The forward and backward FLOPs: the backward's five products are 2.5x the forward's two.
        const double fwd_flops = attentionFlops(s), bwd_flops = 2.5 * fwd_flops;
        for (const std::string &name : o.variants) {
          const Variant v = variantNamed(name);
          std::optional<KernelSpec> spec;
          auto prepared = [&]() -> llvm::Error {
            for (TrainingSet &t : sets) // (sizes the saved operands and checks the variant runs)
              if (auto e = trainingForward(eng, t, s, v))
                return e;
            if (v.mma || v.tile) {
              auto chosen = eng.backwardSpecFor(backwardArgs(sets[0], s, v));
              if (!chosen)
                return chosen.takeError();
              spec = v.mma ? withBackwardMma(*chosen, *v.mma) : *chosen;
              if (v.tile) {
                spec->backward.tile = *v.tile;
                if (auto bad = validateSpec(*spec)) // (a tile the rules refuse: its reason, in the row)
                  return bad;
              }
            }
            return llvm::Error::success();
          }();
          auto backward = [&](int rep) {
            BackwardArgs b = backwardArgs(sets[rep % 2], s, v);
            b.spec = spec;
            return eng.backward(b);
          };
          auto forward = [&](int rep) { return trainingForward(eng, sets[rep % 2], s, v); };
          std::optional<Timing> tf, tb, ts;
          llvm::Error err = std::move(prepared);
          if (!err) {
            auto f = timeOnDevice(eng, forward, 3, o.reps);
            auto b = f ? timeOnDevice(eng, backward, 3, o.reps) : llvm::Expected<Timing>(f.takeError());
            auto st = b ? timeOnDevice(
                              eng,
                              [&](int rep) -> llvm::Error {
                                if (auto e = forward(rep))
                                  return e;
                                return backward(rep);
                              },
                              3, o.reps)
                        : llvm::Expected<Timing>(b.takeError());
            if (st)
              tf = *f, tb = *b, ts = *st;
            else
              err = st.takeError();
          }
          if (err) {
            const std::string msg = llvm::toString(std::move(err));
            if (o.json) {
              const llvm::json::Object row{{"kind", "fa4jit-backward"}, {"variant", name}, {"head_dim", d},
                                           {"seqlen", sl}, {"causal", int(c)}, {"error", msg}};
              std::printf("%s\n", llvm::formatv("{0}", llvm::json::Value(llvm::json::Object(row))).str().c_str());
            } else {
              std::fprintf(stderr, "fa4jit bench --backward: D%d seqlen %d causal %d %s: %s\n", d, sl, int(c),
                           name.c_str(), msg.c_str());
            }
            line += fmt::format("{:>34} ", "error");
            continue;
          }
          const double bwd_tf = bwd_flops / (tb->median_ms * 1e-3) / 1e12;
          const double step_tf = (fwd_flops + bwd_flops) / (ts->median_ms * 1e-3) / 1e12;
          if (o.json) {
            llvm::json::Object row{{"kind", "fa4jit-backward"}, {"variant", name},
                                   {"head_dim", d},             {"seqlen", sl},
                                   {"causal", int(c)},          {"batch", s.batch},
                                   {"heads", s.heads_q},        {"fwd_ms", tf->median_ms},
                                   {"bwd_ms", tb->median_ms},   {"bwd_min_ms", tb->min_ms},
                                   {"step_ms", ts->median_ms},  {"bwd_tflops", bwd_tf},
                                   {"step_tflops", step_tf}};
            std::printf("%s\n", llvm::formatv("{0}", llvm::json::Value(std::move(row))).str().c_str());
          }
          line += fmt::format("{:>34} ", fmt::format("{:.3f}/{:.3f}/{:.3f} ms {:.0f}/{:.0f}", tf->median_ms,
                                                     tb->median_ms, ts->median_ms, bwd_tf, step_tf));
          std::fflush(stdout);
        }
        if (!o.json)
          std::printf("%s\n", line.c_str());
      }
  return 0;
}

} // namespace fa4jit::tools
