#pragma once
// The passes of a quantizer, as the generated instantiation file calls them:
//   extern "C" __global__ void <name>_amax(QuantizeParams p)    { amaxPass<Config>(p); }
//   extern "C" __global__ void <name>_encode(QuantizeParams p)  { encodePass<Config>(p); }
// and, on sm_90 and later for NVFP4 rows, E4M3 rows and FP8 V^T, the one-pass alternative:
//   extern "C" __global__ void <name>_cluster(QuantizeParams p) { clusterPass<Config>(p); }
// and, for NVFP4 and E4M3 rows where a row group holds whole mask words, the pipelined one pass:
//   extern "C" __global__ void <name>_pipelined(QuantizeParams p) { pipelinedPass<Config>(p); }
// params.cuh describes the launches and the output layouts, cluster_pass.cuh and pipelined_pass.cuh
// the one-pass kernels'.
#include "fa4jit/quantize/amax.cuh"
#include "fa4jit/quantize/cluster_pass.cuh"
#include "fa4jit/quantize/e4m3_rows.cuh"
#include "fa4jit/quantize/nvfp4.cuh"
#include "fa4jit/quantize/pipelined_pass.cuh"
#include "fa4jit/quantize/vt_fp8.cuh"
#include "fa4jit/quantize/vt_mxfp4.cuh"

namespace fa4jit::device::quantize {

template <class C> FA4JIT_DEVICE void encodePass(const QuantizeParams &p) {
  if constexpr (QuantizeTraits<C>::kFormat == Format::Nvfp4)
    nvfp4EncodePass<C>(p);
  else if constexpr (QuantizeTraits<C>::kFormat == Format::E4m3Rows)
    e4m3RowsEncodePass<C>(p);
  else if constexpr (QuantizeTraits<C>::kFormat == Format::Mxfp4)
    vtMxfp4EncodePass<C>(p);
  else
    vtFp8EncodePass<C>(p);
}

} // namespace fa4jit::device::quantize
