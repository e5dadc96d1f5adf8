#pragma once
// The public C++ API: an Engine holds the configuration, the kernel JIT (cache included) and the
// device context, and runs quantizers and attention forwards on device pointers.
//
//   auto engine = fa4jit::Engine::create();                 // reads FA4JIT_* once
//   fa4jit::ForwardArgs args;
//   args.q = {q_ptr, fa4jit::DType::BF16, {B, Hq, Sq, D}, {Hq*Sq*D, Sq*D, D, 1}};
//   ... k, v ([B, Hkv, Sk, D]), o ([B, Hq, Sq, D], BF16), lse (float [B, Hq, Sq], optional)
//   args.route = fa4jit::Route::DirectP;  args.causal = true;
//   if (auto err = (*engine)->forward(args)) { ... llvm::toString(std::move(err)) ... }
//
// Every argument is validated (shapes, head dim, strides, 16-byte alignment, dtype, and with the
// driver that each tensor is device memory of the engine's device lying inside one allocation)
// and errors say what is wrong.
#include "fa4jit/cache/tuning_db.h"
#include "fa4jit/codegen/spec.h"
#include "fa4jit/runtime/config.h"
#include "fa4jit/runtime/device_objects.h"
#include "fa4jit/runtime/driver_library.h"
#include "fa4jit/runtime/kernel_jit.h"
#include "fa4jit/runtime/kernel_module.h"
#include "fa4jit/runtime/route_tuner.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/Support/Error.h"

#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>

