#pragma once
// tcgen05 instruction wrappers (sm_100a only), named by arch, shape and types. Syntax from the PTX
// ISA (tcgen05 chapter, PTX 8.7+); every form here is assembled into the CI's sm_100a cubins.
// Issue rules the callers follow:
//   - alloc / dealloc / relinquish, ld, st, wait::ld, wait::st are warp-collective (.sync.aligned);
//   - mma, cp and commit are issued by ONE thread; the tensor core executes that thread's mma and cp
//     in issue order, and commit makes an mbarrier track completion of all of them issued before;
//   - a warp reaches only its own 32-lane subpartition: warp w % 4 owns lanes 32 (w % 4) .. +31;
//   - across threads, tcgen05 work is ordered by fence::before_thread_sync -> barrier ->
//     fence::after_thread_sync.
#include "fa4jit/common.cuh"

namespace fa4jit::device::sm100 {

// ---- allocation (one warp) ---------------------------------------------------------------------
// Writes the TMEM base address of `columns` columns (a power of two in [32, 512]) to shared memory.
FA4JIT_DEVICE void sm100_tcgen05_alloc_cta1(uint32_t smem_result_address, uint32_t columns) {
  asm volatile("tcgen05.alloc.cta_group::1.sync.aligned.shared::cta.b32 [%0], %1;" ::"r"(smem_result_address),
               "r"(columns)
               : "memory");
}
// Lets other CTAs on the SM allocate once this one has (CUTLASS tmem_allocator_sm100.hpp).
FA4JIT_DEVICE void sm100_tcgen05_relinquish_alloc_permit_cta1() {
  asm volatile("tcgen05.relinquish_alloc_permit.cta_group::1.sync.aligned;" ::: "memory");
}
FA4JIT_DEVICE void sm100_tcgen05_dealloc_cta1(uint32_t tmem_address, uint32_t columns) {
  asm volatile("tcgen05.dealloc.cta_group::1.sync.aligned.b32 %0, %1;" ::"r"(tmem_address), "r"(columns) : "memory");
}

// ---- ordering ----------------------------------------------------------------------------------
FA4JIT_DEVICE void sm100_tcgen05_fence_before_thread_sync() {
  asm volatile("tcgen05.fence::before_thread_sync;" ::: "memory");
}
FA4JIT_DEVICE void sm100_tcgen05_fence_after_thread_sync() {
  asm volatile("tcgen05.fence::after_thread_sync;" ::: "memory");
}
FA4JIT_DEVICE void sm100_tcgen05_wait_ld() { asm volatile("tcgen05.wait::ld.sync.aligned;" ::: "memory"); }
FA4JIT_DEVICE void sm100_tcgen05_wait_st() { asm volatile("tcgen05.wait::st.sync.aligned;" ::: "memory"); }

// Arrive on an mbarrier when every tcgen05.mma / tcgen05.cp this thread issued before has completed.
FA4JIT_DEVICE void sm100_tcgen05_commit_cta1(uint32_t smem_mbarrier_address) {
  asm volatile("tcgen05.commit.cta_group::1.mbarrier::arrive::one.shared::cluster.b64 [%0];" ::"r"(
                   smem_mbarrier_address)
               : "memory");
}

// ---- TMEM <-> registers (warp) -----------------------------------------------------------------
// 32x32b.x32: lane i of the warp reads 32 consecutive 32-bit columns of TMEM lane (base lane + i).
// (thread i, value j) -> (TMEM lane base + i, column c0 + j)
FA4JIT_DEVICE void sm100_tcgen05_ld_32x32b_x32(uint32_t (&r)[32], uint32_t tmem_address) {
  asm volatile("tcgen05.ld.sync.aligned.32x32b.x32.b32 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, "
               "%13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, [%32];"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]), "=r"(r[4]), "=r"(r[5]), "=r"(r[6]), "=r"(r[7]),
                 "=r"(r[8]), "=r"(r[9]), "=r"(r[10]), "=r"(r[11]), "=r"(r[12]), "=r"(r[13]), "=r"(r[14]),
                 "=r"(r[15]), "=r"(r[16]), "=r"(r[17]), "=r"(r[18]), "=r"(r[19]), "=r"(r[20]), "=r"(r[21]),
                 "=r"(r[22]), "=r"(r[23]), "=r"(r[24]), "=r"(r[25]), "=r"(r[26]), "=r"(r[27]), "=r"(r[28]),
                 "=r"(r[29]), "=r"(r[30]), "=r"(r[31])
               : "r"(tmem_address));
}

