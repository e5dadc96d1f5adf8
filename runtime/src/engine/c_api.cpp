// The C API (fa4jit_c.h) over fa4jit::Engine: errors become a return code plus a per-thread
// message, and no C++ exception or llvm::Error crosses the boundary.
#include "fa4jit/runtime/fa4jit_c.h"

#include "fa4jit/runtime/engine.h"
#include "fa4jit/runtime/forward_validate.h"
#include "fa4jit/runtime/logging.h"

#include <algorithm>
#include <array>
#include <iterator>
#include <climits>
#include <cstdint>
#include <cstdio>
#include <string>

struct fa4jit_engine {
  std::unique_ptr<fa4jit::Engine> engine;
  fa4jit::runtime::AccuracyBudget auto_route; // of FA4JIT_ROUTE_AUTO calls
};

struct fa4jit_quantized {
  fa4jit::QuantizedTensor tensor;
};

namespace {
// fa4jit_route's presets by value (FA4JIT_ROUTE_AUTO, the last, has none: the engine chooses).
constexpr fa4jit::RoutePreset kRoutePresets[] = {
    {fa4jit::Route::Bf16, fa4jit::QkFormat::Nvfp4},  {fa4jit::Route::Nvfp8, fa4jit::QkFormat::Nvfp4},
    {fa4jit::Route::DirectP, fa4jit::QkFormat::Nvfp4}, {fa4jit::Route::Nvfp8, fa4jit::QkFormat::E4m3},
    {fa4jit::Route::DirectP, fa4jit::QkFormat::E4m3}};
static_assert(sizeof(kRoutePresets) / sizeof(kRoutePresets[0]) == FA4JIT_ROUTE_AUTO, "a preset per fa4jit_route");
} // namespace

namespace {

thread_local std::string lastError;

int fail(std::string message) {
  lastError = std::move(message);
  return FA4JIT_ERROR;
}

int fromError(llvm::Error err) {
  if (!err) {
    lastError.clear();
    return FA4JIT_OK;
  }
  return fail(llvm::toString(std::move(err)));
}

bool toTensor(const fa4jit_tensor &in, const char *name, fa4jit::TensorDesc &out) {
  if (in.dtype != FA4JIT_DTYPE_BF16 && in.dtype != FA4JIT_DTYPE_F32 && in.dtype != FA4JIT_DTYPE_F16) {
    fail(std::string(name) + ": unknown dtype " + std::to_string(in.dtype));
    return false;
  }
  out.data = in.data;
  out.dtype = in.dtype == FA4JIT_DTYPE_BF16  ? fa4jit::DType::BF16
              : in.dtype == FA4JIT_DTYPE_F16 ? fa4jit::DType::F16
                                             : fa4jit::DType::F32;
  for (int i = 0; i < 4; ++i)
    out.shape[i] = in.shape[i], out.stride[i] = in.stride[i];
  return true;
}

// The fields every forward's arguments share, C to C++ (false: a tensor was refused).
template <class CArgs, class Args> bool copyCommon(const CArgs &in, Args &out) {
  if (!toTensor(in.o, "o", out.o))
    return false;
  out.lse = in.lse;
  // (the E4M3 Q/K presets share their P/V route, toForwardArgs sets their Q/K format; for route
  // auto the engine's choice replaces this placeholder)
  out.route = in.route >= 0 && in.route < FA4JIT_ROUTE_AUTO ? kRoutePresets[in.route].route : fa4jit::Route::DirectP;
  out.causal = in.causal != 0;
  out.softmax_scale = in.softmax_scale;
  out.stream = in.stream;
  return true;
}

} // namespace

