/* fa4jit C API: a small C header over fa4jit::Engine, for runtimes written in other languages.
 *
 *   fa4jit_engine *e = NULL;
 *   if (fa4jit_engine_create(0, &e) != 0) { fprintf(stderr, "%s\n", fa4jit_last_error()); ... }
 *   fa4jit_forward_args a = {0};
 *   a.q = (fa4jit_tensor){q_ptr, FA4JIT_DTYPE_BF16, {B, Hq, Sq, D}, {Hq*Sq*D, Sq*D, D, 1}};
 *   ... a.k, a.v ([B, Hkv, Sk, D]), a.o ([B, Hq, Sq, D]), a.lse (float [B, Hq, Sq] or 0)
 *   a.route = FA4JIT_ROUTE_DIRECTP; a.causal = 1;
 *   if (fa4jit_forward(e, &a) != 0) { fprintf(stderr, "%s\n", fa4jit_last_error()); }
 *   fa4jit_engine_destroy(e);
 *
 * Quantize once, attend many times (an FP4 KV cache): fa4jit_quantize K and V once, then
 * fa4jit_forward_quantized with each new Q quantized; fa4jit_quantized_destroy frees them.
 *
 * Every function returns 0 on success and FA4JIT_ERROR otherwise; fa4jit_last_error() then holds
 * the message (per thread, valid until the thread's next fa4jit call), and an out-parameter is
 * left NULL. Pointers are device
 * addresses (CUdeviceptr), strides are in elements, the head dim is contiguous. */
#ifndef FA4JIT_C_H
#define FA4JIT_C_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* What libfa4jit.so exports (every other symbol of the library is local). */
#if defined(__GNUC__)
#define FA4JIT_API __attribute__((visibility("default")))
#else
#define FA4JIT_API
#endif

#define FA4JIT_OK 0
#define FA4JIT_ERROR 1

typedef struct fa4jit_engine fa4jit_engine;

/* The route presets (docs/ARCHITECTURE.md §4): FP8 and FP8_DIRECTP store Q and K as E4M3 instead of
 * NVFP4 (for large logits; sm_90a), with nvfp8's and directp's P and V. AUTO: the engine picks the
 * fastest preset whose predicted accuracy meets the engine's budget
 * (fa4jit_set_auto_route_budget; docs/TUNING.md, "Route auto"). */
typedef enum {
  FA4JIT_ROUTE_BF16 = 0,
  FA4JIT_ROUTE_NVFP8 = 1,
  FA4JIT_ROUTE_DIRECTP = 2,
  FA4JIT_ROUTE_FP8 = 3,
  FA4JIT_ROUTE_FP8_DIRECTP = 4,
  FA4JIT_ROUTE_AUTO = 5
} fa4jit_route;
typedef enum { FA4JIT_DTYPE_BF16 = 0, FA4JIT_DTYPE_F32 = 1, FA4JIT_DTYPE_F16 = 2 } fa4jit_dtype;

typedef struct {
  uint64_t data;     /* device address */
  int32_t dtype;     /* fa4jit_dtype */
  int64_t shape[4];  /* batch, heads, seqlen, head_dim */
  int64_t stride[4]; /* elements; stride[3] must be 1 */
} fa4jit_tensor;

/* Formats of a quantized operand (docs/NUMERICS.md §1): NVFP4 rows for Q and K, MXFP4 V^T
 * (directp) or FP8 V^T with a per-head scale (nvfp8). */
typedef enum { FA4JIT_FORMAT_NVFP4 = 0, FA4JIT_FORMAT_MXFP4 = 1, FA4JIT_FORMAT_FP8 = 2 } fa4jit_format;

/* One quantized operand, owned by the caller (fa4jit_quantized_destroy). */
typedef struct fa4jit_quantized fa4jit_quantized;

typedef struct {
  fa4jit_tensor q, k, v, o;
  uint64_t lse;        /* float [B, Hq, Sq], natural log; 0 = not written */
  int32_t route;       /* fa4jit_route */
  int32_t causal;      /* 0 or 1; bottom-right aligned when Sq != Sk */
  float softmax_scale; /* 0 = 1/sqrt(head_dim) */
  void *stream;        /* CUstream; NULL = the legacy default stream */
} fa4jit_forward_args;

