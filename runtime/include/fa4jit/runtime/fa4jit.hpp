// fa4jit's installed C++ API: a header-only layer over the C API of libfa4jit.so (fa4jit_c.h),
// with fa4jit's own types only: no LLVM, no exceptions, move-only owners, and the C ABI below it
// so that a runtime built with another compiler or standard library links the same library.
//
//   #include <fa4jit/runtime/fa4jit.hpp>
//   fa4jit::api::Result<fa4jit::api::Engine> engine = fa4jit::api::Engine::create(/*device=*/0);
//   if (!engine.ok()) { std::cerr << engine.status().message() << "\n"; return 1; }
//   fa4jit::api::ForwardArgs a;
//   a.q = fa4jit::api::Tensor::contiguous(q_ptr, fa4jit::api::DType::BF16, B, Hq, Sq, D);
//   a.k = ...; a.v = ...; a.o = ...;   // [B, Hkv, Sk, D], [B, Hq, Sq, D]
//   a.route = fa4jit::api::Route::DirectP, a.causal = true, a.stream = stream;
//   if (fa4jit::api::Status s = engine.value().forward(a); !s.ok()) std::cerr << s.message() << "\n";
//
// Quantize once, attend many times (an FP4 KV cache): Engine::quantize returns a QuantizedTensor
// that frees its device memory when it goes; forward(QuantizedForwardArgs) reads them.
//
// The in-tree C++ API (fa4jit/runtime/engine.h, static libraries) is not installed: its headers
// use LLVM's types.
#ifndef FA4JIT_RUNTIME_FA4JIT_HPP
#define FA4JIT_RUNTIME_FA4JIT_HPP

#include "fa4jit/runtime/fa4jit_c.h"

#include <cstdint>
#include <string>
#include <utility>

namespace fa4jit::api {

enum class Route : int32_t { Bf16 = FA4JIT_ROUTE_BF16, Nvfp8 = FA4JIT_ROUTE_NVFP8, DirectP = FA4JIT_ROUTE_DIRECTP };
enum class DType : int32_t { BF16 = FA4JIT_DTYPE_BF16, F32 = FA4JIT_DTYPE_F32, F16 = FA4JIT_DTYPE_F16 };
enum class Format : int32_t { Nvfp4 = FA4JIT_FORMAT_NVFP4, Mxfp4 = FA4JIT_FORMAT_MXFP4, Fp8 = FA4JIT_FORMAT_FP8 };

// The outcome of a call: ok, or the library's message (what is wrong, naming the argument).
class Status {
public:
  Status() = default;
  static Status fromCode(int code) { return code == FA4JIT_OK ? Status() : Status(fa4jit_last_error()); }
  bool ok() const { return !failed_; }
  const std::string &message() const { return message_; }

private:
  explicit Status(const char *message) : failed_(true), message_(message ? message : "") {}
  bool failed_ = false;
  std::string message_;
};

// A value or the Status that explains its absence.
template <class T> class Result {
public:
  Result(T value) : value_(std::move(value)), has_value_(true) {} // NOLINT: implicit, as a return value
  Result(Status status) : status_(std::move(status)) {}           // NOLINT
  bool ok() const { return has_value_; }
  const Status &status() const { return status_; }
  T &value() & { return value_; }
  const T &value() const & { return value_; }
  T &&value() && { return std::move(value_); }

private:
  T value_{};
  Status status_;
  bool has_value_ = false;
};

// A [batch, heads, seqlen, head_dim] tensor in device memory; strides in elements, the head dim
// contiguous (stride[3] == 1).
struct Tensor {
  uint64_t data = 0;
  DType dtype = DType::BF16;
  int64_t shape[4] = {0, 0, 0, 0};
  int64_t stride[4] = {0, 0, 0, 1};

  static Tensor contiguous(uint64_t data, DType dtype, int64_t b, int64_t h, int64_t s, int64_t d) {
    Tensor t;
    t.data = data, t.dtype = dtype;
    t.shape[0] = b, t.shape[1] = h, t.shape[2] = s, t.shape[3] = d;
    t.stride[0] = h * s * d, t.stride[1] = s * d, t.stride[2] = d, t.stride[3] = 1;
    return t;
  }
  // [batch, seqlen, heads, head_dim] memory (flash_attn_func's layout) seen as [B, H, S, D].
  static Tensor bshd(uint64_t data, DType dtype, int64_t b, int64_t s, int64_t h, int64_t d) {
    Tensor t;
    t.data = data, t.dtype = dtype;
    t.shape[0] = b, t.shape[1] = h, t.shape[2] = s, t.shape[3] = d;
    t.stride[0] = s * h * d, t.stride[1] = d, t.stride[2] = h * d, t.stride[3] = 1;
    return t;
  }
  fa4jit_tensor c() const {
    fa4jit_tensor t{};
    t.data = data, t.dtype = static_cast<int32_t>(dtype);
    for (int i = 0; i < 4; ++i)
      t.shape[i] = shape[i], t.stride[i] = stride[i];
    return t;
  }
};

// Attention from BF16 or F16 tensors (route Bf16: BF16 only): q [B, Hq, Sq, D], k and v
// [B, Hkv, Sk, D], o [B, Hq, Sq, D] BF16 or F16.
struct ForwardArgs {
  Tensor q, k, v, o;
  uint64_t lse = 0;          // float [B, Hq, Sq], natural log; 0: not written
  Route route = Route::DirectP;
  bool causal = false;       // bottom-right aligned when Sq != Sk
  float softmax_scale = 0;   // 0: 1/sqrt(head_dim)
  void *stream = nullptr;    // CUstream; null: the legacy default stream

