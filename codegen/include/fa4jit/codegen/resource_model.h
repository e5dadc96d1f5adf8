#pragma once
// Resource model of an attention spec: what one CTA needs in registers, shared memory and (on the
// tcgen05 path of sm_100a) tensor memory, against what the target offers. The autotuner prunes a
// candidate that cannot fit before spending an NVRTC compile on it; a candidate that fits here
// can still fail to compile or launch, and then counts as infinitely slow.
#include <string>
#include <vector>

#include "fa4jit/codegen/spec.h"

namespace fa4jit {

struct ResourceEstimate {
  int threads = 0;
  // Registers per (consumer) thread. mma.sync: the FP32 O accumulator (head_dim / 2), the FP32 S
  // tile (block_n / 2), the packed P fragments, plus fixed addressing and row state. wgmma: the
  // same per consumer thread of a 64-row warpgroup. tcgen05: S and O live in TMEM; not limiting.
  int registers = 0;
  // mma.sync: 255 (the ISA's per-thread maximum), or fewer when warps * 32 threads at that count
  // would not fit the 64K-register file of one SM (the CTA could not launch at all). wgmma: the
  // consumer warpgroups' setmaxnreg budget.
  int register_cap = 0;
  int shared_bytes = 0; // attentionSharedBytes(), the template's dynamic shared memory
  int shared_cap = 0;   // the target's opt-in maximum per CTA (227 KiB on sm_90a and sm_100a)
  bool uses_tmem = false;
  int tmem_columns = 0; // tcgen05.alloc columns of the TMEM plan (0 when unused or not fitting)
  std::vector<std::string> violations; // empty when the spec fits
  bool fits() const { return violations.empty(); }
};

// The fixed part of the register estimate: pointers, loop counters, row max / sum of the thread's
// two rows, scale factors, K/V fragment staging. Calibrated so that the sm_90a heuristic variants
// (no spills in tests/runtime/test_compile_all_variants.cpp) fit and block_n = 128 at head dim 256
// (which spills) does not.
inline constexpr int kAttentionFixedRegisters = 48;
inline constexpr int kMaxRegistersPerThread = 255;
inline constexpr int kRegisterFileEntries = 64 * 1024;
// wgmma-ws: consumers raise their budget with setmaxnreg (attention_sm90/layout.cuh's
// consumerRegisters): 240 with prewidened K/V (the producer keeps 24), 216 with in-kernel widening
// (the producer keeps 64); 160 with three consumers (block_m 192; the producer keeps 32). The
// fixed part is smaller than mma.sync's (no per-thread K fragments:
// wgmma reads K from shared memory).
inline constexpr int kWgmmaConsumerRegistersPrewidened = 240;
inline constexpr int kWgmmaConsumerRegistersInKernel = 216;
inline constexpr int kWgmmaConsumerRegistersThreeConsumers = 160;
inline constexpr int kWgmmaFixedRegisters = 40;
// Three consumers: the bf16 D64 128-key kernel (S 64, O 32 and BF16 P 32 registers) compiles
// without spills at 160 (CI's SASS check), so the fixed part is at most 32 there.
inline constexpr int kWgmmaFixedRegistersThreeConsumers = 32;

// True when the spec runs on tensor memory (the sm_100a tcgen05 kernel, isTcgen05Attention). The
// mma.sync path on sm_100a keeps S and O in registers like sm_90a.
bool usesTensorMemory(const KernelSpec &spec);

// Estimate for an attention spec (precondition: spec.family == AttentionForward). Violations name
// the resource, the need and the limit, e.g. "registers: ~272 per thread > 255".
ResourceEstimate estimateResources(const KernelSpec &spec);

} // namespace fa4jit
