/* Opens an fa4jit engine through the installed C API and reports what it found: the library's
 * version, then the engine's workspace on the GPU, or why there is no engine (no GPU, no driver).
 * Exit status 0 either way; 1 only if the library misbehaves (an error without a message). */
#include <fa4jit/runtime/fa4jit_c.h>

#include <stdio.h>
#include <string.h>

int main(void) {
  printf("fa4jit %s\n", fa4jit_version());
  fa4jit_engine *engine = NULL;
  if (fa4jit_engine_create(0, &engine) != FA4JIT_OK) {
    const char *why = fa4jit_last_error();
    printf("no engine: %s\n", why);
    return (engine == NULL && why != NULL && strlen(why) > 0) ? 0 : 1;
  }
  uint64_t bytes = 0;
  if (fa4jit_engine_workspace_bytes(engine, &bytes) != FA4JIT_OK) {
    fa4jit_engine_destroy(engine);
    return 1;
  }
  printf("engine on device 0, workspace %llu bytes\n", (unsigned long long)bytes);
  fa4jit_engine_destroy(engine);
  return 0;
}
