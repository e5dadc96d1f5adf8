#!/usr/bin/env python3
"""Writes docs/BENCHMARKS.md from one benchmark run folder (default docs/benchmarks/forward).

The folder holds what scripts/device_check.sh's `run` and `bench` steps produce on the GPU
machine, plus a small run.json that says which run it is:

  fa4jit.jsonl  `fa4jit bench --json` (the step's bench_fa4jit.jsonl)
  sdpa.jsonl    scripts/bench_sdpa.py of the same run (bench_sdpa.jsonl): device, ceilings, SDPA
  gpu.txt       nvidia-smi's name and clocks of the card
  run.log       `fa4jit run` of the same run (optional)
  run.json      date, commit, versions, the bench arguments, notes

The page depends only on these files (no clock, no environment), so running the script twice
gives the same bytes. Usage: python3 scripts/make_benchmarks.py [--run DIR] [--out FILE]
"""
import argparse
import json
import os
import re
import sys
import textwrap

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_compare import load  # noqa: E402  (JSON lines of a bench output, non-JSON skipped)

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ROUTES = ("bf16", "nvfp8", "directp")
# The speed targets of docs/ARCHITECTURE.md §5: x cuDNN BF16 SDPA of the same run (non-causal,
# every head dim), and the causal efficiency (causal TFLOP/s over non-causal TFLOP/s, causal
# FLOPs counted) within 10%.
TARGETS = {"directp": 1.8, "nvfp8": 1.5, "bf16": 0.95}
CAUSAL_EFFICIENCY_TARGET = 0.90
WIDTH = 100


def keys_label(n):
    return f"{n // 1024}k" if n % 1024 == 0 else str(n)


def cudnn_label(v):
    if isinstance(v, int) and v >= 10000:  # cuDNN 9: major * 10000 + minor * 100 + patch
        return f"{v // 10000}.{v % 10000 // 100}"
    return str(v)


def wrap(text, indent=""):
    return textwrap.fill(text, width=WIDTH, initial_indent=indent,
                         subsequent_indent=" " * len(indent), break_on_hyphens=False,
                         break_long_words=False)


def read_run(run_dir):
    with open(os.path.join(run_dir, "run.json"), encoding="utf-8") as f:
        meta = json.load(f)
    files = meta.get("files", {})
    ours = load(os.path.join(run_dir, files.get("fa4jit", "fa4jit.jsonl")))
    sdpa = load(os.path.join(run_dir, files.get("sdpa", "sdpa.jsonl")))
    gpu = ""
    gpu_path = os.path.join(run_dir, files.get("gpu", "gpu.txt"))
    if os.path.exists(gpu_path):
        with open(gpu_path, encoding="utf-8") as f:
            gpu = f.read().strip()
    run_log = ""
    log_path = os.path.join(run_dir, files.get("run", "run.log"))
    if os.path.exists(log_path):
        with open(log_path, encoding="utf-8") as f:
            run_log = f.read()
    return meta, ours, sdpa, gpu, run_log


def main_job(run_log):
    """The first `fa4jit run` of the log: shape, time, rate, cosine (None when absent)."""
    shape = re.search(r"^shape\s+(.*)$", run_log, re.M)
    dev = re.search(r"^device\s+.*?: ([0-9.]+) ms \(median of (\d+)\), ([0-9.]+) TFLOP/s",
                    run_log, re.M)
    acc = re.search(r"^accuracy\s+(.*?): cosine vs FP64 ([0-9.]+)", run_log, re.M)
    if not (shape and dev and acc):
        return None
    return {"shape": shape.group(1).strip(), "ms": dev.group(1), "reps": dev.group(2),
            "tflops": dev.group(3), "rows": acc.group(1).strip(), "cosine": acc.group(2)}


def training_section(run_dir):
    """The training step from its own run folder: run.json and scripts/bench_backward.py's output
    (backward.jsonl)."""
    with open(os.path.join(run_dir, "run.json"), encoding="utf-8") as f:
        meta = json.load(f)
    rows = load(os.path.join(run_dir, meta.get("files", {}).get("backward", "backward.jsonl")))
    ceil = next((r for r in rows if r.get("kind") == "ceiling"), {})
    out = ["", "## Training: forward + backward", ""]
    out.append(wrap(
        f"Run of {meta.get('date', '?')} on an {meta.get('device', '?')} (commit {meta.get('commit', '?')}, "
        f"PyTorch {meta.get('torch', '?')}), its own run: `scripts/bench_backward.py` times a training "
        "step of attention as PyTorch code calls it, `o = attention(q, k, v)` then "
        "`torch.autograd.grad(o, (q, k, v), do)` from BF16 tensors, for fa4jit "
        "(`route=\"nvfp8\"`: quantization, the nvfp8 forward, the quantized backward) and for SDPA "
        "BF16 (cuDNN and flash backends), interleaved repeat by repeat, median of "
        f"{meta.get('reps', 10)}. 16 heads, batch x seqlen = {meta.get('tokens', 131072) // 16}."))
    out.append("")
    if ceil:
        out.append(wrap(
            f"Ceilings of the run: BF16 GEMM {ceil.get('bf16_gemm_tflops', 0):.0f} TFLOP/s, FP8 GEMM "
            f"{ceil.get('fp8_gemm_tflops', 0):.0f} TFLOP/s, copy {ceil.get('copy_tb_s', 0):.2f} TB/s. "
            "The backward's floor is its five products (2.5x the forward's FLOPs) at the FP8 GEMM rate."))
        out.append("")
    out.append("| D | keys | causal | SDPA cuDNN ms | SDPA flash ms | fa4jit ms | x cuDNN | deterministic ms "
               "| MXFP4 P/V ms | backward alone, cuDNN / fa4jit ms | backward x cuDNN | backward floor ms |")
    out.append("|---|---|---|---|---|---|---|---|---|---|---|---|")

    def cell(v):
        return "-" if v is None else f"{v:.3f}"
    for r in rows:
        if r.get("kind") != "backward":
            continue
        m = r["ms"]
        cu, fa = m.get("sdpa_cudnn"), m.get("fa4jit")
        ratio = f"{cu / fa:.2f}" if cu and fa else "-"
        cb, fb = m.get("sdpa_cudnn_bwd"), m.get("fa4jit_bwd")
        bwd_ratio = f"{cb / fb:.2f}" if cb and fb else "-"
        out.append(f"| {r['head_dim']} | {keys_label(r['seqlen'])} | {r['causal']} | {cell(cu)} | "
                   f"{cell(m.get('sdpa_flash'))} | {cell(fa)} | {ratio} | {cell(m.get('fa4jit_deterministic'))} | "
                   f"{cell(m.get('fa4jit_mxfp4'))} | {cell(cb)} / {cell(fb)} | {bwd_ratio} | "
                   f"{cell(r.get('floor_bwd_fp8_ms'))} |")
    out.append("")
    out.extend(backward_variants_table(run_dir, meta))
    args = meta.get("bench_args", "")
    cli_args = meta.get("cli_bench_args", "")
    out.extend(notes_and_command(meta, (f'BACKWARD_ARGS="{args}" ' if args else "") +
                                 (f'BACKWARD_CLI_ARGS="{cli_args}" ' if cli_args else "") +
                                 "scripts/device_check.sh backward"))
    return out