namespace fa4jit {

// The library's version (the CMake project version), as fa4jit_version() and `fa4jit --version`
// report it and tuning records store it.
const char *libraryVersion();

namespace device::attention {
struct AttentionParams; // templates/fa4jit/attention/params.cuh
}
namespace engine_detail { // runtime/src/engine/workspace_layout.h
struct QuantizedOperand;
struct WorkspaceLayout;
} // namespace engine_detail

enum class DType : uint8_t { BF16, F32, F16 };
const char *toString(DType t);

// A 4-D device tensor [batch, heads, seq, head_dim]; strides in elements; the last dim must be
// contiguous (stride 1).
struct TensorDesc {
  std::uint64_t data = 0; // CUdeviceptr
  DType dtype = DType::BF16;
  std::int64_t shape[4] = {0, 0, 0, 0};
  std::int64_t stride[4] = {0, 0, 0, 1};
  static TensorDesc contiguous(std::uint64_t data, DType dtype, std::int64_t b, std::int64_t h, std::int64_t s,
                               std::int64_t d) {
    return {data, dtype, {b, h, s, d}, {h * s * d, s * d, d, 1}};
  }
};

// One quantized attention operand in the exchange layout of docs/NUMERICS.md §1, owned by the
// engine's caller.
struct QuantizedTensor {
  QuantFormat format = QuantFormat::Nvfp4;
  int batch = 0, heads = 0, seqlen = 0, head_dim = 0;
  runtime::DeviceBuffer payload;     // dense per head
  runtime::DeviceBuffer scales;      // SF layout per head (NVFP4, MXFP4); empty for FP8
  runtime::DeviceBuffer head_scalar; // float g | int32 v_shift | float s_v, [batch*heads]
  // The rows that held a NaN or Inf (encoded as 0): int32 [batch*heads] first such row, then a row
  // bitmask; the forward makes the output rows they reach NaN (docs/NUMERICS.md §1.3).
  runtime::DeviceBuffer nonfinite_rows;
  runtime::DeviceBuffer amax_partial; // the quantizer's per-chunk maxima (scratch)
  int code_shift = 0; // E4M3 rows: codes are E4M3(x / g * 2^-code_shift)
};

struct ForwardArgs {
  TensorDesc q, k, v;    // BF16, or FP16 (one dtype for the three; route bf16: BF16 only)
  TensorDesc o;          // BF16 or FP16 output [B, Hq, Sq, D]
  std::uint64_t lse = 0; // optional float [B, Hq, Sq] (natural log); 0 = not written
  Route route = Route::DirectP;
  // How Q and K are stored: NVFP4, or E4M3 for large logits (the fp8 presets, docs/NUMERICS.md
  // §1.4; the sm_90a wgmma kernels).
  QkFormat qk_format = QkFormat::Nvfp4;
  // Route "auto": the engine picks the preset (route and qk_format are then not read) that meets
  // this budget fastest for the shape (Engine::autoRoute).
  std::optional<runtime::AccuracyBudget> auto_route;
  bool causal = false;
  float softmax_scale = 0.0f;                 // 0 => 1/sqrt(D)
  std::optional<ClassifierSpec> classifier;   // directp: override the tuned/heuristic classifier
  std::optional<KernelSpec> spec;             // use exactly this attention spec (tuning, tests)
  void *stream = nullptr;                     // CUstream; null = legacy default stream
};

// Operands already quantized (e.g. by quantize(), or kept from a previous step).
struct QuantizedForwardArgs {
  const QuantizedTensor *q = nullptr, *k = nullptr, *v = nullptr;
  TensorDesc o;
  std::uint64_t lse = 0;
  Route route = Route::DirectP;
  bool causal = false;
  float softmax_scale = 0.0f;
  std::optional<ClassifierSpec> classifier;
  std::optional<KernelSpec> spec;
  void *stream = nullptr;
};

// The backward of the training route (docs/NUMERICS.md §3): the forward saved NVFP4 Q and K, V
// (FP8 per head for E4M3 P/V, or MXFP4 for the MXFP4 variant), its BF16 output O and LSE, all
// quantized by quantize() and run by forward(QuantizedForwardArgs) with route nvfp8.
struct BackwardArgs {
  const QuantizedTensor *q = nullptr, *k = nullptr, *v = nullptr; // as the forward saved them
  TensorDesc q_bf16, k_bf16; // the BF16 inputs, read by dQ = dS K and dK = dS^T Q (qk bf16, the default)
  TensorDesc o, d_o;         // BF16 [B, Hq, Sq, D]: the forward's output and the incoming gradient
  std::uint64_t lse = 0;     // float [B, Hq, Sq], dense: the forward's LSE
  TensorDesc dq, dk, dv;     // BF16 outputs: [B, Hq, Sq, D], [B, Hkv, Sk, D], [B, Hkv, Sk, D]
  bool causal = false;       // as the forward (bottom-right aligned)
  float softmax_scale = 0.0f; // as the forward; 0 => 1/sqrt(D)
  BackwardPvFormat pv = BackwardPvFormat::E4m3;      // v must then be FP8 (e4m3) or MXFP4 (mxfp4)
  BackwardQkOperands qk = BackwardQkOperands::Bf16;  // saved-nvfp4: q_bf16 and k_bf16 are not read
  bool deterministic = false; // dQ summed in key-block order: the same bits every run
  std::optional<KernelSpec> spec; // use exactly this backward spec (tuning, tests)
  void *stream = nullptr;
};

// Parts one mergeStates call takes (their addresses travel in the kernel's argument); merge more
// by merging merged states.
constexpr int kMaxMergeParts = 16;

// One attention state: O over some set of keys and its LSE (natural log), as forward() writes
// them. A row that saw no key has LSE -inf; its O is then never read.
struct AttentionState {
  TensorDesc o;          // BF16, FP16 or F32 [B, H, S, D]
  std::uint64_t lse = 0; // float [B, H, S], dense
};

// The states of attention over disjoint key sets (split-KV, context parallelism) merged into the
// state over their union (docs/NUMERICS.md §4), in FP32.
struct MergeArgs {
  llvm::ArrayRef<AttentionState> parts; // 1 .. kMaxMergeParts, all of o's shape and dtype
  TensorDesc o;          // the merged O; may be exactly one part's o (in place)
  std::uint64_t lse = 0; // the merged LSE, float [B, H, S] dense; 0 = not written; may be a part's
  void *stream = nullptr;
};

// One layer of the paged, quantized KV cache (docs/NUMERICS.md §5) in device memory the caller
// owns: NVFP4 K with a scale per row, and FP8 V with a scale per row or MXFP4 V, in [pages,
// kv_heads, page_size] rows (templates/fa4jit/paged/params.cuh has each array's layout).
// pagedKvCacheBytes() sizes one allocation for all the arrays and pagedKvCacheAt() lays them out.
// Every array is 16-byte aligned (decode moves each step's rows in 16-byte pieces).
struct PagedKvCache {
  std::uint64_t k_codes = 0;        // uint8 [pages, kv_heads, page_size, head_dim / 2]
  std::uint64_t k_block_scales = 0; // uint8 [pages, kv_heads, page_size, head_dim / 16]
  std::uint64_t k_row_scales = 0;   // float [pages, kv_heads, page_size]
  std::uint64_t v_codes = 0;        // uint8 [.., head_dim] (fp8) or [.., head_dim / 2] (mxfp4)
  std::uint64_t v_row_scales = 0;   // fp8: float [pages, kv_heads, page_size]
  std::uint64_t v_block_scales = 0; // mxfp4: uint8 [pages, kv_heads, page_size, head_dim / 32]
  int pages = 0, kv_heads = 0, page_size = 0, head_dim = 0;
  KvValueFormat value_format = KvValueFormat::Fp8;
};
std::size_t pagedKvCacheBytes(int pages, int kv_heads, int page_size, int head_dim,
                              KvValueFormat value_format = KvValueFormat::Fp8);
PagedKvCache pagedKvCacheAt(std::uint64_t base, int pages, int kv_heads, int page_size, int head_dim,
                            KvValueFormat value_format = KvValueFormat::Fp8);

// New tokens' K and V quantized into their cache rows (each row on its own, docs/NUMERICS.md
// §5.1): token t goes to slot_mapping[t] (page slot / page_size, row slot % page_size), as vLLM's
// slot mapping; a negative slot skips the token (padding of a captured batch), and a slot past the
// cache writes nothing.
struct AppendKvArgs {
  PagedKvCache cache;
  TensorDesc k, v;                // BF16 [tokens, kv_heads, 1, head_dim] (a [tokens, kv_heads, head_dim] tensor)
  std::uint64_t slot_mapping = 0; // int64 [tokens], device
  void *stream = nullptr;
};

// Decode over the paged cache: `queries` new tokens per sequence (1 for plain decode, more for
// speculative decoding) attend to the sequence's first seq_lens[b] cached tokens, which include
// them (causal among themselves, bottom-right aligned: query i sees tokens j <= i + seq_len -
// queries). GQA groups are packed into one tile: every CTA reads its kv head's pages once for up
// to 16 query rows. Split-KV spreads one sequence over several CTAs when the batch is too small to
// fill the GPU, and a combine merges the splits on the GPU.
struct DecodeArgs {
  PagedKvCache cache;
  TensorDesc q;                    // BF16 [batch, q_heads, queries, head_dim], q_heads % kv_heads == 0
  TensorDesc o;                    // BF16, q's shape
  std::uint64_t lse = 0;           // optional float [batch, q_heads, queries] (natural log)
  std::uint64_t block_table = 0;   // int32 [batch, block_table_stride]: each sequence's pages in order
  int block_table_stride = 0;      // entries per sequence
  std::uint64_t seq_lens = 0;      // int32 [batch], device: tokens of each sequence
  int max_seq_len = 0;             // a bound of seq_lens for the split choice; 0: the block table's capacity
  float softmax_scale = 0.0f;      // 0 => 1/sqrt(head_dim)
  int splits = 0;                  // key splits per sequence, 1 .. 16; 0: the heuristic's
  std::optional<KernelSpec> spec;  // use exactly this paged-kv spec (tuning, tests)
  void *stream = nullptr;
};

// What a decode call runs: the module and how the keys are split.
struct DecodePlan {
  KernelSpec spec;    // family PagedKv
  int splits = 1;     // CTAs per (sequence, kv head, row block) along the keys
  int row_blocks = 1; // 16-row tiles of one kv head's query rows (group x queries)
  bool from_tuning = false; // spec or splits from the tuning database (fa4jit tune --decode)
};

struct EngineOptions {
  std::optional<runtime::RuntimeConfig> config; // default: runtime::loadConfig() (FA4JIT_*)
  int device = 0;
  // Replaces the configuration's policy (FA4JIT_CHECK_FINITE) when set.
  std::optional<runtime::NonFinitePolicy> nonfinite;
  // Replaces the configuration's FA4JIT_QUANTIZE_PASSES when set.
  std::optional<runtime::QuantizePasses> quantize_passes;
};

class Engine {
public:
  static llvm::Expected<std::unique_ptr<Engine>> create(const EngineOptions &options = {});
  ~Engine();