extern "C" {

int fa4jit_engine_create(int device, fa4jit_engine **out) {
  if (!out)
    return fail("fa4jit_engine_create: out is NULL");
  *out = nullptr;
  fa4jit::EngineOptions options;
  options.device = device;
  auto engine = fa4jit::Engine::create(options);
  if (!engine)
    return fail(llvm::toString(engine.takeError()));
  *out = new fa4jit_engine{std::move(*engine), {}};
  lastError.clear();
  return FA4JIT_OK;
}

void fa4jit_engine_destroy(fa4jit_engine *engine) { delete engine; }

int fa4jit_set_auto_route_budget(fa4jit_engine *engine, double min_cosine, double logit_std) {
  if (!engine)
    return fail("fa4jit_set_auto_route_budget: engine must not be NULL");
  const fa4jit::runtime::AccuracyBudget budget{min_cosine, logit_std};
  if (llvm::Error e = fa4jit::runtime::checkAccuracyBudget(budget))
    return fail("fa4jit_set_auto_route_budget: " + llvm::toString(std::move(e)));
  engine->auto_route = budget;
  lastError.clear();
  return FA4JIT_OK;
}

int fa4jit_auto_route(fa4jit_engine *engine, int32_t head_dim, int32_t causal, int64_t seqlen_k, int32_t *route,
                      double *predicted_cosine) {
  if (!engine || !route)
    return fail("fa4jit_auto_route: engine and route must not be NULL");
  if (seqlen_k < 1 || seqlen_k > INT32_MAX)
    return fail("fa4jit_auto_route: seqlen_k " + std::to_string(seqlen_k) + " is not in [1, 2^31 - 1]");
  auto choice = engine->engine->autoRoute(head_dim, causal != 0, int(seqlen_k), engine->auto_route);
  if (!choice)
    return fail(llvm::toString(choice.takeError()));
  const auto *found = std::find(std::begin(kRoutePresets), std::end(kRoutePresets), choice->preset);
  *route = static_cast<int32_t>(found - std::begin(kRoutePresets));
  if (predicted_cosine)
    *predicted_cosine = choice->predicted_cosine;
  lastError.clear();
  return FA4JIT_OK;
}

namespace {
// fa4jit_forward_args to ForwardArgs; false (with the message set) when refused.
bool toForwardArgs(const char *function, const fa4jit_engine &engine, const fa4jit_forward_args &args,
                   fa4jit::ForwardArgs &a) {
  if (args.route < FA4JIT_ROUTE_BF16 || args.route > FA4JIT_ROUTE_AUTO) {
    fail(std::string(function) + ": unknown route " + std::to_string(args.route));
    return false;
  }
  if (args.route == FA4JIT_ROUTE_AUTO)
    a.auto_route = engine.auto_route;
  if (args.route < FA4JIT_ROUTE_AUTO)
    a.qk_format = kRoutePresets[args.route].qk_format;
  return toTensor(args.q, "q", a.q) && toTensor(args.k, "k", a.k) && toTensor(args.v, "v", a.v) &&
         copyCommon(args, a);
}
} // namespace

int fa4jit_forward(fa4jit_engine *engine, const fa4jit_forward_args *args) {
  if (!engine || !args)
    return fail("fa4jit_forward: engine and args must not be NULL");
  fa4jit::ForwardArgs a;
  if (!toForwardArgs("fa4jit_forward", *engine, *args, a))
    return FA4JIT_ERROR;
  return fromError(engine->engine->forward(a));
}

int fa4jit_workspace_size(fa4jit_engine *engine, const fa4jit_forward_args *args, uint64_t *out) {
  if (!engine || !args || !out)
    return fail("fa4jit_workspace_size: engine, args and out must not be NULL");
  fa4jit::ForwardArgs a;
  if (!toForwardArgs("fa4jit_workspace_size", *engine, *args, a))
    return FA4JIT_ERROR;
  auto bytes = engine->engine->workspaceSize(a);
  if (!bytes)
    return fail(llvm::toString(bytes.takeError()));
  *out = *bytes;
  lastError.clear();
  return FA4JIT_OK;
}

int fa4jit_forward_with_workspace(fa4jit_engine *engine, const fa4jit_forward_args *args, uint64_t workspace,
                                  uint64_t workspace_bytes) {
  if (!engine || !args)
    return fail("fa4jit_forward_with_workspace: engine and args must not be NULL");
  fa4jit::ForwardArgs a;
  if (!toForwardArgs("fa4jit_forward_with_workspace", *engine, *args, a))
    return FA4JIT_ERROR;
  return fromError(engine->engine->forward(a, workspace, workspace_bytes));
}

// The C format code as the engine's (false: unknown, with the message set).
bool toFormat(int32_t format, const char *fn, fa4jit::QuantFormat &f) {
  switch (format) {
  case FA4JIT_FORMAT_NVFP4: f = fa4jit::QuantFormat::Nvfp4; return true;
  case FA4JIT_FORMAT_MXFP4: f = fa4jit::QuantFormat::Mxfp4; return true;
  case FA4JIT_FORMAT_FP8: f = fa4jit::QuantFormat::Fp8PerHead; return true;
  }
  fail(std::string(fn) + ": unknown format " + std::to_string(format));
  return false;
}

int fa4jit_quantize(fa4jit_engine *engine, const fa4jit_tensor *x, int32_t format, void *stream,
                    fa4jit_quantized **out) {
  if (!engine || !x || !out)
    return fail("fa4jit_quantize: engine, x and out must not be NULL");
  *out = nullptr;
  fa4jit::QuantFormat f;
  if (!toFormat(format, "fa4jit_quantize", f))
    return FA4JIT_ERROR;
  fa4jit::TensorDesc t;
  if (!toTensor(*x, "x", t))
    return FA4JIT_ERROR;
  auto q = engine->engine->quantize(t, f, "x", stream);
  if (!q)
    return fail(llvm::toString(q.takeError()));
  *out = new fa4jit_quantized{std::move(*q)};
  lastError.clear();
  return FA4JIT_OK;
}

void fa4jit_quantized_destroy(fa4jit_quantized *tensor) { delete tensor; }

int fa4jit_forward_quantized(fa4jit_engine *engine, const fa4jit_quantized_forward_args *args) {
  if (!engine || !args)
    return fail("fa4jit_forward_quantized: engine and args must not be NULL");
  if (!args->q || !args->k || !args->v)
    return fail("fa4jit_forward_quantized: q, k and v must all be given");
  if (args->route != FA4JIT_ROUTE_NVFP8 && args->route != FA4JIT_ROUTE_DIRECTP)
    return fail("fa4jit_forward_quantized: route must be FA4JIT_ROUTE_NVFP8 or FA4JIT_ROUTE_DIRECTP, got " +
                std::to_string(args->route));
  fa4jit::QuantizedForwardArgs a;
  a.q = &args->q->tensor, a.k = &args->k->tensor, a.v = &args->v->tensor;
  if (!copyCommon(*args, a))
    return FA4JIT_ERROR;
  return fromError(engine->engine->forward(a));
}

int fa4jit_quantize_into(fa4jit_engine *engine, const fa4jit_tensor *x, int32_t format, void *stream,
                         fa4jit_quantized *into) {
  if (!engine || !x || !into)
    return fail("fa4jit_quantize_into: engine, x and into must not be NULL");
  fa4jit::QuantFormat f;
  if (!toFormat(format, "fa4jit_quantize_into", f))
    return FA4JIT_ERROR;
  fa4jit::TensorDesc t;
  if (!toTensor(*x, "x", t))
    return FA4JIT_ERROR;
  return fromError(engine->engine->quantize(t, f, into->tensor, "x", stream));
}

namespace {
bool toShape(const int64_t shape[4], const char *fn, int (&out)[4]) {
  for (int i = 0; i < 4; ++i) {
    if (shape[i] <= 0 || shape[i] > INT32_MAX) {
      fail(std::string(fn) + ": shape[" + std::to_string(i) + "] = " + std::to_string(shape[i]) +
           " must be positive and fit 32 bits");
      return false;
    }
    out[i] = static_cast<int>(shape[i]);
  }
  return true;
}
} // namespace

int fa4jit_quantized_bytes(const int64_t shape[4], int32_t format, uint64_t *out) {
  if (!shape || !out)
    return fail("fa4jit_quantized_bytes: shape and out must not be NULL");
  fa4jit::QuantFormat f;
  int s[4];
  if (!toFormat(format, "fa4jit_quantized_bytes", f) || !toShape(shape, "fa4jit_quantized_bytes", s))
    return FA4JIT_ERROR;
  *out = fa4jit::Engine::quantizedBytes(f, s[0], s[1], s[2], s[3]);
  lastError.clear();
  return FA4JIT_OK;
}

int fa4jit_quantized_in(fa4jit_engine *engine, const int64_t shape[4], int32_t format, uint64_t address, uint64_t bytes,
                        fa4jit_quantized **out) {
  if (!engine || !shape || !out)
    return fail("fa4jit_quantized_in: engine, shape and out must not be NULL");
  *out = nullptr;
  fa4jit::QuantFormat f;
  int s[4];
  if (!toFormat(format, "fa4jit_quantized_in", f) || !toShape(shape, "fa4jit_quantized_in", s))
    return FA4JIT_ERROR;
  auto t = engine->engine->quantizedIn(f, s[0], s[1], s[2], s[3], address, bytes);
  if (!t)
    return fail("fa4jit_quantized_in: " + llvm::toString(t.takeError()));
  *out = new fa4jit_quantized{std::move(*t)};
  lastError.clear();
  return FA4JIT_OK;
}

int fa4jit_backward(fa4jit_engine *engine, const fa4jit_backward_args *args) {
  if (!engine || !args)
    return fail("fa4jit_backward: engine and args must not be NULL");
  if (!args->q || !args->k || !args->v)
    return fail("fa4jit_backward: q, k and v must all be given");
  if (args->pv != FA4JIT_PV_E4M3 && args->pv != FA4JIT_PV_MXFP4)
    return fail("fa4jit_backward: pv must be FA4JIT_PV_E4M3 or FA4JIT_PV_MXFP4, got " + std::to_string(args->pv));
  if (args->qk != FA4JIT_QK_BF16 && args->qk != FA4JIT_QK_SAVED_NVFP4)
    return fail("fa4jit_backward: qk must be FA4JIT_QK_BF16 or FA4JIT_QK_SAVED_NVFP4, got " + std::to_string(args->qk));
  fa4jit::BackwardArgs a;
  a.q = &args->q->tensor, a.k = &args->k->tensor, a.v = &args->v->tensor;
  a.qk = args->qk == FA4JIT_QK_BF16 ? fa4jit::BackwardQkOperands::Bf16 : fa4jit::BackwardQkOperands::SavedNvfp4;
  if (a.qk == fa4jit::BackwardQkOperands::Bf16 &&
      (!toTensor(args->q_bf16, "q_bf16", a.q_bf16) || !toTensor(args->k_bf16, "k_bf16", a.k_bf16)))
    return FA4JIT_ERROR;
  if (!toTensor(args->o, "o", a.o) || !toTensor(args->d_o, "d_o", a.d_o) || !toTensor(args->dq, "dq", a.dq) ||
      !toTensor(args->dk, "dk", a.dk) || !toTensor(args->dv, "dv", a.dv))
    return FA4JIT_ERROR;
  a.lse = args->lse;
  a.causal = args->causal != 0;
  a.softmax_scale = args->softmax_scale;
  a.pv = args->pv == FA4JIT_PV_E4M3 ? fa4jit::BackwardPvFormat::E4m3 : fa4jit::BackwardPvFormat::Mxfp4;
  a.deterministic = args->deterministic != 0;
  a.stream = args->stream;
  return fromError(engine->engine->backward(a));
}

static_assert(FA4JIT_MAX_MERGE_PARTS == fa4jit::kMaxMergeParts, "fa4jit_c.h and engine.h agree on merge parts");

int fa4jit_merge_states(fa4jit_engine *engine, const fa4jit_attention_state *parts, int32_t num_parts,
                        const fa4jit_tensor *o, uint64_t lse, void *stream) {
  if (!engine || !o)
    return fail("fa4jit_merge_states: engine and o must not be NULL");
  if (num_parts < 1 || num_parts > fa4jit::kMaxMergeParts)
    return fail("fa4jit_merge_states: num_parts is " + std::to_string(num_parts) + "; a merge takes 1 to " +
                std::to_string(fa4jit::kMaxMergeParts));
  if (!parts)
    return fail("fa4jit_merge_states: parts must not be NULL");
  std::array<fa4jit::AttentionState, fa4jit::kMaxMergeParts> states;
  for (int i = 0; i < num_parts; ++i) {
    char name[24]; // (no allocation on a good call)
    std::snprintf(name, sizeof name, "parts[%d].o", i);
    if (!toTensor(parts[i].o, name, states[i].o))
      return FA4JIT_ERROR;
    states[i].lse = parts[i].lse;
  }
  fa4jit::MergeArgs a;
  a.parts = llvm::ArrayRef<fa4jit::AttentionState>(states.data(), static_cast<std::size_t>(num_parts));
  if (!toTensor(*o, "o", a.o))
    return FA4JIT_ERROR;
  a.lse = lse;
  a.stream = stream;
  return fromError(engine->engine->mergeStates(a));
}

namespace {
fa4jit::PagedKvCache toCache(const fa4jit_paged_cache &c) {
  fa4jit::PagedKvCache out;
  out.k_codes = c.k_codes, out.k_block_scales = c.k_block_scales, out.k_row_scales = c.k_row_scales;
  out.v_codes = c.v_codes, out.v_row_scales = c.v_row_scales, out.v_block_scales = c.v_block_scales;
  out.pages = c.pages, out.kv_heads = c.kv_heads, out.page_size = c.page_size, out.head_dim = c.head_dim;
  out.value_format = static_cast<fa4jit::KvValueFormat>(c.value_format);
  return out;
}
bool toDecode(const fa4jit_decode_args &in, fa4jit::DecodeArgs &a) {
  a.cache = toCache(in.cache);
  if (!toTensor(in.q, "q", a.q) || !toTensor(in.o, "o", a.o))
    return false;
  a.lse = in.lse, a.block_table = in.block_table, a.block_table_stride = in.block_table_stride;
  a.seq_lens = in.seq_lens, a.max_seq_len = in.max_seq_len, a.softmax_scale = in.softmax_scale;
  a.splits = in.splits, a.stream = in.stream;
  return true;
}
bool cacheDimsOk(int32_t pages, int32_t kv_heads, int32_t page_size, int32_t head_dim, int32_t value_format,
                 const char *fn) {
  if (value_format != FA4JIT_KV_VALUE_FP8 && value_format != FA4JIT_KV_VALUE_MXFP4) {
    fail(std::string(fn) + ": unknown value_format " + std::to_string(value_format) + " (0 fp8, 1 mxfp4)");
    return false;
  }
  fa4jit::PagedKvCache probe;
  probe.pages = pages, probe.kv_heads = kv_heads, probe.page_size = page_size, probe.head_dim = head_dim;
  probe.value_format = static_cast<fa4jit::KvValueFormat>(value_format);
  probe.k_codes = probe.k_block_scales = probe.k_row_scales = probe.v_codes = probe.v_row_scales = 256;
  probe.v_block_scales = 256;
  if (llvm::Error e = fa4jit::runtime::validatePagedCache(probe)) {
    fail(std::string(fn) + ": " + llvm::toString(std::move(e)));
    return false;
  }
  return true;
}
} // namespace

int fa4jit_paged_cache_bytes(int32_t pages, int32_t kv_heads, int32_t page_size, int32_t head_dim,
                             int32_t value_format, uint64_t *out) {
  if (!out)
    return fail("fa4jit_paged_cache_bytes: out must not be NULL");
  if (!cacheDimsOk(pages, kv_heads, page_size, head_dim, value_format, "fa4jit_paged_cache_bytes"))
    return FA4JIT_ERROR;
  *out = fa4jit::pagedKvCacheBytes(pages, kv_heads, page_size, head_dim,
                                   static_cast<fa4jit::KvValueFormat>(value_format));
  lastError.clear();
  return FA4JIT_OK;
}

int fa4jit_paged_cache_at(uint64_t address, int32_t pages, int32_t kv_heads, int32_t page_size, int32_t head_dim,
                          int32_t value_format, fa4jit_paged_cache *out) {
  if (!out)
    return fail("fa4jit_paged_cache_at: out must not be NULL");
  if (address == 0 || address % 256)
    return fail("fa4jit_paged_cache_at: address must be a 256-byte aligned device address");
  if (!cacheDimsOk(pages, kv_heads, page_size, head_dim, value_format, "fa4jit_paged_cache_at"))
    return FA4JIT_ERROR;
  const fa4jit::PagedKvCache c = fa4jit::pagedKvCacheAt(address, pages, kv_heads, page_size, head_dim,
                                                        static_cast<fa4jit::KvValueFormat>(value_format));
  *out = {c.k_codes,  c.k_block_scales, c.k_row_scales, c.v_codes,  c.v_row_scales,
          c.v_block_scales, pages,      kv_heads,       page_size, head_dim, value_format};
  lastError.clear();
  return FA4JIT_OK;
}

int fa4jit_append_kv(fa4jit_engine *engine, const fa4jit_append_kv_args *args) {
  if (!engine || !args)
    return fail("fa4jit_append_kv: engine and args must not be NULL");
  fa4jit::AppendKvArgs a;
  a.cache = toCache(args->cache);
  if (!toTensor(args->k, "k", a.k) || !toTensor(args->v, "v", a.v))
    return FA4JIT_ERROR;
  a.slot_mapping = args->slot_mapping, a.stream = args->stream;
  return fromError(engine->engine->appendKv(a));
}

int fa4jit_decode(fa4jit_engine *engine, const fa4jit_decode_args *args) {
  if (!engine || !args)
    return fail("fa4jit_decode: engine and args must not be NULL");
  fa4jit::DecodeArgs a;
  if (!toDecode(*args, a))
    return FA4JIT_ERROR;
  return fromError(engine->engine->decode(a));
}

int fa4jit_decode_workspace_size(fa4jit_engine *engine, const fa4jit_decode_args *args, uint64_t *out) {
  if (!engine || !args || !out)
    return fail("fa4jit_decode_workspace_size: engine, args and out must not be NULL");
  fa4jit::DecodeArgs a;
  if (!toDecode(*args, a))
    return FA4JIT_ERROR;
  auto bytes = engine->engine->decodeWorkspaceSize(a);
  if (!bytes)
    return fromError(bytes.takeError());
  *out = *bytes;
  lastError.clear();
  return FA4JIT_OK;
}

int fa4jit_decode_with_workspace(fa4jit_engine *engine, const fa4jit_decode_args *args, uint64_t workspace,
                                 uint64_t workspace_bytes) {
  if (!engine || !args)
    return fail("fa4jit_decode_with_workspace: engine and args must not be NULL");
  fa4jit::DecodeArgs a;
  if (!toDecode(*args, a))
    return FA4JIT_ERROR;
  return fromError(engine->engine->decode(a, workspace, workspace_bytes));
}

int fa4jit_engine_workspace_bytes(const fa4jit_engine *engine, uint64_t *out) {
  if (!engine || !out)
    return fail("fa4jit_engine_workspace_bytes: engine and out must not be NULL");
  *out = engine->engine->workspaceBytes();
  lastError.clear();
  return FA4JIT_OK;
}

int fa4jit_set_log_callback(fa4jit_log_callback callback, int min_level, void *user) {
  if (min_level < 0 || min_level > int(fa4jit::LogLevel::Off))
    return fail("fa4jit_set_log_callback: min_level must be 0 (trace) to 6 (off), got " + std::to_string(min_level));
  if (callback)
    fa4jit::setLogCallback([callback, user](fa4jit::LogLevel level, const std::string &message) {
      callback(int(level), message.c_str(), user);
    });
  else
    fa4jit::setLogCallback({});
  fa4jit::setLogLevel(static_cast<fa4jit::LogLevel>(min_level));
  lastError.clear();
  return FA4JIT_OK;
}

const char *fa4jit_last_error(void) { return lastError.c_str(); }

const char *fa4jit_version(void) { return fa4jit::libraryVersion(); }

} // extern "C"