def decode_section(run_dir):
    """Decode over the paged cache from its own run folder: run.json, scripts/bench_decode.py's
    output (decode.jsonl with the heuristic's plans, or decode_tuned.jsonl after `fa4jit tune
    --decode`) and, where the run has it, the tuning records of the same run (tuning.json: every
    plan's time per shape)."""
    with open(os.path.join(run_dir, "run.json"), encoding="utf-8") as f:
        meta = json.load(f)
    files = meta.get("files", {})
    tuned_run = "decode_tuned" in files
    rows = [r for r in load(os.path.join(run_dir, files.get("decode_tuned") or files.get("decode", "decode.jsonl")))
            if r.get("kind") == "fa4jit-decode"]
    out = ["", "## Decode over the paged cache", ""]
    copy = rows[0]["copy_gb_s"] if rows else 0
    out.append(wrap(
        f"Run of {meta.get('date', '?')} on an {meta.get('device', '?')} (commit {meta.get('commit', '?')}, "
        f"PyTorch {meta.get('torch', '?')}), its own run: `scripts/bench_decode.py` times `Engine::decode` "
        "(`fa4jit bench --decode`: one query token per sequence, 32 query heads, 8 kv heads, D 128, "
        "every sequence at the full context, the split combine included, block tables rotated over at "
        "least 256 MB of pages) and PyTorch SDPA's BF16 decode on a contiguous BF16 cache (the fastest of "
        "its flash, cuDNN and efficient backends, K/V copies rotated the same way), median of "
        f"{meta.get('reps', 7)} samples of 20 calls. Copy bandwidth of the run: {copy:.0f} GB/s. "
        "GB/s counts the cache bytes decode must read (K with its scales, V with its scales); the "
        "rooflines are those bytes, and a BF16 cache's, at copy bandwidth. `bound x` is the BF16 "
        "roofline over the cache's: the most any decode of this cache can gain on a BF16 decode that "
        "runs at copy bandwidth. " +
        ("Plans (warps `w`, splits `s`, `ring3`: kv_stages 3) are those `fa4jit tune --decode` chose in "
         "the same run." if tuned_run else "Plans (warps `w`, splits `s`) are the heuristic's.")))
    out.append("")
    # The tuned plan of each shape, by its tuning record (the bench rows name splits and warps only).
    records = []
    if files.get("tuning") and os.path.exists(os.path.join(run_dir, files["tuning"])):
        with open(os.path.join(run_dir, files["tuning"]), encoding="utf-8") as f:
            records = json.load(f)
    winners = {}
    for rec in records:
        problem = dict(re.findall(r"([a-z]+)(\d+)", rec["problem"]))
        winners[(rec["key"].split("/")[2], int(problem["b"]), int(problem["ctx"]))] = rec["winner"]
    out.append("| V | batch | context | plan | fa4jit ms | GB/s | x copy | cache roofline ms | "
               "SDPA BF16 ms (backend) | BF16 roofline ms | x SDPA | bound x |")
    out.append("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        sdpa = "-" if r.get("sdpa_ms") is None else f"{r['sdpa_ms']:.4f} ({r.get('sdpa_backend')})"
        speed = "-" if r.get("speedup_vs_sdpa") is None else f"{r['speedup_vs_sdpa']:.2f}"
        bound = r["bf16_roofline_ms"] / r["cache_roofline_ms"]
        plan = winners.get((r["value_format"], r["batch"], r["context"]),
                           f"w{r.get('warps', '?')} s{r['splits']}" + (f" ring{r['kv_stages']}" if r.get("kv_stages") else ""))
        out.append(f"| {r['value_format']} | {r['batch']} | {keys_label(r['context'])} | "
                   f"{plan} | {r['ms']:.4f} | {r['cache_gb_s']:.0f} | "
                   f"{r['fraction_of_copy']:.2f} | {r['cache_roofline_ms']:.4f} | {sdpa} | "
                   f"{r['bf16_roofline_ms']:.4f} | {speed} | {bound:.2f} |")
    out.append("")
    if records:
        out.append(wrap("The tuner's view of the same shapes (median ms of each plan, 10 samples of 20 "
                        "calls): the heuristic's plan, the fastest plan with steps in registers and the "
                        "fastest with the shared-memory ring."))
        out.append("")
        out.append("| key | problem | heuristic | registers, best | ring, best | winner |")
        out.append("|---|---|---|---|---|---|")
        for rec in records:
            cands = [c for c in rec["candidate_results"] if c.get("ok")]
            regs = min((c for c in cands if "ring" not in c["label"]), key=lambda c: c["median_ms"], default=None)
            ring = min((c for c in cands if "ring" in c["label"]), key=lambda c: c["median_ms"], default=None)

            def cell(c):
                return "-" if c is None else f"{c['median_ms']:.4f} ({c['label']})"
            out.append(f"| `{rec['key']}` | {rec['problem']} | {rec['heuristic_ms']:.4f} ({rec['heuristic']}) | "
                       f"{cell(regs)} | {cell(ring)} | {rec['winner']} |")
        out.append("")
    args = meta.get("bench_args", "")
    steps = "decode-tuned" if tuned_run else "decode"
    out.extend(notes_and_command(meta, (f'DECODE_ARGS="{args}" ' if args else "") +
                                 f"scripts/device_check.sh {steps}"))
    return out


def e4m3_qk_section(run_dir):
    """The E4M3 Q/K presets beside their NVFP4 routes, from their own run folder: run.json,
    `fa4jit bench --json` (bench.jsonl), scripts/bench_sdpa.py (sdpa.jsonl) and the large-logit
    cosines the GPU test printed (large_logits.txt)."""
    with open(os.path.join(run_dir, "run.json"), encoding="utf-8") as f:
        meta = json.load(f)
    files = meta.get("files", {})
    ours = [r for r in load(os.path.join(run_dir, files.get("fa4jit", "bench.jsonl"))) if r.get("kind") == "fa4jit"]
    sdpa_rows = load(os.path.join(run_dir, files.get("sdpa", "sdpa.jsonl")))
    sdpa = {(r["head_dim"], r["seqlen"], r["causal"]): r for r in sdpa_rows if r.get("kind") == "sdpa"}
    ceil = next((r for r in sdpa_rows if r.get("kind") == "ceiling"), {})
    routes = []
    for r in ours:
        if r["route"] not in routes:
            routes.append(r["route"])
    out = ["", "## E4M3 Q/K presets", ""]
    out.append(wrap(
        f"Run of {meta.get('date', '?')} on an {meta.get('device', '?')} (commit {meta.get('commit', '?')}, "
        f"PyTorch {meta.get('torch', '?')}), its own run: `fa4jit bench` as above (end to end from BF16 "
        "/ kernel alone, TFLOP/s, and the ratio to cuDNN BF16 SDPA of the same run), `fp8` and "
        "`fp8-directp` beside the routes whose P and V they share. Ceilings of the run: copy "
        f"{ceil.get('copy_tb_s', 0):.2f} TB/s, BF16 GEMM {ceil.get('bf16_gemm_tflops', 0):.0f} TFLOP/s, "
        f"FP8 GEMM {ceil.get('fp8_gemm_tflops', 0):.0f} TFLOP/s."))
    out.append("")
    out.append("| D | keys | causal | cuDNN | " + " | ".join(routes) + " |")
    out.append("|---" * (4 + len(routes)) + "|")
    shapes = sorted({(r["head_dim"], r["seqlen"], r["causal"]) for r in ours})
    for shape in shapes:
        base = sdpa.get(shape, {}).get("cudnn_tflops")
        cells = []
        for route in routes:
            r = next((x for x in ours if (x["head_dim"], x["seqlen"], x["causal"]) == shape and x["route"] == route), None)
            if r is None or "e2e_tflops" not in r:
                cells.append("-")
                continue
            ratio = f" ({r['e2e_tflops'] / base:.2f}x)" if base else ""
            cells.append(f"{r['e2e_tflops']:.0f}{ratio} / {r['tflops']:.0f}")
        d, s, c = shape
        out.append(f"| {d} | {keys_label(s)} | {c} | {base:.0f} | " + " | ".join(cells) + " |")
    out.append("")
    acc_file = os.path.join(run_dir, files.get("accuracy", "large_logits.txt"))
    if os.path.exists(acc_file):
        cos = re.findall(r"\): (\S+)\s+cosine vs fp64 ([0-9.]+)", open(acc_file, encoding="utf-8").read())
        out.append(wrap("Accuracy at large logits, the same run (`runtime_test_gpu_forward`, \"E4M3 Q/K keep the "
                        "accuracy at large logits\"): Q, K ~ N(0, 4^2), so logits with standard deviation 16, D 128, "
                        "1024 keys, 4 heads of 256 queries, cosine of O against FP64 through `Engine::forward`:"))
        out.append("")
        out.append("| " + " | ".join(name for name, _ in cos) + " |")
        out.append("|---" * len(cos) + "|")
        out.append("| " + " | ".join(value for _, value in cos) + " |")
        out.append("")
    out.extend(notes_and_command(meta, f'BIN=.device-carry; "$BIN/fa4jit" bench {meta.get("bench_args", "")} --json '
                                       "> bench.jsonl; python3 scripts/bench_sdpa.py --head-dim 128 --seqlen "
                                       "4096,16384 > sdpa.jsonl; \"$BIN/runtime_test_gpu_forward\" "
                                       "\"E4M3 Q/K keep the accuracy*\""))
    return out


def quantize_cluster_section(run_dir):
    """The one-pass quantizers (cluster, pipelined) against the two passes, from their own run folder: run.json,
    `fa4jit jit-bench --json` with the default passes (jit.json) and with FA4JIT_QUANTIZE_PASSES=two
    (jit_two.json), `fa4jit bench --json` both ways (bench_auto.jsonl, bench_two.jsonl) and, where
    the run kept it, scripts/bench_sdpa.py of the same call (sdpa.jsonl)."""
    with open(os.path.join(run_dir, "run.json"), encoding="utf-8") as f:
        meta = json.load(f)
    files = meta.get("files", {})

    def jit(name):
        with open(os.path.join(run_dir, files.get(name, name + ".json")), encoding="utf-8") as f:
            text = f.read()
        return json.loads(text[text.index("{"):]).get("quantize", {})

    one, two = jit("jit"), jit("jit_two")
    sdpa_file = os.path.join(run_dir, files.get("sdpa", "sdpa.jsonl"))
    sdpa_rows = load(sdpa_file) if os.path.exists(sdpa_file) else []
    sdpa = {(r["head_dim"], r["seqlen"], r["causal"]): r for r in sdpa_rows if r.get("kind") == "sdpa"}
    ceil = next((r for r in sdpa_rows if r.get("kind") == "ceiling"), {})
    out = ["", "## One-pass quantizers", ""]
    out.append(wrap(
        f"Run of {meta.get('date', '?')} on an {meta.get('device', '?')} (commit {meta.get('commit', '?')}), its own "
        "run. NVFP4 and E4M3 Q/K and FP8 V need the head's maximum before any code: the two passes read x "
        "twice (the max, then the encode), the one-pass kernels once from memory: the cluster kernel holds the "
        "head in a cluster's shared memory where it fits, the pipelined kernel (NVFP4 and E4M3 rows) reads each "
        "row group again from L2 a step after reducing it. `fa4jit jit-bench`: each quantizer's `Engine::quantize` "
        "call (the default passes of the run's binaries) at "
        "`fa4jit bench`'s 4k-key "
        "shapes, milliseconds and the bandwidth it reaches (BF16 read once plus the codes written) as a fraction "
        f"of the device copy of the same run ({one.get('copy_tb_s', 0):.2f} TB/s, read plus write)."))
    out.append("")
    out.append("| D | format | two passes ms | one pass ms | two passes × copy | one pass × copy |")
    out.append("|---|---|---|---|---|---|")
    two_calls = {(tuple(sh["shape"]), c["format"]): c for sh in two.get("bench_shapes", []) for c in sh["calls"]}
    for sh in one.get("bench_shapes", []):
        for c in sh["calls"]:
            t = two_calls.get((tuple(sh["shape"]), c["format"]))
            if not t:
                continue
            out.append(f"| {sh['shape'][3]} | {c['format']} | {t['ms']:.4f} | {c['ms']:.4f} | "
                       f"{t['fraction_of_copy']:.2f} | {c['fraction_of_copy']:.2f} |")
    out.append("")
    sizes = sorted({c["ctas"] for sh in one.get("bench_shapes", []) for p in sh["passes"]
                    for c in p.get("cluster", [])})
    pipelined_threads = sorted({p["threads"] for sh in one.get("bench_shapes", []) for p in sh["passes"]
                                if p.get("pipelined")})
    if sizes or pipelined_threads:
        out.append(wrap("The one-pass kernels alone, × copy: the cluster kernel (256 threads) at each cluster size "
                        "whose slices fit a CTA's shared memory (the engine takes the fewest CTAs whose slices stay "
                        "within 64 KiB), and the pipelined kernel at each CTA size (a grid of every CTA the device "
                        "holds at once; the engine launches 256 threads), beside the two passes' amax and encode "
                        "kernels (256 threads, ms):"))
        out.append("")
        heads = ["D", "format", "amax ms", "encode ms"] + [f"cluster {n} CTAs" for n in sizes] + \
            [f"pipelined {t} thr" for t in pipelined_threads]
        out.append("| " + " | ".join(heads) + " |")
        out.append("|---|---|---|---|" + "---|" * (len(sizes) + len(pipelined_threads)))
        for sh in one.get("bench_shapes", []):
            by_threads = {p["threads"]: p for p in sh["passes"]}
            for p in sh["passes"]:
                if p["threads"] != 256 or not (p.get("cluster") or p.get("pipelined")):
                    continue
                by = {c["ctas"]: c for c in p.get("cluster", [])}
                cells = [f"{by[n]['fraction_of_copy']:.2f} ({by[n]['slice_kib']:.0f} KiB)" if n in by else "-"
                         for n in sizes]
                for t in pipelined_threads:
                    q = next((x for x in sh["passes"] if x["threads"] == t and x["format"] == p["format"]
                              and x.get("pipelined")), None)
                    cells.append(f"{q['pipelined']['fraction_of_copy']:.2f} ({q['pipelined']['ms']:.4f} ms)"
                                 if q else "-")
                out.append(f"| {sh['shape'][3]} | {p['format']} | {p['amax_ms']:.4f} | {p['encode_ms']:.4f} | "
                           + " | ".join(cells) + " |")
        out.append("")

    def bench(name):
        rows = load(os.path.join(run_dir, files.get(name, name + ".jsonl")))
        return {(r["route"], r["head_dim"], r["seqlen"], r["causal"]): r for r in rows if r.get("kind") == "fa4jit"}

    b1, b2 = bench("bench_auto"), bench("bench_two")
    out.append(wrap("The call from BF16 (`fa4jit bench`, milliseconds) with the two passes and with the one-pass "
                    "kernels, the kernel alone (one median of each binary run; they differ by the run-to-run spread), "
                    "what quantizing Q, K and V adds (call minus kernel), and the share of the kernel's speed the "
                    "call keeps" + (", with × cuDNN BF16 SDPA of the same run:" if sdpa else ":")))
    out.append("")
    ratio_head = " | one pass × cuDNN" if sdpa else ""
    out.append("| D | keys | causal | route | call, two passes | call, one pass | kernel | quantization, two / one "
               "| kept, two / one" + ratio_head + " |")
    out.append("|---" * (9 + (1 if sdpa else 0)) + "|")
    for key in sorted(b1, key=lambda k: (k[1], k[2], k[3], k[0])):
        route, d, s, c = key
        r1, r2 = b1[key], b2.get(key)
        if not r2:
            continue
        q2, q1 = r2["e2e_ms"] - r2["ms"], r1["e2e_ms"] - r1["ms"]
        ratio = ""
        if sdpa:
            base = sdpa.get((d, s, c), {}).get("cudnn_tflops")
            ratio = f" | {r1['e2e_tflops'] / base:.2f}" if base else " | -"
        out.append(f"| {d} | {keys_label(s)} | {c} | {route} | {r2['e2e_ms']:.3f} | {r1['e2e_ms']:.3f} | "
                   f"{r1['ms']:.3f} | {q2:.3f} / {q1:.3f} | {r2['ms'] / r2['e2e_ms']:.2f} / "
                   f"{r1['ms'] / r1['e2e_ms']:.2f}{ratio} |")
    out.append("")
    if ceil:
        out.append(wrap(f"Ceilings of the run: copy {ceil.get('copy_tb_s', 0):.2f} TB/s, BF16 GEMM "
                        f"{ceil.get('bf16_gemm_tflops', 0):.0f} TFLOP/s, FP8 GEMM "
                        f"{ceil.get('fp8_gemm_tflops', 0):.0f} TFLOP/s."))
        out.append("")
    args = meta.get("bench_args", "")
    out.extend(notes_and_command(meta, "BIN=.device-carry; J=\"jit-bench --head-dim 64,128,256 --json\"\n"
                                       f"B=\"bench {args} --json\"\n"
                                       "$BIN/fa4jit $J > jit.json; FA4JIT_QUANTIZE_PASSES=two $BIN/fa4jit $J > jit_two.json\n"
                                       "$BIN/fa4jit $B > bench_auto.jsonl; FA4JIT_QUANTIZE_PASSES=two $BIN/fa4jit $B > bench_two.jsonl\n"
                                       "python3 scripts/bench_sdpa.py --head-dim 128 --seqlen 4096,16384 > sdpa.jsonl"))
    return out


def quantize_pipelined_section(run_dir):
    """The pipelined one-pass quantizer beside the two passes and the cluster kernel of the same
    jit-bench run, from its own run folder: run.json and `fa4jit jit-bench --json` (jit.json)."""
    with open(os.path.join(run_dir, "run.json"), encoding="utf-8") as f:
        meta = json.load(f)
    with open(os.path.join(run_dir, meta.get("files", {}).get("jit", "jit.json")), encoding="utf-8") as f:
        text = f.read()
    q = json.loads(text[text.index("{"):]).get("quantize", {})
    out = ["", "## Pipelined one-pass quantizer", ""]
    out.append(wrap(
        f"Run of {meta.get('date', '?')} on an {meta.get('device', '?')} (commit {meta.get('commit', '?')}), its own "
        "run. The pipelined kernel of NVFP4 rows (`quantize/pipelined_pass.cuh`) reads x once from memory and once "
        "more from L2, a step after reducing it. `fa4jit jit-bench` at `fa4jit bench`'s 4k-key shapes, milliseconds "
        "and × the device copy of the same run "
        f"({q.get('copy_tb_s', 0):.2f} TB/s): the two passes (the amax and encode kernels, 256 threads), the "
        "cluster kernel at 16 CTAs where it fits, and the pipelined kernel at each CTA size on a grid of every CTA "
        "the device holds at once (the lag in steps and the bytes read between a group's two reads)."))
    out.append("")
    out.append("| D | two passes | cluster, 16 CTAs | pipelined, 128 threads | pipelined, 256 threads "
               "| pipelined, 512 threads |")
    out.append("|---|---|---|---|---|---|")
    for sh in q.get("bench_shapes", []):
        passes = {p["threads"]: p for p in sh["passes"] if p["format"] == "nvfp4"}
        base = passes.get(256)
        if not base:
            continue
        two_ms = base["amax_ms"] + base["encode_ms"]
        call = next((c for c in sh["calls"] if c["format"] == "nvfp4"), None)
        frac = (call["fraction_of_copy"] * call["ms"] / two_ms) if call else 0
        cluster = {c["ctas"]: c for c in base.get("cluster", [])}.get(16)
        cells = [f"{two_ms:.4f} ({frac:.2f})",
                 f"{cluster['ms']:.4f} ({cluster['fraction_of_copy']:.2f})" if cluster else "-"]
        for t in (128, 256, 512):
            pp = passes.get(t, {}).get("pipelined")
            cells.append(f"{pp['ms']:.4f} ({pp['fraction_of_copy']:.2f}), lag {pp['lag']}, "
                         f"{pp['mib_in_flight']:.1f} MiB" if pp else "-")
        out.append(f"| {sh['shape'][3]} | " + " | ".join(cells) + " |")
    out.append("")
    out.extend(notes_and_command(meta, meta.get("command", "")))
    return out


def notes_and_command(meta, command):
    """A run folder's notes, then the command that reproduces it."""
    out = []
    for note in meta.get("notes", []):
        out.append(wrap(note))
        out.append("")
    out.append("Reproduce (GPU machine, binaries from `scripts/prepare_device_carry.sh`):")
    out.append("")
    out.append("```sh")
    out.append(command)
    out.append("```")
    return out


def backward_variants_table(run_dir, meta):
    """The backward of each variant through the C++ engine (`fa4jit bench --backward --json`, the
    same run's cli_backward.jsonl), where the run folder has it."""
    name = meta.get("files", {}).get("cli_backward")
    if not name or not os.path.exists(os.path.join(run_dir, name)):
        return []
    rows = [r for r in load(os.path.join(run_dir, name)) if r.get("kind") == "fa4jit-backward"]
    variants = list(dict.fromkeys(r["variant"] for r in rows))
    shapes = list(dict.fromkeys((r["head_dim"], r["seqlen"], r["causal"]) for r in rows))
    by = {(r["head_dim"], r["seqlen"], r["causal"], r["variant"]): r for r in rows}
    out = [wrap("The backward alone per variant, through the C++ engine without PyTorch (`fa4jit bench "
                "--backward`, same run, median ms; `tile64x64x4` is one warpgroup of 64 keys per CTA, "
                "`mxfp4` MXFP4 P/V):"), ""]
    out.append("| D | keys | causal | " + " | ".join(variants) + " |")
    out.append("|---|---|---|" + "---|" * len(variants))
    for d, s, c in shapes:
        cells = []
        for v in variants:
            r = by.get((d, s, c, v))
            cells.append(f"{r['bwd_ms']:.3f}" if r and "bwd_ms" in r else "-")
        out.append(f"| {d} | {keys_label(s)} | {c} | " + " | ".join(cells) + " |")
    out.append("")
    return out


def build(run_dir, out_path, backward_dir=None, decode_dir=None, e4m3_qk_dir=None, quantize_dir=None,
          quantize_pipelined_dir=None):
    meta, ours, sdpa, gpu, run_log = read_run(run_dir)
    dev = next((r for r in sdpa if r.get("kind") == "device"), {})
    ceil = next((r for r in sdpa if r.get("kind") == "ceiling"), {})
    ref = {(r["head_dim"], r["seqlen"], r["causal"]): r for r in sdpa if r.get("kind") == "sdpa"}
    # The engine's default kernels only (variant and schedule "default"), by route and point.
    tf, e2e, shapes, ms = {}, {}, {}, {}
    for r in ours:
        if r.get("kind") != "fa4jit" or r.get("variant", "default") != "default":
            continue
        if r.get("schedule", "default") != "default":
            continue
        key = (r["route"], r["head_dim"], r["seqlen"], r["causal"])
        tf[key] = r.get("tflops")  # None: the point failed (its "error" is in the data)
        if "e2e_tflops" in r:  # the call from BF16 tensors (quantization included)
            e2e[key] = r["e2e_tflops"]
            ms[key] = (r["e2e_ms"], r["ms"])
        if "batch" in r:
            shapes[(r["head_dim"], r["seqlen"])] = (r["batch"], r["heads"])
    routes = [x for x in ROUTES if any(k[0] == x for k in tf)]
    dims = sorted({k[1] for k in tf})
    seqlens = sorted({k[2] for k in tf})
    causals = sorted({k[3] for k in tf})

    # Where the run timed the call from BF16 tensors, that is the headline and the ratio's
    # numerator; the kernel alone follows it.
    headline = e2e if e2e else tf

    def cell(route, d, s, c):
        v = headline.get((route, d, s, c))
        if v is None:
            return "error" if (route, d, s, c) in tf else "–"
        cud = ref.get((d, s, c), {}).get("cudnn_tflops")
        text = f"{v:.0f} ({v / cud:.2f}×)" if cud else f"{v:.0f}"
        kernel = tf.get((route, d, s, c))
        return text + (f" / {kernel:.0f}" if e2e and kernel else "")

    def sdpa_cell(d, s, c, name):
        v = ref.get((d, s, c), {}).get(name + "_tflops")
        return f"{v:.0f}" if v is not None else "–"

    page_dir = os.path.dirname(os.path.abspath(out_path))
    rel_run = os.path.relpath(os.path.abspath(run_dir), page_dir).replace(os.sep, "/")
    name = meta.get("device") or dev.get("name") or (gpu.split(",")[0] if gpu else "?")
    out = []
    w = out.append
    w("# Benchmarks")
    w("")
    src = os.path.relpath(os.path.abspath(run_dir), REPO).replace(os.sep, "/")
    w(f"<!-- Generated by `python3 scripts/make_benchmarks.py` from {src}/. Do not edit. -->")
    w("")
    w(wrap("Speed of fa4jit's default attention-forward kernels on one GPU, beside PyTorch's "
           "`scaled_dot_product_attention` (BF16, cuDNN and flash backends) timed in the same run. "
           "Accuracy is in [ACCURACY.md](ACCURACY.md); the targets are in "
           "[ARCHITECTURE.md §5](ARCHITECTURE.md#5-targets)."))
    w("")
    w("## The run")
    w("")
    w("| | |")
    w("|---|---|")
    sm = f", {meta['sm_count']} SMs" if meta.get("sm_count") else ""
    clk = f", {meta['max_sm_clock_mhz']} MHz max SM clock" if meta.get("max_sm_clock_mhz") else ""
    w(f"| device | {name}{sm}{clk} |")
    w(f"| date | {meta.get('date', '?')} |")
    w(f"| fa4jit | binaries built at commit `{meta.get('commit', '?')}` |")
    w(f"| CUDA | driver {meta.get('cuda_driver', '?')}, NVRTC {meta.get('nvrtc', '?')} |")
    torch = meta.get("torch") or dev.get("torch", "?")
    cudnn = meta.get("cudnn") or cudnn_label(dev.get("cudnn", "?"))
    w(f"| baseline | PyTorch {torch}, cuDNN {cudnn} |")
    w("")
    files = [meta.get("files", {}).get(k) for k in ("fa4jit", "sdpa", "gpu", "run")]
    links = ", ".join(f"[{f}]({rel_run}/{f})" for f in files + ["run.json"] if f)
    w(wrap(f"The data of the run: {links}."))
    w("")
    w("## What is timed")
    w("")
    reps = re.search(r"--reps (\d+)", meta.get("bench_args", ""))
    median = f"the median of {reps.group(1)} repeats" if reps else "the median of 20 repeats"
    if e2e:
        w(wrap("**fa4jit, end to end** (`fa4jit bench`, the headline): `Engine::forward` from BF16 "
               "tensors, as a user calls it: quantization into the engine's workspace, widening and "
               "the attention kernel, all on the caller's stream (the call waits for nothing).", "- "))
    w(wrap(("**fa4jit, kernel** (after the \"/\" in a cell): " if e2e else "**fa4jit** (`fa4jit bench`): ")
           + "the attention forward alone, on operands quantized "
           "beforehand: quantization is excluded. The K/V and Q widening of the FP8-fed routes is "
           "included, whether passes before the kernel or the kernel's own warps do it; bf16 reads "
           "the BF16 tensors directly by TMA tensor maps. CUDA events around each forward, "
           f"5 warm-up runs, {median}, two input sets rotated between repeats, Gaussian inputs "
           "(σ = 1), the output poisoned before the first launch.", "- "))
    w(wrap("**SDPA** (`scripts/bench_sdpa.py`): "
           "`torch.nn.functional.scaled_dot_product_attention` on BF16 tensors of the same shapes, "
           "cuDNN and flash backends, CUDA events, 5 warm-up runs, the median of 20, two input "
           "sets rotated.", "- "))
    w(wrap("**FLOPs**: 4 · batch · heads · head dim · visible query-key pairs, for both; causal "
           "counts the visible pairs only (about half), so causal and non-causal rates compare "
           "directly.", "- "))
    by_dim = {}
    for (d, s), (b, h) in sorted(shapes.items()):
        by_dim.setdefault(d, []).append((s, b, h))
    parts = []
    for d, rows in sorted(by_dim.items()):
        heads = sorted({h for _, _, h in rows})
        batches = ", ".join(f"{b} at {keys_label(s)}" for s, b, _ in rows)
        parts.append(f"D{d}: {'/'.join(map(str, heads))} heads, batch {batches}")
    if parts:
        w(wrap("**Shapes**: queries = keys, as many query heads as key/value heads, "
               "batch × heads × keys ≈ 524288; " + "; ".join(parts) + ".", "- "))
    w("")
    if ceil:
        w("## Ceilings of the card")
        w("")
        w(wrap("Measured by `scripts/bench_sdpa.py` in the same run; they bound what any kernel on "
               "this card reaches."))
        w("")
        w("| device copy | BF16 GEMM (8192³) | FP8 GEMM (8192³) |")
        w("|---|---|---|")
        fp8 = ceil.get("fp8_gemm_tflops")
        w(f"| {ceil.get('copy_tb_s', 0):.2f} TB/s | "
          f"{ceil.get('bf16_gemm_tflops', 0):.0f} TFLOP/s | "
          + (f"{fp8:.0f} TFLOP/s |" if fp8 is not None else "– |"))
        w("")
    for c in causals:
        w("## " + ("Causal" if c else "Non-causal"))
        w("")
        w(wrap("TFLOP/s, and in parentheses the ratio to cuDNN BF16 SDPA of the same shape and run"
               + (" (end to end from BF16; the kernel alone after the \"/\")." if e2e else ".")
               + (" Causal masks are bottom-right aligned (queries = keys here)." if c else "")))
        w("")
        w("| D | keys | cuDNN | flash | " + " | ".join(routes) + " |")
        w("|---|---|---|---|" + "---|" * len(routes))
        for d in dims:
            for s in seqlens:
                w(f"| {d} | {keys_label(s)} | {sdpa_cell(d, s, c, 'cudnn')} | "
                  f"{sdpa_cell(d, s, c, 'flash')} | "
                  + " | ".join(cell(r, d, s, c) for r in routes) + " |")
        w("")
    if 0 in causals and 1 in causals:
        w("## Causal efficiency")
        w("")
        w(wrap("Causal TFLOP/s over non-causal TFLOP/s of the same shape (causal FLOPs counted), "
               "cuDNN's beside fa4jit's."))
        w("")
        w("| D | keys | cuDNN | " + " | ".join(routes) + " |")
        w("|---|---|---|" + "---|" * len(routes))

        def eff(v1, v0):
            return f"{v1 / v0:.2f}" if v1 and v0 else "–"
        for d in dims:
            for s in seqlens:
                cud = eff(ref.get((d, s, 1), {}).get("cudnn_tflops"),
                          ref.get((d, s, 0), {}).get("cudnn_tflops"))
                cells = [eff(headline.get((r, d, s, 1)), headline.get((r, d, s, 0))) for r in routes]
                w(f"| {d} | {keys_label(s)} | {cud} | " + " | ".join(cells) + " |")
        w("")
    quantized = [r for r in routes if r != "bf16"]
    if e2e and quantized and 0 in causals:
        w("## The call from BF16: what quantization costs")
        w("")
        w(wrap("Milliseconds, non-causal (quantization does not depend on the mask): the call from "
               "BF16 tensors, the kernel alone, their difference (quantizing Q, K and V), the floor "
               "of that difference (reading the BF16 inputs once and writing the quantized operands "
               "once at the card's copy bandwidth), and the speed the call keeps of the kernel's. The two "
               "medians are measured apart, so at long keys, where quantization is a few percent, "
               "their difference is within the run-to-run spread."))
        w("")
        w("| D | keys | route | call | kernel | quantization | floor | speed kept |")
        w("|---|---|---|---|---|---|---|---|")
        copy = ceil.get("copy_tb_s")
        for d in dims:
            for sl in seqlens:
                for r in quantized:
                    if (r, d, sl, 0) not in ms or (d, sl) not in shapes:
                        continue
                    call, kern = ms[(r, d, sl, 0)]
                    b, h = shapes[(d, sl)]
                    elems = b * h * sl * d
                    v_out = 0.5 + 1 / 32 if r == "directp" else 1.0
                    floor_bytes = elems * (3 * 2 + 2 * (0.5 + 1 / 16) + v_out)
                    floor = f"{floor_bytes / (copy * 1e9):.3f}" if copy else "–"
                    w(f"| {d} | {keys_label(sl)} | {r} | {call:.3f} | {kern:.3f} | {call - kern:.3f} | "
                      f"{floor} | {kern / call:.2f} |")
        w("")
    w("## Against the targets")
    w("")
    w("| target | met at | range |")
    w("|---|---|---|")
    for r in sorted(routes, key=lambda x: -TARGETS.get(x, 0)):
        if r not in TARGETS:
            continue
        for c in [c for c in causals if c == 0]:  # the ratio targets are non-causal ones
            pts = []
            for d in dims:
                for s in seqlens:
                    v = headline.get((r, d, s, c))
                    cud = ref.get((d, s, c), {}).get("cudnn_tflops")
                    if v and cud:
                        pts.append((v / cud, d, s))
            if not pts:
                continue
            # A ratio counts as it is printed (two decimals).
            met = [f"D{d} {keys_label(s)}" for x, d, s in pts if round(x, 2) >= TARGETS[r]]
            missed = [f"D{d} {keys_label(s)}" for x, d, s in pts if round(x, 2) < TARGETS[r]]
            lo, hi = min(p[0] for p in pts), max(p[0] for p in pts)
            label = f"`{r}` ≥ {TARGETS[r]:g}× cuDNN, {'causal' if c else 'non-causal'}"
            met_text = f"{len(met)} of {len(pts)}"
            if met and missed:
                met_text += (": " + ", ".join(met) if len(met) <= len(missed)
                             else " (not " + ", ".join(missed) + ")")
            w(f"| {label} | {met_text} | {lo:.2f}–{hi:.2f}× |")
    if e2e and quantized:
        pts = [(ms[k][1] / ms[k][0], k) for k in ms if k[0] in quantized and k[2] >= 4096]
        if pts:
            met = sum(1 for x, _ in pts if round(x, 2) >= 0.90)
            w(f"| end to end ≥ 0.90× the kernel, FP8-fed routes, from 4k keys | {met} of {len(pts)} | "
              f"{min(x for x, _ in pts):.2f}–{max(x for x, _ in pts):.2f}× |")
    if 0 in causals and 1 in causals:
        effs = []
        for r in routes:
            for d in dims:
                for s in seqlens:
                    v1, v0 = headline.get((r, d, s, 1)), headline.get((r, d, s, 0))
                    if v1 and v0:
                        effs.append(v1 / v0)
        if effs:
            met = sum(1 for x in effs if round(x, 2) >= CAUSAL_EFFICIENCY_TARGET)
            w(f"| causal efficiency ≥ {CAUSAL_EFFICIENCY_TARGET:.2f}, every route | "
              f"{met} of {len(effs)} | {min(effs):.2f}–{max(effs):.2f} |")
    w("")
    job = main_job(run_log)
    if job:
        w("## The main job in the same run")
        w("")
        w(wrap(f"`fa4jit run` (its default shape: {job['shape']}): {job['ms']} ms (median "
               f"of {job['reps']}), {job['tflops']} TFLOP/s; cosine of O against FP64 on "
               f"{job['rows']}: {job['cosine']}. As in the tables, the time excludes the "
               "quantization of Q, K and V."))
        w("")
    notes = meta.get("notes", [])
    if notes:
        w("## Notes")
        w("")
        for n in notes:
            w(wrap(n, "- "))
        w("")
    w("## Reproduce")
    w("")
    w(wrap("The GPU machine runs prebuilt binaries. Build and strip them on the build machine, "
           "into `.device-carry/` (ignored by git):"))
    w("")
    w("```sh")
    w("scripts/prepare_device_carry.sh")
    w("```")
    w("")
    w(wrap("On the GPU machine, in a copy of the working tree with `.device-carry/` beside it "
           "(needs PyTorch with CUDA for the SDPA figures):"))
    w("")
    w("```sh")
    bench_args = meta.get("bench_args", "")
    if bench_args:
        w(f'BENCH_ARGS="{bench_args}" \\')
        w("  scripts/device_check.sh run bench")
    else:
        w("scripts/device_check.sh run bench")
    w("```")
    w("")
    w(wrap("It writes `gpu.txt`, `run.log`, `bench_fa4jit.jsonl` and `bench_sdpa.jsonl` (packed "
           "into `$OUT/logs.tgz`). Put them into a run folder as `gpu.txt`, `run.log`, "
           "`fa4jit.jsonl` and `sdpa.jsonl`, write its `run.json` (date, commit, versions, the "
           "bench arguments), and regenerate this page:"))
    w("")
    w("```sh")
    w("python3 scripts/make_benchmarks.py            # --run DIR --out FILE for another run folder")
    w("```")
    if backward_dir and os.path.exists(os.path.join(backward_dir, "run.json")):
        out.extend(training_section(backward_dir))
    if decode_dir and os.path.exists(os.path.join(decode_dir, "run.json")):
        out.extend(decode_section(decode_dir))
    if e4m3_qk_dir and os.path.exists(os.path.join(e4m3_qk_dir, "run.json")):
        out.extend(e4m3_qk_section(e4m3_qk_dir))
    if quantize_dir and os.path.exists(os.path.join(quantize_dir, "run.json")):
        out.extend(quantize_cluster_section(quantize_dir))
    if quantize_pipelined_dir and os.path.exists(os.path.join(quantize_pipelined_dir, "run.json")):
        out.extend(quantize_pipelined_section(quantize_pipelined_dir))
    text = "\n".join(out) + "\n"
    with open(out_path, "w", encoding="utf-8", newline="\n") as f:
        f.write(text)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--run", default=os.path.join(REPO, "docs", "benchmarks", "forward"),
                    help="run folder (default docs/benchmarks/forward)")
    ap.add_argument("--out", default=os.path.join(REPO, "docs", "BENCHMARKS.md"),
                    help="page to write (default docs/BENCHMARKS.md)")
    ap.add_argument("--backward-run", default=os.path.join(REPO, "docs", "benchmarks", "backward"),
                    help="run folder of scripts/bench_backward.py (default docs/benchmarks/backward)")
    ap.add_argument("--decode-run", default=os.path.join(REPO, "docs", "benchmarks", "decode"),
                    help="run folder of scripts/bench_decode.py (default docs/benchmarks/decode)")
    ap.add_argument("--e4m3-qk-run", default=os.path.join(REPO, "docs", "benchmarks", "e4m3_qk"),
                    help="run folder of the E4M3 Q/K presets (default docs/benchmarks/e4m3_qk)")
    ap.add_argument("--quantize-run", default=os.path.join(REPO, "docs", "benchmarks", "quantize"),
                    help="run folder of the one-pass quantizers (default docs/benchmarks/quantize)")
    ap.add_argument("--quantize-pipelined-run", default=os.path.join(REPO, "docs", "benchmarks", "quantize_pipelined"),
                    help="run folder of the pipelined quantizer (default docs/benchmarks/quantize_pipelined)")
    args = ap.parse_args()
    build(args.run, args.out, args.backward_run, args.decode_run, args.e4m3_qk_run, args.quantize_run,
          args.quantize_pipelined_run)


if __name__ == "__main__":
    main()