  fa4jit_forward_args c() const {
    fa4jit_forward_args a{};
    a.q = q.c(), a.k = k.c(), a.v = v.c(), a.o = o.c();
    a.lse = lse, a.route = static_cast<int32_t>(route), a.causal = causal ? 1 : 0;
    a.softmax_scale = softmax_scale, a.stream = stream;
    return a;
  }
};

// One quantized operand (NVFP4 Q/K, MXFP4 or FP8 V^T), owning its device memory.
class QuantizedTensor {
public:
  QuantizedTensor() = default;
  explicit QuantizedTensor(fa4jit_quantized *handle) : handle_(handle) {}
  QuantizedTensor(QuantizedTensor &&other) noexcept : handle_(std::exchange(other.handle_, nullptr)) {}
  QuantizedTensor &operator=(QuantizedTensor &&other) noexcept {
    std::swap(handle_, other.handle_);
    return *this;
  }
  QuantizedTensor(const QuantizedTensor &) = delete;
  QuantizedTensor &operator=(const QuantizedTensor &) = delete;
  ~QuantizedTensor() {
    if (handle_)
      fa4jit_quantized_destroy(handle_);
  }
  const fa4jit_quantized *handle() const { return handle_; }

private:
  fa4jit_quantized *handle_ = nullptr;
};

// Attention on operands quantized beforehand (no quantization, no synchronization).
struct QuantizedForwardArgs {
  const QuantizedTensor *q = nullptr, *k = nullptr, *v = nullptr; // NVFP4 q, k; v MXFP4 or FP8
  Tensor o;
  uint64_t lse = 0;
  Route route = Route::DirectP; // Nvfp8 or DirectP
  bool causal = false;
  float softmax_scale = 0;
  void *stream = nullptr;
};

// The training route's backward: what the nvfp8 forward on quantized operands saved (NVFP4 q, k;
// FP8 v, or MXFP4 v with pv_mxfp4), its o and lse, and d_o; BF16 dq, dk, dv out.
struct BackwardArgs {
  const QuantizedTensor *q = nullptr, *k = nullptr, *v = nullptr;
  Tensor q_bf16, k_bf16; // the BF16 inputs (read unless qk_saved_nvfp4)
  Tensor o, d_o;
  uint64_t lse = 0;
  Tensor dq, dk, dv;
  bool causal = false;
  float softmax_scale = 0;
  bool pv_mxfp4 = false;       // P and V as MXFP4 (the unstable variant, to compare)
  bool qk_saved_nvfp4 = false; // dQ, dK from the saved NVFP4 Q/K instead of the BF16 inputs
  bool deterministic = false;  // the same dQ bits every run
  void *stream = nullptr;
};

// One attention state: O over some keys and its LSE (float [B, H, S], dense, natural log).
struct AttentionState {
  Tensor o;
  uint64_t lse = 0;
};

// One device's engine: kernels, cache, tuning and workspace. One forward at a time per engine on
// its own workspace; forward(args, workspace, bytes) takes the caller's instead.
class Engine {
public:
  static Result<Engine> create(int device) {
    fa4jit_engine *e = nullptr;
    if (const int rc = fa4jit_engine_create(device, &e); rc != FA4JIT_OK)
      return Status::fromCode(rc);
    return Engine(e);
  }
  Engine() = default;
  Engine(Engine &&other) noexcept : engine_(std::exchange(other.engine_, nullptr)) {}
  Engine &operator=(Engine &&other) noexcept {
    std::swap(engine_, other.engine_);
    return *this;
  }
  Engine(const Engine &) = delete;
  Engine &operator=(const Engine &) = delete;
  ~Engine() {
    if (engine_)
      fa4jit_engine_destroy(engine_);
  }