typedef struct {
  const fa4jit_quantized *q, *k, *v; /* NVFP4 q and k; v MXFP4 (directp) or FP8 (nvfp8) */
  fa4jit_tensor o;                   /* BF16 or F16 [B, Hq, Sq, D] */
  uint64_t lse;
  int32_t route; /* FA4JIT_ROUTE_NVFP8 or FA4JIT_ROUTE_DIRECTP */
  int32_t causal;
  float softmax_scale;
  void *stream;
} fa4jit_quantized_forward_args;

/* The training route's backward (docs/NUMERICS.md §3): the forward ran fa4jit_forward_quantized with
 * route nvfp8 on q, k (NVFP4) and v (FP8); its o and lse, and d_o, are BF16 / float. */
typedef enum { FA4JIT_PV_E4M3 = 0, FA4JIT_PV_MXFP4 = 1 } fa4jit_backward_pv;
typedef enum { FA4JIT_QK_BF16 = 0, FA4JIT_QK_SAVED_NVFP4 = 1 } fa4jit_backward_qk;
typedef struct {
  const fa4jit_quantized *q, *k, *v; /* as the forward saved them; v MXFP4 for FA4JIT_PV_MXFP4 */
  fa4jit_tensor q_bf16, k_bf16;      /* BF16 inputs (read with FA4JIT_QK_BF16) */
  fa4jit_tensor o, d_o;              /* BF16 [B, Hq, Sq, D] */
  uint64_t lse;                      /* float [B, Hq, Sq], the forward's */
  fa4jit_tensor dq, dk, dv;          /* BF16 outputs */
  int32_t causal;
  float softmax_scale;
  int32_t pv;            /* fa4jit_backward_pv */
  int32_t qk;            /* fa4jit_backward_qk */
  int32_t deterministic; /* 1: dQ summed in key-block order, the same bits every run */
  void *stream;
} fa4jit_backward_args;

/* Parts one fa4jit_merge_states call takes. */
#define FA4JIT_MAX_MERGE_PARTS 16
/* One attention state: O [B, H, S, D] (BF16, F16 or F32) and its LSE (float [B, H, S], dense,
 * natural log), as fa4jit_forward writes them. */
typedef struct {
  fa4jit_tensor o;
  uint64_t lse;
} fa4jit_attention_state;
/* One layer of the paged, quantized KV cache (docs/NUMERICS.md §5) in device memory the caller owns:
 * NVFP4 K with a scale per token row, and FP8 V with a scale per row or MXFP4 V.
 * fa4jit_paged_cache_bytes sizes one allocation and fa4jit_paged_cache_at lays the arrays out in it;
 * every array is 16-byte aligned. */
typedef enum { FA4JIT_KV_VALUE_FP8 = 0, FA4JIT_KV_VALUE_MXFP4 = 1 } fa4jit_kv_value_format;
typedef struct {
  uint64_t k_codes, k_block_scales, k_row_scales, v_codes;
  uint64_t v_row_scales;   /* FP8 V only (0 for MXFP4) */
  uint64_t v_block_scales; /* MXFP4 V only (0 for FP8) */
  int32_t pages, kv_heads, page_size, head_dim; /* page_size a power of two in [16, 256]; head_dim 64 or 128 */
  int32_t value_format;                         /* fa4jit_kv_value_format */
} fa4jit_paged_cache;
typedef struct {
  fa4jit_paged_cache cache;
  fa4jit_tensor k, v;     /* BF16 [tokens, kv_heads, 1, head_dim] */
  uint64_t slot_mapping;  /* int64 [tokens]: page * page_size + row; negative: skipped */
  void *stream;
} fa4jit_append_kv_args;
typedef struct {
  fa4jit_paged_cache cache;
  fa4jit_tensor q, o;          /* BF16 [batch, q_heads, queries, head_dim] */
  uint64_t lse;                /* float [batch, q_heads, queries]; 0 = not written */
  uint64_t block_table;        /* int32 [batch, block_table_stride] */
  int32_t block_table_stride;
  uint64_t seq_lens;           /* int32 [batch] */
  int32_t max_seq_len;         /* a bound of seq_lens for the split choice; 0 = the block table's capacity */
  float softmax_scale;         /* 0 = 1/sqrt(head_dim) */
  int32_t splits;              /* 1 .. 16; 0 = the heuristic's */
  void *stream;
} fa4jit_decode_args;

