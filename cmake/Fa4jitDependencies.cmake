# Third-party dependencies. Binaries must run unchanged on a machine that has only glibc,
# libstdc++ and CUDA's own libraries: fmt and spdlog are used header-only, LLVM through its static
# component libraries, zlib/terminfo statically, and libcuda/NVRTC are dlopen'ed at run time.
find_package(Threads REQUIRED)
find_package(fmt REQUIRED)
find_package(Catch2 2 REQUIRED)

find_path(SPDLOG_INCLUDE_DIR spdlog/spdlog.h REQUIRED)
add_library(fa4jit_logging INTERFACE)
target_include_directories(fa4jit_logging SYSTEM INTERFACE ${SPDLOG_INCLUDE_DIR})
# fa4jit's own logger (logging/include/fa4jit/logging/log.h), shared by every layer that logs.
target_include_directories(fa4jit_logging INTERFACE ${PROJECT_SOURCE_DIR}/logging/include)
target_compile_definitions(fa4jit_logging INTERFACE SPDLOG_HEADER_ONLY SPDLOG_FMT_EXTERNAL FMT_HEADER_ONLY)
target_link_libraries(fa4jit_logging INTERFACE fmt::fmt-header-only Threads::Threads)

set(FA4JIT_LLVM_ROOT "/usr/lib/llvm-14" CACHE PATH "LLVM installation (static Support library and FileCheck)")
find_library(LLVM_SUPPORT_A NAMES libLLVMSupport.a PATHS ${FA4JIT_LLVM_ROOT}/lib NO_DEFAULT_PATH REQUIRED)
find_library(LLVM_DEMANGLE_A NAMES libLLVMDemangle.a PATHS ${FA4JIT_LLVM_ROOT}/lib NO_DEFAULT_PATH REQUIRED)
find_library(STATIC_Z NAMES libz.a REQUIRED)
find_library(STATIC_TINFO NAMES libtinfo.a REQUIRED)
find_program(FILECHECK_EXE FileCheck PATHS ${FA4JIT_LLVM_ROOT}/bin NO_DEFAULT_PATH)
add_library(fa4jit_llvm INTERFACE)
target_include_directories(fa4jit_llvm SYSTEM INTERFACE ${FA4JIT_LLVM_ROOT}/include)
# LLVM's exported LLVMSupport target drags in libz3.so (absent on the GPU machine); the archive
# itself only needs what is listed here.
target_link_libraries(fa4jit_llvm INTERFACE ${LLVM_SUPPORT_A} ${LLVM_DEMANGLE_A} ${STATIC_Z} ${STATIC_TINFO}
                      Threads::Threads ${CMAKE_DL_LIBS} rt m)
target_compile_definitions(fa4jit_llvm INTERFACE _GNU_SOURCE __STDC_CONSTANT_MACROS __STDC_FORMAT_MACROS __STDC_LIMIT_MACROS)

# CUDA headers only (types and enums for the dlopen'ed API); nothing from CUDA is linked.
set(FA4JIT_CUDA_ROOT "/usr/local/cuda" CACHE PATH "CUDA toolkit, used for headers only")
add_library(fa4jit_cuda_headers INTERFACE)
target_include_directories(fa4jit_cuda_headers SYSTEM INTERFACE ${FA4JIT_CUDA_ROOT}/include)