  // Quantizes what the route needs and attends, all on args.stream; once a shape has run it
  // allocates nothing and never waits for the device (CUDA-graph capturable).
  Status forward(const ForwardArgs &args) {
    const fa4jit_forward_args a = args.c();
    return Status::fromCode(fa4jit_forward(engine_, &a));
  }
  // The bytes of workspace forward(args, workspace, bytes) needs.
  Result<uint64_t> workspaceSize(const ForwardArgs &args) {
    const fa4jit_forward_args a = args.c();
    uint64_t bytes = 0;
    if (const int rc = fa4jit_workspace_size(engine_, &a, &bytes); rc != FA4JIT_OK)
      return Status::fromCode(rc);
    return bytes;
  }
  // forward on the caller's workspace: device memory, 256-byte aligned, free again once the
  // stream passes the call.
  Status forward(const ForwardArgs &args, uint64_t workspace, uint64_t workspace_bytes) {
    const fa4jit_forward_args a = args.c();
    return Status::fromCode(fa4jit_forward_with_workspace(engine_, &a, workspace, workspace_bytes));
  }
  Result<QuantizedTensor> quantize(const Tensor &x, Format format, void *stream = nullptr) {
    const fa4jit_tensor t = x.c();
    fa4jit_quantized *out = nullptr;
    if (const int rc = fa4jit_quantize(engine_, &t, static_cast<int32_t>(format), stream, &out); rc != FA4JIT_OK)
      return Status::fromCode(rc);
    return QuantizedTensor(out);
  }
  Status forward(const QuantizedForwardArgs &args) {
    fa4jit_quantized_forward_args a{};
    a.q = args.q ? args.q->handle() : nullptr;
    a.k = args.k ? args.k->handle() : nullptr;
    a.v = args.v ? args.v->handle() : nullptr;
    a.o = args.o.c(), a.lse = args.lse, a.route = static_cast<int32_t>(args.route);
    a.causal = args.causal ? 1 : 0, a.softmax_scale = args.softmax_scale, a.stream = args.stream;
    return Status::fromCode(fa4jit_forward_quantized(engine_, &a));
  }
  // dQ, dK, dV on args.stream; steady-state calls allocate nothing and never wait for the device.
  Status backward(const BackwardArgs &args) {
    fa4jit_backward_args a{};
    a.q = args.q ? args.q->handle() : nullptr;
    a.k = args.k ? args.k->handle() : nullptr;
    a.v = args.v ? args.v->handle() : nullptr;
    a.q_bf16 = args.q_bf16.c(), a.k_bf16 = args.k_bf16.c(), a.o = args.o.c(), a.d_o = args.d_o.c();
    a.lse = args.lse, a.dq = args.dq.c(), a.dk = args.dk.c(), a.dv = args.dv.c();
    a.causal = args.causal ? 1 : 0, a.softmax_scale = args.softmax_scale;
    a.pv = args.pv_mxfp4 ? FA4JIT_PV_MXFP4 : FA4JIT_PV_E4M3;
    a.qk = args.qk_saved_nvfp4 ? FA4JIT_QK_SAVED_NVFP4 : FA4JIT_QK_BF16;
    a.deterministic = args.deterministic ? 1 : 0, a.stream = args.stream;
    return Status::fromCode(fa4jit_backward(engine_, &a));
  }
  // The states of attention over disjoint key sets (1 to FA4JIT_MAX_MERGE_PARTS of one shape and
  // dtype) merged into the state over their union (o and lse may be one part's): one launch on
  // `stream`.
  Status mergeStates(const AttentionState *parts, int num_parts, const Tensor &o, uint64_t lse = 0,
                     void *stream = nullptr) {
    fa4jit_attention_state states[FA4JIT_MAX_MERGE_PARTS];
    const fa4jit_tensor out = o.c();
    if (num_parts < 1 || num_parts > FA4JIT_MAX_MERGE_PARTS || !parts) // (the C API names what is wrong)
      return Status::fromCode(fa4jit_merge_states(engine_, nullptr, num_parts, &out, lse, stream));
    for (int i = 0; i < num_parts; ++i)
      states[i] = {parts[i].o.c(), parts[i].lse};
    return Status::fromCode(fa4jit_merge_states(engine_, states, num_parts, &out, lse, stream));
  }
  // Device bytes the engine's own workspace holds now.
  Result<uint64_t> workspaceBytes() const {
    uint64_t bytes = 0;
    if (const int rc = fa4jit_engine_workspace_bytes(engine_, &bytes); rc != FA4JIT_OK)
      return Status::fromCode(rc);
    return bytes;
  }
  fa4jit_engine *handle() const { return engine_; }

private:
  explicit Engine(fa4jit_engine *engine) : engine_(engine) {}
  fa4jit_engine *engine_ = nullptr;
};

// fa4jit's log messages (level 0 trace ... 5 critical) to `callback` at or above `min_level`
// instead of stderr; a null callback restores stderr.
inline Status setLogCallback(fa4jit_log_callback callback, int min_level, void *user = nullptr) {
  return Status::fromCode(fa4jit_set_log_callback(callback, min_level, user));
}

inline std::string version() { return fa4jit_version(); }

} // namespace fa4jit::api

#endif // FA4JIT_RUNTIME_FA4JIT_HPP
