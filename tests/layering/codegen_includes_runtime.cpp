// Must not compile: codegen sits below runtime.
#include "fa4jit/runtime/engine.h"