/* Opens the CUDA driver and NVRTC, reads FA4JIT_* once, and selects device `device`. */
FA4JIT_API int fa4jit_engine_create(int device, fa4jit_engine **out);
FA4JIT_API void fa4jit_engine_destroy(fa4jit_engine *engine);
/* The accuracy budget of this engine's FA4JIT_ROUTE_AUTO calls: the cosine of O against FP64 the
 * chosen preset must reach (as its CPU model predicts it) for logits q.k.softmax_scale of standard
 * deviation logit_std. Default 0.98 at 1. Like a forward, not concurrently with another call on
 * the same engine. */
FA4JIT_API int fa4jit_set_auto_route_budget(fa4jit_engine *engine, double min_cosine, double logit_std);
/* The preset (fa4jit_route, never AUTO) FA4JIT_ROUTE_AUTO runs for a shape, and its predicted cosine. */
FA4JIT_API int fa4jit_auto_route(fa4jit_engine *engine, int32_t head_dim, int32_t causal, int64_t seqlen_k,
                                 int32_t *route, double *predicted_cosine);
/* Attention forward from BF16 or F16 inputs (quantized inside as the route needs; route bf16 takes
 * BF16 only) into a BF16 or F16 o, all on args->stream:
 * once a shape has run it allocates nothing and never waits for the device, so it can be captured
 * in a CUDA graph. A NaN or Inf input makes the output rows it reaches NaN; with
 * FA4JIT_CHECK_FINITE=1 it is an error instead (and the call waits for the stream). */
FA4JIT_API int fa4jit_forward(fa4jit_engine *engine, const fa4jit_forward_args *args);
/* Bytes of workspace fa4jit_forward_with_workspace needs for these arguments. */
FA4JIT_API int fa4jit_workspace_size(fa4jit_engine *engine, const fa4jit_forward_args *args, uint64_t *out);
/* fa4jit_forward on a workspace the caller owns: device memory of at least fa4jit_workspace_size
 * bytes, 256-byte aligned, uninitialized, free again once the stream passes the call. */
FA4JIT_API int fa4jit_forward_with_workspace(fa4jit_engine *engine, const fa4jit_forward_args *args, uint64_t workspace,
                                  uint64_t workspace_bytes);
/* Quantizes x ([B, H, S, D], BF16, F16 or F32) into `format` on `stream`. A NaN or Inf in x is encoded
 * as 0 and recorded, so that a forward makes the rows it reaches NaN; with FA4JIT_CHECK_FINITE=1
 * it is an error naming the tensor, batch, head and row (this waits for the stream). */
FA4JIT_API int fa4jit_quantize(fa4jit_engine *engine, const fa4jit_tensor *x, int32_t format, void *stream,
                    fa4jit_quantized **out);
FA4JIT_API void fa4jit_quantized_destroy(fa4jit_quantized *tensor);
/* The same into an operand quantize made before, reusing its device memory where it holds enough
 * (a KV cache, or a training step's saved operands, quantized again step after step: no
 * allocation once the buffers have their size). The stream must be past every use of `into`. */
FA4JIT_API int fa4jit_quantize_into(fa4jit_engine *engine, const fa4jit_tensor *x, int32_t format, void *stream,
                                    fa4jit_quantized *into);
/* Device bytes of one quantized operand of `format` and shape [B, H, S, D] held in one block of
 * caller memory (fa4jit_quantized_in); host arithmetic only. */
FA4JIT_API int fa4jit_quantized_bytes(const int64_t shape[4], int32_t format, uint64_t *out);
/* An operand of `format` and shape [B, H, S, D] whose parts live in `bytes` of device memory the
 * caller owns at `address` (256-byte aligned, at least fa4jit_quantized_bytes): fa4jit_quantize_into
 * writes it in place, the forward and backward read it, and fa4jit_quantized_destroy frees the
 * handle only. A framework's tensor can so carry an operand saved for the backward. No device call. */
