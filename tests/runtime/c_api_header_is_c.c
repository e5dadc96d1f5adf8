/* Compiled as C (C99) by the build: the public C header must stay valid C. */
#include "fa4jit/runtime/fa4jit_c.h"
int fa4jit_c_header_compiles_as_c(void) {
  fa4jit_forward_args a = {0};
  a.route = FA4JIT_ROUTE_DIRECTP;
  return (int)sizeof(a) + (int)a.route;
}