  // Quantizes x ([B, H, S, D], BF16, FP16 or F32) into `format` (NVFP4 or E4M3 rows for Q/K; MXFP4
  // or FP8 V^T for V) on `stream`. E4M3 rows carry the attention kernel's qk_widen_shift as
  // `code_shift` (3 to 16; forward() checks that they match). NaN and Inf follow the engine's
  // NonFinitePolicy: recorded in nonfinite_rows (Propagate), or an error naming the tensor, batch,
  // head and row (Check, which waits for the stream).
  llvm::Expected<QuantizedTensor> quantize(const TensorDesc &x, QuantFormat format, const char *what = "x",
                                           void *stream = nullptr, int code_shift = 0);
  // The same into `into`, reusing its buffers where they hold enough: operands quantized again
  // and again (a KV cache, each step's Q) allocate nothing once they have their size.
  llvm::Error quantize(const TensorDesc &x, QuantFormat format, QuantizedTensor &into, const char *what = "x",
                       void *stream = nullptr, int code_shift = 0);
  // Device bytes of one quantized operand of `format` and shape [batch, heads, seqlen, head_dim]
  // laid out in one block (quantizedIn).
  static std::size_t quantizedBytes(QuantFormat format, int batch, int heads, int seqlen, int head_dim);
  // An operand whose parts live in `bytes` of caller-owned device memory at `address` (256-byte
  // aligned, at least quantizedBytes): quantize() writes it in place, and dropping it frees
  // nothing. A framework's tensor then carries a saved operand (what torch.compile traces).
  llvm::Expected<QuantizedTensor> quantizedIn(QuantFormat format, int batch, int heads, int seqlen, int head_dim,
                                              std::uint64_t address, std::size_t bytes) const;

