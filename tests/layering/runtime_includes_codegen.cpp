// Positive control: runtime may include codegen.
#include "fa4jit/codegen/formats.h"
int layeringPositiveControl() { return 0; }
