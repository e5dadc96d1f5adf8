// Example of the file the code generator emits for one attention-forward kernel (the
// instantiation contract is at the top of templates/fa4jit/attention/kernel.cuh). This one:
// route directp, head dim 128, non-causal, block 64 x 64, 4 warps, NVFP4 Q/K widened to E4M3 with
// shift 3, P offset 8, V^T not pre-permuted, threshold classifier, SampledAnchor guard (stride 8,
// slack 0), softmax_scale = 1/sqrt(128).
// Not embedded (it lives outside templates/fa4jit): compile it by hand with
//   nvcc -std=c++17 -I templates -gencode=arch=compute_90a,code=sm_90a -c attention_directp_d128.cu
#include "fa4jit/attention/kernel.cuh"

namespace {
using namespace fa4jit::device;
using namespace fa4jit::device::attention;

struct Cfg {
  static constexpr Route route = Route::DirectP;
  static constexpr int head_dim = 128;
  static constexpr bool causal = false;
  static constexpr int block_m = 64;
  static constexpr int block_n = 64;
  static constexpr int warps = 4;
  static constexpr Widening qk_widening = Widening::E4m3;
  static constexpr int qk_widen_shift = 3;
  static constexpr int p_offset_log2 = 8;
  static constexpr bool v_keys_permuted16 = false;
  // FP32(softmax_scale * log2(e)) * 4^3 = 0x1.0527dcp-3 * 64
  static constexpr float score_scale = 0x1.0527dcp+3f;
  static constexpr DirectPCoefficients classifier = {
      /*kind=*/0, /*alpha=*/2.0f, /*beta=*/0.0f,
      /*theta=*/{-0x1p+1f, -0x1.a8ff98p-2f, 0x1.49a784p-2f, 0x1.9d5dap-1f, 0x1.5269e2p+0f, 0x1.ceaedp+0f,
                 0x1.2934fp+1f},
      /*y_split=*/1.0f};
  static constexpr GuardKind guard = GuardKind::SampledAnchor;
  static constexpr int guard_sample_stride = 8;
  static constexpr float guard_slack_log2 = 0.0f;
};

static_assert(AttentionTraits<Cfg>::kThreads == 128, "generator and template disagree on threads");
static_assert(AttentionTraits<Cfg>::kSharedBytes == 28672, "generator and template disagree on shared memory");
} // namespace

extern "C" __global__ void __launch_bounds__(128)
    fa4jit_attn_fwd_directp_d128_example(const fa4jit::device::attention::AttentionParams params) {
  fa4jit::device::attention::attentionForward<Cfg>(params);
}