  // Attention forward from BF16 inputs: quantizes as the route needs (into the engine's
  // workspace), then runs the attention kernel chosen for the shape, all on args.stream: once a
  // shape has run, a call allocates nothing and never waits for the device (with the Propagate
  // policy), so it can be captured in a CUDA graph. A call with no batch, no query heads or no
  // queries does nothing; one with no keys writes O = 0 and LSE = -inf (the rule of a fully
  // masked causal row). One forward at a time per Engine (the workspace is shared).
  llvm::Error forward(const ForwardArgs &args);
  // The same on a workspace the caller owns (as cuDNN and FlashInfer take one): `workspace` is
  // device memory of at least workspaceSize(args) bytes, 256-byte aligned, whose contents need not
  // be initialized and which is not used after the stream reaches the end of the call. Calls on
  // different workspaces and streams may run concurrently.
  llvm::Error forward(const ForwardArgs &args, std::uint64_t workspace, std::size_t workspace_bytes);
  // Bytes forward(args, workspace, ...) needs for these arguments (0 for an empty call).
  llvm::Expected<std::size_t> workspaceSize(const ForwardArgs &args) const;
  // Attention forward on quantized operands (no quantization, no synchronization).
  llvm::Error forward(const QuantizedForwardArgs &args);

  // The backward of the training route: dQ, dK, dV from dO and what the forward saved, on
  // args.stream (three launches, the engine's backward workspace; grown only when a larger shape
  // arrives, so that steady-state calls allocate nothing and never wait for the device). A call
  // with no batch or no heads does nothing; no queries give dK = dV = 0, no keys dQ = 0. One
  // backward at a time per Engine (the workspace is shared).
  llvm::Error backward(const BackwardArgs &args);
  // The backward spec backward() would use: the Q/K widening of the nvfp8 forward this engine
  // runs for the shape (attentionSpecFor) and the heuristic's tiles for the head dim.
  llvm::Expected<KernelSpec> backwardSpecFor(const BackwardArgs &args) const;

  // Merges attention states on args.stream: one launch, no allocation, no waiting for the device.
  // Rows whose parts all saw no key get O = 0 and LSE = -inf; a NaN LSE makes its row NaN. A call
  // with no rows does nothing.
  llvm::Error mergeStates(const MergeArgs &args);

