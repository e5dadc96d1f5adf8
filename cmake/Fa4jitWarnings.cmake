add_library(fa4jit_options INTERFACE)
target_compile_options(fa4jit_options INTERFACE -Wall -Wextra -Wpedantic -Wshadow -Wno-unused-parameter)
# GCC 12 reports false -Wmaybe-uninitialized inside LLVM 14's formatv templates instantiated in our code.
target_compile_options(fa4jit_options INTERFACE -Wno-maybe-uninitialized)
if(FA4JIT_SANITIZE)
  target_compile_options(fa4jit_options INTERFACE -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined)
  target_link_options(fa4jit_options INTERFACE -fsanitize=address,undefined)
else()
  # libstdc++ and libgcc statically, so the binaries carry no C++ runtime of this machine to the
  # GPU machine (another distribution).
  target_link_options(fa4jit_options INTERFACE -static-libstdc++ -static-libgcc)
endif()
