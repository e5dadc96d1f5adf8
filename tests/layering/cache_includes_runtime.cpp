// Must not compile: cache sits below runtime.
#include "fa4jit/runtime/engine.h"