  // Quantizes new tokens into the paged cache on args.stream: one launch, no allocation, no waiting
  // for the device. A call with no tokens does nothing.
  llvm::Error appendKv(const AppendKvArgs &args);
  // Decode over the paged cache on args.stream: one launch, or two with splits (the combine), on
  // the engine's workspace (grown only when a larger shape arrives). No waiting for the device. A
  // sequence whose length exceeds its block table, or one whose pages lie outside the cache, gets
  // NaN rows (the checks cost no synchronization); rows that see no token get O = 0, LSE = -inf.
  llvm::Error decode(const DecodeArgs &args);
  // The same on a workspace the caller owns, of at least decodeWorkspaceSize(args) bytes,
  // 256-byte aligned.
  llvm::Error decode(const DecodeArgs &args, std::uint64_t workspace, std::size_t workspace_bytes);
  llvm::Expected<std::size_t> decodeWorkspaceSize(const DecodeArgs &args) const;
  // The module, splits and row blocks decode() would use for these arguments.
  llvm::Expected<DecodePlan> decodePlan(const DecodeArgs &args) const;

  // The attention spec forward() would use for these arguments: the tuning database's winner for
  // (target, route, head dim, causal, seqlen bucket of seqlen_k) when it has one (docs/TUNING.md),
  // else the heuristic; with FA4JIT_TUNE=replay a miss is an error naming the shape. An explicit
  // classifier replaces the tuned one (directp).
  // E4M3 Q/K (qk_format) take the route's tuned or default tiles (withQkFormat).
  llvm::Expected<KernelSpec> attentionSpecFor(Route route, int head_dim, bool causal, int seqlen_k,
                                              const std::optional<ClassifierSpec> &classifier,
                                              QkFormat qk_format = QkFormat::Nvfp4) const;

  // Route "auto": the preset a forward with this budget runs for (head dim, causal, seqlen_k's
  // bucket), and the cosine predicted for it. The tuning database's record when `fa4jit tune
  // --auto` timed the presets for this budget, else the first of routePreferenceOrder whose CPU
  // model meets it (runtime::RouteTuner: a few CPU model runs, under a second). Either is looked up
  // or computed once per key and remembered for the engine's life; FA4JIT_TUNE=replay makes a
  // missing record an error.
  struct AutoRouteChoice {
    RoutePreset preset;
    double predicted_cosine = 0;
    bool tuned = false; // from a timed record
  };
  // FP16 inputs leave bf16 out (its kernels read BF16). A budget no preset meets is an error,
  // remembered like a choice.
  llvm::Expected<AutoRouteChoice> autoRoute(int head_dim, bool causal, int seqlen_k,
                                            const runtime::AccuracyBudget &budget,
                                            DType inputs = DType::BF16) const;

  // Device bytes the engine's workspace holds now: quantized operands, widened tile images,
  // counters. It grows when a larger shape arrives and is reused by every call that fits.
  std::size_t workspaceBytes() const;

  const runtime::DeviceInfo &device() const { return device_; }
  runtime::CudaDriver &driver() { return driver_; }
  runtime::KernelJit &jit() { return *jit_; }
  const runtime::RuntimeConfig &config() const { return config_; }
  runtime::NonFinitePolicy nonFinitePolicy() const { return config_.nonfinite; }
  Target target() const { return target_; }
  // The tuning database of this device (system layer, then user layer beside the kernel cache).
  cache::TuningDb &tuningDb() { return *tuning_; }
  const cache::TuningDb &tuningDb() const { return *tuning_; }

