/* Prints the C layout of the C API's structs as JSON, for the Python bindings' check
 * (test_package.py): sizes and each field's offset. */
#include "fa4jit/runtime/fa4jit_c.h"

#include <stddef.h>
#include <stdio.h>

#define FIELD(type, field) printf("\"%s.%s\": %zu, ", #type, #field, offsetof(type, field))

int main(void) {
  printf("{");
  printf("\"fa4jit_tensor\": %zu, ", sizeof(fa4jit_tensor));
  FIELD(fa4jit_tensor, data), FIELD(fa4jit_tensor, dtype), FIELD(fa4jit_tensor, shape), FIELD(fa4jit_tensor, stride);
  printf("\"fa4jit_forward_args\": %zu, ", sizeof(fa4jit_forward_args));
  FIELD(fa4jit_forward_args, q), FIELD(fa4jit_forward_args, k), FIELD(fa4jit_forward_args, v);
  FIELD(fa4jit_forward_args, o), FIELD(fa4jit_forward_args, lse), FIELD(fa4jit_forward_args, route);
  FIELD(fa4jit_forward_args, causal), FIELD(fa4jit_forward_args, softmax_scale), FIELD(fa4jit_forward_args, stream);
  printf("\"fa4jit_quantized_forward_args\": %zu, ", sizeof(fa4jit_quantized_forward_args));
  FIELD(fa4jit_quantized_forward_args, q), FIELD(fa4jit_quantized_forward_args, k);
  FIELD(fa4jit_quantized_forward_args, v), FIELD(fa4jit_quantized_forward_args, o);
  FIELD(fa4jit_quantized_forward_args, lse), FIELD(fa4jit_quantized_forward_args, route);
  FIELD(fa4jit_quantized_forward_args, causal), FIELD(fa4jit_quantized_forward_args, softmax_scale);
  FIELD(fa4jit_quantized_forward_args, stream);
  printf("\"fa4jit_backward_args\": %zu, ", sizeof(fa4jit_backward_args));
  FIELD(fa4jit_backward_args, q), FIELD(fa4jit_backward_args, k), FIELD(fa4jit_backward_args, v);
  FIELD(fa4jit_backward_args, q_bf16), FIELD(fa4jit_backward_args, k_bf16), FIELD(fa4jit_backward_args, o);
  FIELD(fa4jit_backward_args, d_o), FIELD(fa4jit_backward_args, lse), FIELD(fa4jit_backward_args, dq);
  FIELD(fa4jit_backward_args, dk), FIELD(fa4jit_backward_args, dv), FIELD(fa4jit_backward_args, causal);
  FIELD(fa4jit_backward_args, softmax_scale), FIELD(fa4jit_backward_args, pv), FIELD(fa4jit_backward_args, qk);
  FIELD(fa4jit_backward_args, deterministic), FIELD(fa4jit_backward_args, stream);
  printf("\"fa4jit_attention_state\": %zu, ", sizeof(fa4jit_attention_state));
  FIELD(fa4jit_attention_state, o), FIELD(fa4jit_attention_state, lse);
  printf("\"fa4jit_paged_cache\": %zu, ", sizeof(fa4jit_paged_cache));
  FIELD(fa4jit_paged_cache, k_codes), FIELD(fa4jit_paged_cache, k_block_scales), FIELD(fa4jit_paged_cache, k_row_scales);
  FIELD(fa4jit_paged_cache, v_codes), FIELD(fa4jit_paged_cache, v_row_scales), FIELD(fa4jit_paged_cache, pages);
  FIELD(fa4jit_paged_cache, v_block_scales), FIELD(fa4jit_paged_cache, value_format);
  FIELD(fa4jit_paged_cache, kv_heads), FIELD(fa4jit_paged_cache, page_size), FIELD(fa4jit_paged_cache, head_dim);
  printf("\"fa4jit_append_kv_args\": %zu, ", sizeof(fa4jit_append_kv_args));
  FIELD(fa4jit_append_kv_args, cache), FIELD(fa4jit_append_kv_args, k), FIELD(fa4jit_append_kv_args, v);
  FIELD(fa4jit_append_kv_args, slot_mapping), FIELD(fa4jit_append_kv_args, stream);
  printf("\"fa4jit_decode_args\": %zu, ", sizeof(fa4jit_decode_args));
  FIELD(fa4jit_decode_args, cache), FIELD(fa4jit_decode_args, q), FIELD(fa4jit_decode_args, o);
  FIELD(fa4jit_decode_args, lse), FIELD(fa4jit_decode_args, block_table), FIELD(fa4jit_decode_args, block_table_stride);
  FIELD(fa4jit_decode_args, seq_lens), FIELD(fa4jit_decode_args, max_seq_len), FIELD(fa4jit_decode_args, softmax_scale);
  FIELD(fa4jit_decode_args, splits), FIELD(fa4jit_decode_args, stream);
  /* the route presets' values, as ROUTES in the Python bindings */
  printf("\"route.bf16\": %d, \"route.nvfp8\": %d, \"route.directp\": %d, ", FA4JIT_ROUTE_BF16, FA4JIT_ROUTE_NVFP8,
         FA4JIT_ROUTE_DIRECTP);
  printf("\"route.fp8\": %d, \"route.fp8-directp\": %d, \"route.auto\": %d, ", FA4JIT_ROUTE_FP8,
         FA4JIT_ROUTE_FP8_DIRECTP, FA4JIT_ROUTE_AUTO);
  printf("\"end\": 0}\n");
  return 0;
}
