/* Compiled as C (C99) by the build: the public C header must stay valid C. */
#include "fa4jit/runtime/fa4jit_c.h"
int fa4jit_c_header_compiles_as_c(void) {
  fa4jit_forward_args a = {0};
  fa4jit_quantized_forward_args qa = {0};
  a.route = FA4JIT_ROUTE_DIRECTP;
  qa.route = FA4JIT_ROUTE_NVFP8;
  return (int)sizeof(a) + (int)a.route + (int)qa.route + (int)FA4JIT_FORMAT_FP8;
}
