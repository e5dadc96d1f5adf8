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
  printf("\"end\": 0}\n");
  return 0;
}
