#!/usr/bin/env python3
"""Compile every attention-forward variant of the mma.sync path with nvcc and report registers and
spills (not part of CI; run where nvcc is, e.g. `python3 tests/gpu/compile_attention_variants.py -j 16`).

Each variant is emitted as the code generator must emit it (the instantiation contract at the top
of templates/fa4jit/attention/kernel.cuh, example in templates/examples/attention_directp_d128.cu):
3 routes x head dim 64/128/256 x causal 0/1 x guard OnlineExact/SampledAnchor, for sm_90a, and for
sm_80 (bf16 route) / sm_89 (FP8-fed routes). Exit status 1 if any compile fails or any kernel spills.
"""
import argparse
import concurrent.futures
import os
import re
import struct
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
THETA = [-2.0, -0.4140625, 0.3203125, 0.8046875, 1.3203125, 1.8046875, 2.3203125]  # spec.h defaults


def f32(x):
    return struct.unpack("f", struct.pack("f", x))[0]


def hexf(x):
    return f32(x).hex().replace("0x1.0000000000000p", "0x1p") + "f"


def smem_bytes(route, d, bm, bn, qk_bf16):
    qk = d * (2 if qk_bf16 else 1) + 16
    v = bn * (2 * d + 16) if route == 0 else d * (bn + 16)
    return (bm + bn) * qk + v


def source(route, d, causal, guard, bn=64, classifier=0, qk_widen=1):
    import math
    kscale = f32(1.0 / math.sqrt(d) * math.log2(math.e))
    e4 = route != 0 and qk_widen == 1
    score = f32(kscale * 64.0) if e4 else kscale
    qk_bf16 = route == 0 or qk_widen == 0
    smem = smem_bytes(route, d, 64, bn, qk_bf16)
    routes = ["Bf16", "Nvfp8", "DirectP"]
    theta = ", ".join(hexf(t) for t in THETA)
    return f"""#include "fa4jit/attention/kernel.cuh"
namespace {{
using namespace fa4jit::device;
using namespace fa4jit::device::attention;
struct Cfg {{
  static constexpr Route route = Route::{routes[route]};
  static constexpr int head_dim = {d};
  static constexpr bool causal = {"true" if causal else "false"};
  static constexpr int block_m = 64;
  static constexpr int block_n = {bn};
  static constexpr int warps = 4;
  static constexpr Widening qk_widening = Widening::{"E4m3" if e4 else "Bf16"};
  static constexpr int qk_widen_shift = 3;
  static constexpr int p_offset_log2 = 8;
  static constexpr bool v_keys_permuted16 = false;
  static constexpr float score_scale = {hexf(score)};
  static constexpr DirectPCoefficients classifier = {{{classifier}, 2.0f, 0.0f, {{{theta}}}, 1.0f}};
  static constexpr GuardKind guard = GuardKind::{"SampledAnchor" if guard else "OnlineExact"};
  static constexpr int guard_sample_stride = 8;
  static constexpr float guard_slack_log2 = 0.0f;
}};
static_assert(AttentionTraits<Cfg>::kThreads == 128, "threads");
static_assert(AttentionTraits<Cfg>::kSharedBytes == {smem}, "shared memory");
}} // namespace
extern "C" __global__ void __launch_bounds__(128) fa4jit_attn_variant(const AttentionParams params) {{
  attentionForward<Cfg>(params);
}}
"""


def compile_one(args):
    name, src, arch, tmp = args
    path = os.path.join(tmp, name + ".cu")
    with open(path, "w") as f:
        f.write(src)
    cmd = ["nvcc", "-std=c++17", "-I", os.path.join(ROOT, "templates"),
           f"-gencode=arch=compute_{arch},code=sm_{arch}", "-Xptxas", "-v", "-c", path,
           "-o", os.path.join(tmp, f"{name}_{arch}.o")]
    p = subprocess.run(cmd, capture_output=True, text=True)
    out = p.stdout + p.stderr
    regs = re.search(r"Used (\d+) registers", out)
    spill = re.search(r"(\d+) bytes spill stores, (\d+) bytes spill loads", out)
    return (name, arch, p.returncode, int(regs.group(1)) if regs else -1,
            (int(spill.group(1)), int(spill.group(2))) if spill else (-1, -1), out if p.returncode else "")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("-j", type=int, default=os.cpu_count())
    ap.add_argument("--arch-only", default=None, help="only this arch (90a, 89, 80)")
    a = ap.parse_args()
    jobs = []
    tmp = tempfile.mkdtemp(prefix="fa4jit_attn_")
    routes = ["bf16", "nvfp8", "directp"]
    for route in range(3):
        for d in (64, 128, 256):
            for causal in (0, 1):
                for guard in (0, 1):
                    name = f"{routes[route]}_d{d}_c{causal}_g{guard}"
                    src = source(route, d, causal, guard)
                    for arch in ("90a", "80" if route == 0 else "89"):
                        if a.arch_only is None or a.arch_only == arch:
                            jobs.append((name, src, arch, tmp))
    failed = 0
    with concurrent.futures.ThreadPoolExecutor(a.j) as ex:
        for name, arch, rc, regs, (ss, sl), log in ex.map(compile_one, jobs):
            bad = rc != 0 or ss != 0 or sl != 0
            failed += bad
            print(f"{'FAIL' if bad else 'ok  '} {name:24s} sm_{arch:4s} regs {regs:4d} spill stores {ss:4d} loads {sl:4d}")
            if log:
                print(log)
    print(f"{len(jobs) - failed}/{len(jobs)} variants compiled without spills")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