  // A launchable kernel for `spec` (compiled or cached, loaded into this engine's device).
  llvm::Expected<runtime::Kernel &> kernel(const KernelSpec &spec, const std::string &entry);

private:
  // `bytes` from `address` are device memory of this engine's device, inside one allocation.
  llvm::Error checkDeviceMemory(std::uint64_t address, std::uint64_t bytes, const char *name) const;
  // Every element of `t` (from its first to its last) is such memory.
  llvm::Error checkTensorMemory(const TensorDesc &t, const char *name) const;
  // Every array of the paged cache is such memory, of the size its dims and format give.
  llvm::Error checkPagedCacheMemory(const PagedKvCache &cache) const;
  // Quantizes x into `out` (whose parts hold enough): MXFP4 in one pass where `out` has sync
  // words, else the two passes; then applies the NonFinitePolicy.
  llvm::Error quantizeOperand(const TensorDesc &x, const engine_detail::QuantizedOperand &out, const char *what,
                              void *stream);
  // The Check policy on what the quantizer recorded in out.nonfinite_rows (waits for the stream);
  // nothing under Propagate.
  llvm::Error checkNonFinite(const engine_detail::QuantizedOperand &out, const char *what, void *stream);
  // The attention spec of a BF16-input forward (tuned, heuristic or args.spec).
  llvm::Expected<KernelSpec> forwardSpec(const ForwardArgs &args) const;
  // A workspace the caller passed to forward().
  struct CallerWorkspace {
    std::uint64_t address;
    std::size_t bytes;
  };
  // Both BF16-input forwards: on the caller's workspace, or on the engine's when `caller` is null.
  llvm::Error forwardFromBf16(const ForwardArgs &args, const CallerWorkspace *caller);
  // forward() after validation, on the workspace at `workspace`, laid out by `layout`.
  llvm::Error forwardOn(const ForwardArgs &args, const KernelSpec &spec, const engine_detail::WorkspaceLayout &layout,
                        std::uint64_t workspace, bool engine_workspace);
  // Validation shared by both BF16-input forwards; `empty` is set for a call with nothing to do.
  llvm::Error checkForwardArgs(const ForwardArgs &args, bool &empty) const;
  // The result of a forward over no keys: O = 0, LSE = -inf, on the caller's stream.
  llvm::Error writeNoKeysResult(const TensorDesc &o, std::uint64_t lse, void *stream);
  // decode() after validation, on `workspace` (0 when the plan has one split).
  llvm::Error decodeOn(const DecodeArgs &args, const DecodePlan &plan, std::uint64_t workspace);
  // The engine's workspace grown to `layout` (never shrunk).
  llvm::Error growWorkspace(const engine_detail::WorkspaceLayout &layout);
  Engine(runtime::RuntimeConfig config, runtime::CudaDriver &driver, runtime::DeviceInfo device,
         std::unique_ptr<runtime::KernelJit> jit, Target target);
  // `counters_zero`: the workspace's counters are known to be zero (else they are zeroed on the
  // stream first, when the kernel uses them).
  llvm::Error launchAttention(const KernelSpec &spec, const engine_detail::QuantizedOperand *q,
                              const engine_detail::QuantizedOperand *k, const engine_detail::QuantizedOperand *v,
                              const TensorDesc *bq, const TensorDesc *bk, const TensorDesc *bv, const TensorDesc &o,
                              std::uint64_t lse, void *stream, const engine_detail::WorkspaceLayout &layout,
                              std::uint64_t workspace, bool counters_zero);
  llvm::Error launchNonFiniteRows(const KernelSpec &spec, const runtime::CompiledKernel &compiled,
                                  device::attention::AttentionParams &p, void *stream);
  // Check policy, bf16 route: the inputs scanned for NaN/Inf by a quantizer (into scratch of the
  // engine's), an error naming the first.
  llvm::Error checkFiniteBf16(const ForwardArgs &args);
  llvm::Error launchWidening(const KernelSpec &spec, const runtime::CompiledKernel &compiled, llvm::StringRef suffix,
                             std::array<unsigned, 3> grid, device::attention::AttentionParams &p, void *stream);

  runtime::RuntimeConfig config_;
  runtime::CudaDriver &driver_;
  runtime::DeviceInfo device_;
  std::unique_ptr<runtime::KernelJit> jit_;
  Target target_;
  std::mutex modules_mutex_;
  std::map<std::string, std::unique_ptr<runtime::KernelModule>> modules_; // by cache key
  // The engine's own workspace (engine_detail::WorkspaceLayout): one allocation, grown when a
  // larger shape arrives. Its counters start zero when allocated and every launch leaves them
  // zero; `counters_zero_bytes` says how far that holds after the last forward's other parts.
  struct Workspace {
    runtime::DeviceBuffer buffer;
    std::size_t counters_zero_bytes = 0;
    QuantizedTensor check_scratch; // the Check policy's scan of bf16-route inputs
    runtime::DeviceBuffer backward;  // backward(): delta, dO maxima, dQ accumulator, semaphores
    runtime::DeviceBuffer decode;    // decode(): the splits' partial states
  };
  std::unique_ptr<Workspace> workspace_;
  std::unique_ptr<cache::TuningDb> tuning_;
  // autoRoute's predicted choices by tuning key, and its accuracy probes by logit std.
  struct AutoRoutes;
  std::unique_ptr<AutoRoutes> auto_routes_;
};

// The target fa4jit compiles for on a device of this compute capability (sm_90 -> sm_90a,
// sm_100 -> sm_100a, sm_89, sm_80), or an error for devices it has no kernels for.
llvm::Expected<Target> targetForDevice(int cc_major, int cc_minor);

} // namespace fa4jit