// 32x32b.x16 / .x8 stores: lane i writes 16 (8) consecutive columns of TMEM lane (base lane + i).
FA4JIT_DEVICE void sm100_tcgen05_st_32x32b_x16(uint32_t tmem_address, const uint32_t (&r)[16]) {
  asm volatile("tcgen05.st.sync.aligned.32x32b.x16.b32 [%0], {%1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, "
               "%13, %14, %15, %16};" ::"r"(tmem_address),
               "r"(r[0]), "r"(r[1]), "r"(r[2]), "r"(r[3]), "r"(r[4]), "r"(r[5]), "r"(r[6]), "r"(r[7]), "r"(r[8]),
               "r"(r[9]), "r"(r[10]), "r"(r[11]), "r"(r[12]), "r"(r[13]), "r"(r[14]), "r"(r[15])
               : "memory");
}
FA4JIT_DEVICE void sm100_tcgen05_st_32x32b_x32(uint32_t tmem_address, const uint32_t (&r)[32]) {
  asm volatile("tcgen05.st.sync.aligned.32x32b.x32.b32 [%0], {%1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, "
               "%13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "
               "%32};" ::"r"(tmem_address),
               "r"(r[0]), "r"(r[1]), "r"(r[2]), "r"(r[3]), "r"(r[4]), "r"(r[5]), "r"(r[6]), "r"(r[7]), "r"(r[8]),
               "r"(r[9]), "r"(r[10]), "r"(r[11]), "r"(r[12]), "r"(r[13]), "r"(r[14]), "r"(r[15]), "r"(r[16]),
               "r"(r[17]), "r"(r[18]), "r"(r[19]), "r"(r[20]), "r"(r[21]), "r"(r[22]), "r"(r[23]), "r"(r[24]),
               "r"(r[25]), "r"(r[26]), "r"(r[27]), "r"(r[28]), "r"(r[29]), "r"(r[30]), "r"(r[31])
               : "memory");
}

// ---- shared memory -> TMEM (one thread) --------------------------------------------------------
// One 512-byte scale-factor atom (32 lines x 128 bit) into 4 columns of 32 lanes, replicated into
// all four subpartitions (.warpx4): the layout block-scaled MMAs read their scale factors in.
FA4JIT_DEVICE void sm100_tcgen05_cp_32x128b_warpx4(uint32_t tmem_address, uint64_t smem_descriptor) {
  asm volatile("tcgen05.cp.cta_group::1.32x128b.warpx4 [%0], %1;" ::"r"(tmem_address), "l"(smem_descriptor)
               : "memory");
}

// ---- MMAs (one thread). D in TMEM (FP32), M = 128 rows = 128 lanes, N columns. -----------------
// QK^T: NVFP4 x NVFP4 (E2M1 payloads, UE4M3 scale per 16 along K), A and B from shared memory,
// K = 64 per instruction.
FA4JIT_DEVICE void sm100_tcgen05_mma_ss_m128k64_mxf4nvf4_ue4m3(uint32_t d_tmem, uint64_t a_desc, uint64_t b_desc,
                                                                uint32_t idesc, uint32_t sfa_tmem, uint32_t sfb_tmem,
                                                                bool accumulate) {
  asm volatile("{\n .reg .pred p;\n setp.ne.b32 p, %6, 0;\n"
               " tcgen05.mma.cta_group::1.kind::mxf4nvf4.block_scale.scale_vec::4X [%0], %1, %2, %3, [%4], [%5], p;\n}"
               ::"r"(d_tmem), "l"(a_desc), "l"(b_desc), "r"(idesc), "r"(sfa_tmem), "r"(sfb_tmem),
               "r"(static_cast<uint32_t>(accumulate))
               : "memory");
}

// PV, directp: MXFP4 x MXFP4 (E2M1, UE8M0 per 32 along K), A = P from TMEM, B = V^T from shared
// memory, K = 64 per instruction. kind::mxf4 is the MX type whose only scale is UE8M0 per 32, which
// is exactly what Direct-P's block exponents and the MXFP4 V quantizer produce (kind::mxf4nvf4
// .scale_vec::2X encodes the same product; mxf4 states the format in the opcode).
FA4JIT_DEVICE void sm100_tcgen05_mma_ts_m128k64_mxf4_ue8m0(uint32_t d_tmem, uint32_t a_tmem, uint64_t b_desc,
                                                            uint32_t idesc, uint32_t sfa_tmem, uint32_t sfb_tmem,
                                                            bool accumulate) {
  asm volatile("{\n .reg .pred p;\n setp.ne.b32 p, %6, 0;\n"
               " tcgen05.mma.cta_group::1.kind::mxf4.block_scale.scale_vec::2X [%0], [%1], %2, %3, [%4], [%5], p;\n}"
               ::"r"(d_tmem), "r"(a_tmem), "l"(b_desc), "r"(idesc), "r"(sfa_tmem), "r"(sfb_tmem),
               "r"(static_cast<uint32_t>(accumulate))
               : "memory");
}

// PV, nvfp8: E4M3 x E4M3 without block scales (P is already scaled by 2^off, V by its per-head s_v
// applied in the epilogue), A = P from TMEM, B = V^T from shared memory, K = 32 per instruction.
// kind::f8f6f4 rather than kind::mxf8f6f4: the latter requires UE8M0 scale factors for both
// operands, which here would all be 1 and would cost TMEM columns and tcgen05.cp traffic for nothing.
FA4JIT_DEVICE void sm100_tcgen05_mma_ts_m128k32_f8f6f4_e4m3(uint32_t d_tmem, uint32_t a_tmem, uint64_t b_desc,
                                                             uint32_t idesc, bool accumulate) {
  asm volatile("{\n .reg .pred p;\n setp.ne.b32 p, %4, 0;\n"
               " tcgen05.mma.cta_group::1.kind::f8f6f4 [%0], [%1], %2, %3, p;\n}"
               ::"r"(d_tmem), "r"(a_tmem), "l"(b_desc), "r"(idesc), "r"(static_cast<uint32_t>(accumulate))
               : "memory");
}

} // namespace fa4jit::device::sm100
