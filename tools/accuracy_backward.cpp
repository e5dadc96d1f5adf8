// `fa4jit accuracy --backward`: the backward variants' models against FP64 gradients.
#include "accuracy_backward.h"

#include "fa4jit/codegen/formats.h"
#include "fa4jit/codegen/heuristics.h"
#include "fa4jit/cpu/model.h"

namespace fa4jit::tools {

namespace {

std::vector<float> gaussianBf16(std::size_t n, double sigma, uint64_t seed) {
  std::vector<float> v = gaussian(n, sigma, seed);
  for (float &x : v)
    x = formats::roundToBF16(x);
  return v;
}

} // namespace

llvm::Expected<std::vector<BackwardAccuracyRow>>
runBackwardAccuracy(const AccuracyGrid &g, const std::function<void(int, int)> &progress) {
  for (int d : g.head_dims)
    if (d != 64 && d != 128)
      return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                     "--backward: head dim %d has no backward kernel (64 or 128)", d);
  struct Variant {
    const char *name;
    BackwardPvFormat pv;
    BackwardQkOperands qk;
  };
  const Variant variants[] = {{"e4m3", BackwardPvFormat::E4m3, BackwardQkOperands::Bf16},
                              {"e4m3 saved-nvfp4", BackwardPvFormat::E4m3, BackwardQkOperands::SavedNvfp4},
                              {"mxfp4", BackwardPvFormat::Mxfp4, BackwardQkOperands::Bf16}};
  std::vector<BackwardAccuracyRow> out;
  const int total = static_cast<int>(g.sigmas.size() * g.seqlens.size() * g.head_dims.size() * g.causal.size());
  int done = 0;
  for (double sigma : g.sigmas)
    for (int seqlen : g.seqlens)
      for (int dim : g.head_dims)
        for (bool causal : g.causal) {
          const std::size_t n = static_cast<std::size_t>(seqlen) * dim;
          const std::vector<float> q = gaussianBf16(n, sigma, g.seed * 4 + 0), k = gaussianBf16(n, sigma, g.seed * 4 + 1);
          const std::vector<float> v = gaussianBf16(n, 1.0, g.seed * 4 + 2), d_o = gaussianBf16(n, 1.0, g.seed * 4 + 3);
          cpu::BackwardProblem p;
          p.forward.shape = {1, 1, 1, seqlen, seqlen, dim};
          p.forward.q = cpu::TensorRef::contiguous(q.data(), 1, seqlen, dim);
          p.forward.k = cpu::TensorRef::contiguous(k.data(), 1, seqlen, dim);
          p.forward.v = cpu::TensorRef::contiguous(v.data(), 1, seqlen, dim);
          p.d_o = cpu::TensorRef::contiguous(d_o.data(), 1, seqlen, dim);
          // The training forward as the sm_90a engine runs it (its Q/K widening), O rounded to BF16.
          const KernelSpec spec = defaultBackwardSpec(dim, causal, 0.0f, Target::Sm90a);
          cpu::ModelOptions mo;
          mo.selection.threads = g.threads;
          auto fwd = cpu::runRouteModel(spec.backward.forward, p.forward, mo);
          if (!fwd)
            return fwd.takeError();
          std::vector<float> o(fwd->result.o.begin(), fwd->result.o.end()), lse(fwd->result.lse.begin(), fwd->result.lse.end());
          for (float &x : o)
            x = formats::roundToBF16(x);
          p.o = cpu::TensorRef::contiguous(o.data(), 1, seqlen, dim);
          p.lse = lse.data();
          cpu::ReferenceOptions ro;
          ro.causal = causal;
          auto ref = cpu::referenceAttentionBackward(p, ro);
          if (!ref)
            return ref.takeError();
          for (const Variant &var : variants) {
            BackwardSpec b = spec.backward;
            b.pv = var.pv;
            b.qk = var.qk;
            auto m = cpu::runBackwardModel(b, p, g.threads);
            if (!m)
              return m.takeError();
            out.push_back({var.name, sigma, seqlen, dim, causal, cpu::compareGradients(*m, *ref)});
          }
          if (progress)
            progress(++done, total);
        }
  return out;
}

} // namespace fa4jit::tools