FA4JIT_API int fa4jit_quantized_in(fa4jit_engine *engine, const int64_t shape[4], int32_t format, uint64_t address,
                                   uint64_t bytes, fa4jit_quantized **out);
/* Attention forward on quantized operands: no quantization, no synchronization. */
FA4JIT_API int fa4jit_forward_quantized(fa4jit_engine *engine, const fa4jit_quantized_forward_args *args);
/* dQ, dK, dV of the training route on args->stream; steady-state calls allocate nothing and never
 * wait for the device. */
FA4JIT_API int fa4jit_backward(fa4jit_engine *engine, const fa4jit_backward_args *args);
/* Merges the states of attention over disjoint key sets (1 to FA4JIT_MAX_MERGE_PARTS parts of one
 * shape and dtype) into o and lse (0: not written), the state over their union, in FP32
 * (docs/NUMERICS.md §4): one launch on `stream`, no allocation, no waiting. o and lse may be one part's (in place). A
 * row whose parts all saw no key (LSE -inf) gets O = 0 and LSE = -inf. */
FA4JIT_API int fa4jit_merge_states(fa4jit_engine *engine, const fa4jit_attention_state *parts, int32_t num_parts,
                                   const fa4jit_tensor *o, uint64_t lse, void *stream);
/* Bytes of one allocation holding a paged cache (host arithmetic only), and the cache laid out in
 * it at `address` (256-byte aligned). */
FA4JIT_API int fa4jit_paged_cache_bytes(int32_t pages, int32_t kv_heads, int32_t page_size, int32_t head_dim,
                                        int32_t value_format, uint64_t *out);
FA4JIT_API int fa4jit_paged_cache_at(uint64_t address, int32_t pages, int32_t kv_heads, int32_t page_size,
                                     int32_t head_dim, int32_t value_format, fa4jit_paged_cache *out);
/* Quantizes new tokens' K and V rows into their slots of the cache: one launch on args->stream, no
 * allocation, no waiting. A slot past the cache writes nothing. */
FA4JIT_API int fa4jit_append_kv(fa4jit_engine *engine, const fa4jit_append_kv_args *args);
/* Decode over the paged cache (queries new tokens per sequence, causal among themselves; GQA
 * groups packed; split-KV merged on the GPU): on args->stream, no waiting; the engine's workspace
 * holds the splits' states (fa4jit_decode_with_workspace takes the caller's). A sequence whose
 * length or pages are out of range gets NaN rows; a row that sees no token O = 0, LSE = -inf. */
FA4JIT_API int fa4jit_decode(fa4jit_engine *engine, const fa4jit_decode_args *args);
FA4JIT_API int fa4jit_decode_workspace_size(fa4jit_engine *engine, const fa4jit_decode_args *args, uint64_t *out);
FA4JIT_API int fa4jit_decode_with_workspace(fa4jit_engine *engine, const fa4jit_decode_args *args, uint64_t workspace,
                                            uint64_t workspace_bytes);
/* Device bytes the engine's workspace holds now (it grows when a larger shape arrives). */
FA4JIT_API int fa4jit_engine_workspace_bytes(const fa4jit_engine *engine, uint64_t *out);
/* Sends fa4jit's log messages (level 0 trace ... 5 critical) to `callback` instead of stderr, at
 * or above `min_level` (6: none); a NULL callback restores stderr. `user` is passed through. */
typedef void (*fa4jit_log_callback)(int level, const char *message, void *user);
FA4JIT_API int fa4jit_set_log_callback(fa4jit_log_callback callback, int min_level, void *user);
/* The message of the calling thread's last failed call ("" if none). */
FA4JIT_API const char *fa4jit_last_error(void);
/* "0.5.0" (the project version) */
FA4JIT_API const char *fa4jit_version(void);

#ifdef __cplusplus
}
#endif

#endif /* FA4JIT_C_H */
