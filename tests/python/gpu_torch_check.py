#!/usr/bin/env python3
"""fa4jit from PyTorch on the GPU: agreement with an FP64 reference per route, BSHD views, GQA,
LSE, FP16, quantize_kv, CUDA-graph capture and replay, torch.compile, the Python call's host
overhead, and end-to-end speed beside cuDNN SDPA called from the same script. Prints a short
report; exit status 1 if a check fails. Run on the GPU machine with FA4JIT_LIBRARY and PYTHONPATH
set (scripts/device_check.sh python)."""
import math
import sys
import time

import torch

import fa4jit

failures = []


def check(ok, what):
    print(("ok   " if ok else "FAIL ") + what)
    if not ok:
        failures.append(what)


def cosine(a, b):
    a, b = a.double().flatten(), b.double().flatten()
    return float((a @ b) / (a.norm() * b.norm()))


def reference(q, k, v, causal):
    """FP64 attention, [B, H, S, D], GQA by repetition, bottom-right causal."""
    q, k, v = q.double(), k.double(), v.double()
    g = q.shape[1] // k.shape[1]
    k, v = k.repeat_interleave(g, 1), v.repeat_interleave(g, 1)
    s = (q @ k.transpose(-1, -2)) / math.sqrt(q.shape[-1])
    if causal:
        sq, sk = q.shape[2], k.shape[2]
        mask = torch.ones(sq, sk, dtype=torch.bool, device=q.device).tril(sk - sq)
        s = s.masked_fill(~mask, float("-inf"))
    return torch.softmax(s, -1) @ v, torch.logsumexp(s, -1)


def main():
    torch.manual_seed(0)
    dev = "cuda"
    B, H, S, D = 2, 8, 1024, 128
    q, k, v = (torch.randn(B, H, S, D, dtype=torch.bfloat16, device=dev) for _ in range(3))
    floors = {"bf16": 0.9999, "nvfp8": 0.985, "directp": 0.965}
    for route in ("bf16", "nvfp8", "directp"):
        for causal in (False, True):
            o, lse = fa4jit.attention(q, k, v, causal=causal, route=route, return_lse=True)
            ref, ref_lse = reference(q, k, v, causal)
            c = cosine(o, ref)
            check(c >= floors[route], f"{route} causal={int(causal)}: cosine vs FP64 {c:.5f} (>= {floors[route]})")
            # The LSE is that of the route's own scores: NVFP4 Q/K move each score by a few percent
            # of its size, so the FP4 routes' LSE differs from FP64's by tenths at most.
            err = float((lse.double() - ref_lse).abs().max())
            bound = 1e-3 if route == "bf16" else 0.5
            check(err < bound, f"{route} causal={int(causal)}: LSE max error {err:.4f} (< {bound})")
    # BSHD views: the same bits as BHSD
    for route in ("bf16", "directp"):
        a = fa4jit.attention(q, k, v, route=route, causal=True)
        qs, ks, vs = (t.transpose(1, 2).contiguous() for t in (q, k, v))
        b = fa4jit.attention(qs, ks, vs, route=route, causal=True, layout="bshd")
        check(b.shape == qs.shape and b.is_contiguous() and torch.equal(b.transpose(1, 2), a),
              f"{route}: bshd views give the bhsd bits, O dense in the bshd layout")
        b2, lse2 = fa4jit.attention(qs, ks, vs, route=route, causal=True, layout="bshd", return_lse=True)
        _, lse1 = fa4jit.attention(q, k, v, route=route, causal=True, return_lse=True)
        check(torch.equal(b2, b) and torch.equal(lse2, lse1), f"{route}: bshd LSE equals the bhsd LSE")
    # Two streams at once: each has its own workspace, and each call's bits are the sequential ones
    k2, v2 = torch.randn_like(k), torch.randn_like(v)
    want = [fa4jit.attention(q, k, v, route="directp"), fa4jit.attention(q, k2, v2, route="directp")]
    s1, s2 = torch.cuda.Stream(), torch.cuda.Stream()
    for s_ in (s1, s2):
        s_.wait_stream(torch.cuda.current_stream())
    got = [[], []]
    for _ in range(4):
        with torch.cuda.stream(s1):
            got[0].append(fa4jit.attention(q, k, v, route="directp"))
        with torch.cuda.stream(s2):
            got[1].append(fa4jit.attention(q, k2, v2, route="directp"))
    torch.cuda.synchronize()
    check(all(torch.equal(g, want[i]) for i in (0, 1) for g in got[i]),
          "directp on two streams at once: every call gives its sequential bits")
    fa4jit.release_workspaces()
    check(torch.equal(fa4jit.attention(q, k, v, route="directp"), want[0]), "after release_workspaces: the same bits")
    # GQA
    kg, vg = k[:, :2].contiguous(), v[:, :2].contiguous()
    for route in ("nvfp8", "directp"):
        o = fa4jit.attention(q, kg, vg, route=route)
        c = cosine(o, reference(q, kg, vg, False)[0])
        check(c >= floors[route], f"{route} GQA 8:2: cosine {c:.5f}")
    # FP16 in and out: read and written as they are by nvfp8 and directp, converted by bf16
    qh, kh, vh = q.half(), k.half(), v.half()
    for route in ("nvfp8", "directp", "bf16"):
        o16 = fa4jit.attention(qh, kh, vh, route=route)
        c = cosine(o16, reference(q, k, v, False)[0])
        check(o16.dtype == torch.float16 and c >= floors[route], f"{route}: fp16 in, fp16 out, cosine {c:.5f}")
    for route in ("nvfp8", "directp"):
        kv16 = fa4jit.quantize_kv(kh, vh, route=route)
        check(torch.equal(fa4jit.attention(qh, kv16, causal=True), fa4jit.attention(qh, kh, vh, route=route, causal=True)),
              f"{route}: fp16 quantize_kv once gives the bits of the fp16 call")
    f16 = torch.compile(lambda a, b, c: fa4jit.attention(a, b, c, route="directp"), fullgraph=True)
    check(torch.equal(f16(qh, kh, vh), fa4jit.attention(qh, kh, vh, route="directp")),
          "torch.compile traces the fp16 call (fp16 output) and gives the eager bits")
    # quantize_kv: the same bits as quantizing inside the call
    for route in ("nvfp8", "directp"):
        kv = fa4jit.quantize_kv(k, v, route=route)
        check(torch.equal(fa4jit.attention(q, kv, causal=True), fa4jit.attention(q, k, v, route=route, causal=True)),
              f"{route}: quantize_kv once gives the bits of the BF16 call")
    # Errors
    try:
        fa4jit.attention(q[..., :96], k[..., :96], v[..., :96])
        check(False, "head dim 96 is refused")
    except ValueError as e:
        check("head dim 96" in str(e), "head dim 96 is refused with a ValueError")
    # CUDA graph: capture, replay on new values, compare with eager bit for bit
    for route in ("directp", "bf16"):
        sq, sk, sv = q.clone(), k.clone(), v.clone()
        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s):
            for _ in range(2):
                fa4jit.attention(sq, sk, sv, route=route, causal=True)
        torch.cuda.current_stream().wait_stream(s)
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            out = fa4jit.attention(sq, sk, sv, route=route, causal=True)
        new = [torch.randn_like(t) for t in (q, k, v)]
        for dst, src in zip((sq, sk, sv), new):
            dst.copy_(src)
        g.replay()
        torch.cuda.synchronize()
        eager = fa4jit.attention(*new, route=route, causal=True)
        check(torch.equal(out, eager), f"{route}: a captured CUDA graph replays bit for bit on new inputs")
    # torch.compile
    f = torch.compile(lambda a, b, c: fa4jit.attention(a, b, c, route="nvfp8", causal=True), fullgraph=True)
    check(torch.equal(f(q, k, v), fa4jit.attention(q, k, v, route="nvfp8", causal=True)),
          "torch.compile(fullgraph=True) gives the eager bits")
    # Host overhead of the Python call on a tiny shape, beside the C call with its arguments made once
    import ctypes
    from fa4jit import _library as L, _torch_ops as T
    tq = torch.randn(1, 1, 128, 64, dtype=torch.bfloat16, device=dev)
    to = torch.empty_like(tq)
    eng, lib = L.engine(tq.device.index or 0), L.library()

    def per_call_us(*fns):
        """Host time per call of each function: the median of short bursts, each started on an idle
        device, so that no burst fills the launch queue (then the host would wait for the GPU). The
        functions' bursts take turns, so that a drift of the host's speed meets them all alike."""
        for fn in fns:
            for _ in range(50):
                fn()
        torch.cuda.synchronize()
        bursts = [[] for _ in fns]
        for _ in range(41):
            for fn, times in zip(fns, bursts):
                t0 = time.perf_counter()
                for _ in range(16):
                    fn()
                times.append((time.perf_counter() - t0) / 16 * 1e6)
                torch.cuda.synchronize()
        return [sorted(times)[len(times) // 2] for times in bursts]

    print("\n| route | Python attention (us) | with LSE (us) | C call (us) | Python - C (us) |")
    print("|---|---|---|---|---|")
    for route in ("bf16", "nvfp8", "directp"):
        cargs = L.ForwardArgs(T._tensor_desc(tq), T._tensor_desc(tq), T._tensor_desc(tq), T._tensor_desc(to),
                              0, L.ROUTES[route], 0, 0.125, torch.cuda.current_stream().cuda_stream)
        size = ctypes.c_uint64()
        L.check(lib.fa4jit_workspace_size(eng.handle, ctypes.byref(cargs), ctypes.byref(size)))
        ws = torch.empty(max(size.value, 1), dtype=torch.uint8, device=dev)
        py, py_lse, c = per_call_us(
            lambda: fa4jit.attention(tq, tq, tq, route=route),
            lambda: fa4jit.attention(tq, tq, tq, route=route, return_lse=True),
            lambda: lib.fa4jit_forward_with_workspace(eng.handle, ctypes.byref(cargs), ws.data_ptr(), ws.numel()))
        print(f"| {route} | {py:.1f} | {py_lse:.1f} | {c:.1f} | {py - c:.1f} |")
        print(f"info Python attention host time per call (tiny shape, {route}): {py:.1f} us, C call {c:.1f} us")
    gradients(dev)
    merging(dev)
    paging(dev)
    print(f"\n{len(failures)} failed")
    return 1 if failures else 0


def gradients(dev):
    """Autograd through fa4jit.attention (route nvfp8): dQ, dK, dV against FP64 autograd, GQA and
    BSHD, the deterministic mode, the variants, and the errors of routes without a backward."""
    torch.manual_seed(3)
    for d in (64, 128):
        for causal in (False, True):
            q, k, v, do = (torch.randn(2, 4, 384, d, device=dev, dtype=torch.bfloat16) for _ in range(4))
            k, v = k[:, :2], v[:, :2]  # GQA 4:2
            for t in (q, k, v):
                t.requires_grad_(True)
            got = torch.autograd.grad(fa4jit.attention(q, k, v, route="nvfp8", causal=causal), (q, k, v), do)
            q64, k64, v64 = (t.detach().double().requires_grad_(True) for t in (q, k, v))
            want = torch.autograd.grad(reference(q64, k64, v64, causal)[0], (q64, k64, v64), do.double())
            cos = [cosine(g.float(), w) for g, w in zip(got, want)]
            check(min(cos) >= 0.98, f"backward D{d} causal={int(causal)} GQA: cosine dQ/dK/dV vs FP64 "
                  + " / ".join(f"{c:.4f}" for c in cos))
    q, k, v, do = (torch.randn(1, 300, 2, 64, device=dev, dtype=torch.bfloat16) for _ in range(4))
    for t in (q, k, v):
        t.requires_grad_(True)
    # (deterministic: dQ's atomics would otherwise add in a different order in each call)
    bshd = torch.autograd.grad(fa4jit.attention(q, k, v, route="nvfp8", layout="bshd", deterministic=True),
                               (q, k, v), do)
    bhsd = torch.autograd.grad(fa4jit.attention(*(t.transpose(1, 2) for t in (q, k, v)), route="nvfp8",
                                                deterministic=True), (q, k, v), do.transpose(1, 2))
    check(all(torch.equal(a, b) for a, b in zip(bshd, bhsd)) and bshd[0].shape == q.shape,
          "backward: BSHD gradients equal the BHSD ones, in the caller's layout")
    det = [torch.autograd.grad(fa4jit.attention(q, k, v, route="nvfp8", layout="bshd", causal=True,
                                                deterministic=True), (q, k, v), do) for _ in range(3)]
    check(all(torch.equal(a, b) for r in det[1:] for a, b in zip(r, det[0])), "backward: deterministic dQ repeats bit for bit")
    step = lambda a, b, c: fa4jit.attention(a, b, c, route="nvfp8", layout="bshd", causal=True, deterministic=True)
    compiled = torch.autograd.grad(torch.compile(step, fullgraph=True)(q, k, v), (q, k, v), do)
    check(all(torch.equal(a, b) for a, b in zip(compiled, det[0])),
          "backward: torch.compile(fullgraph=True) gives the eager gradients bit for bit")
    for kw in ({"backward_pv": "mxfp4"}, {"backward_qk": "saved-nvfp4"}):
        g = torch.autograd.grad(fa4jit.attention(q, k, v, route="nvfp8", layout="bshd", **kw), (q, k, v), do)
        check(all(torch.isfinite(x).all() for x in g) and cosine(g[2].float(), bshd[2].float()) > 0.95,
              f"backward {kw}: finite, dV close to the default's")
    try:
        fa4jit.attention(q, k, v, route="directp", layout="bshd")
        check(False, "route directp with gradients is refused")
    except ValueError as e:
        check("route='nvfp8'" in str(e), "route directp with gradients is refused with a ValueError naming nvfp8")


def merging(dev):
    """fa4jit.merge_states on CUDA: attention over key halves merged against one pass (per route
    and layout), the CUDA kernel against the PyTorch rule, CUDA-graph capture and torch.compile."""
    torch.manual_seed(4)
    q = torch.randn(2, 8, 256, 128, device=dev, dtype=torch.bfloat16)
    k, v = (torch.randn(2, 2, 2048, 128, device=dev, dtype=torch.bfloat16) for _ in range(2))
    for route in ("bf16", "directp"):
        full, full_lse = fa4jit.attention(q, k, v, route=route, return_lse=True)
        parts = [fa4jit.attention(q, k[:, :, a:a + 1024], v[:, :, a:a + 1024], route=route, return_lse=True)
                 for a in (0, 1024)]
        o, lse = fa4jit.merge_state(parts[0][0], parts[0][1], parts[1][0], parts[1][1])
        ref = reference(q, k, v, False)
        # (each half quantizes its own keys: the merge is another approximation, as close as one pass)
        lse_one, lse_two = ((x.double() - ref[1]).abs().max().item() for x in (full_lse, lse))
        check(cosine(o.float(), ref[0]) >= cosine(full.float(), ref[0]) - 2e-3 and lse_two <= 1.5 * lse_one + 1e-3,
              f"merge_state of two {route} halves: cosine vs FP64 {cosine(o.float(), ref[0]):.5f} "
              f"(one pass {cosine(full.float(), ref[0]):.5f}), max |LSE error| {lse_two:.2e} (one pass {lse_one:.2e})")
    states = [(torch.randn(1, 5, 300, 64, device=dev), torch.randn(1, 300, 5, device=dev).transpose(1, 2))
              for _ in range(3)]
    for layout in ("bhsd", "bshd"):
        os_ = [s[0] if layout == "bhsd" else s[0].transpose(1, 2) for s in states]
        lses = [s[1] for s in states]
        got = fa4jit.merge_states(os_, lses, layout=layout)
        want = fa4jit.merge_states([x.cpu() for x in os_], [x.cpu() for x in lses], layout=layout)
        err = max((got[0].cpu() - want[0]).abs().max().item(), (got[1].cpu() - want[1]).abs().max().item())
        check(err < 1e-5 and got[0].shape == os_[0].shape,
              f"merge_states {layout}: the CUDA kernel equals the PyTorch rule (max error {err:.1e}), strided LSEs")
    a, la, b, lb = states[0][0].clone(), states[0][1].contiguous(), states[1][0].clone(), states[1][1].contiguous()
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        fa4jit.merge_state(a, la, b, lb)
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        captured = fa4jit.merge_state(a, la, b, lb)
    for t in (a, la, b, lb):
        t.copy_(torch.randn_like(t))
    g.replay()
    torch.cuda.synchronize()
    eager = fa4jit.merge_state(a, la, b, lb)
    check(all(torch.equal(x, y) for x, y in zip(captured, eager)), "merge_state: a captured CUDA graph replays bit for bit")
    compiled = torch.compile(lambda *t: fa4jit.merge_state(*t), fullgraph=True)(a, la, b, lb)
    check(all(torch.equal(x, y) for x, y in zip(compiled, eager)), "merge_state: torch.compile(fullgraph=True) gives the eager bits")



def paging(dev):
    """fa4jit.PagedKVCache with FP8 and MXFP4 V: tokens appended in pieces into shuffled pages, decode
    against FP64 attention on the BF16 inputs (bounded by the cache's quantization), the bshd layout,
    CUDA-graph capture of append + decode, and torch.compile."""
    for value_format, min_cosine in (("fp8", 0.98), ("mxfp4", 0.97)):
        paging_one(dev, value_format, min_cosine)


def paging_one(dev, value_format, min_cosine):
    torch.manual_seed(5)
    B, Hq, Hkv, D, page, lens = 3, 32, 8, 128, 16, [700, 33, 2000]
    pages_per_seq = [(n + page - 1) // page for n in lens]
    cache = fa4jit.PagedKVCache(sum(pages_per_seq) + 4, Hkv, D, page_size=page, value_format=value_format, device=dev)
    order = torch.randperm(sum(pages_per_seq) + 4)[:sum(pages_per_seq)].int()
    table = torch.full((B, max(pages_per_seq)), -1, dtype=torch.int32)
    first = 0
    for b, n in enumerate(pages_per_seq):
        table[b, :n] = order[first:first + n]
        first += n
    table = table.to(dev)
    ks = [torch.randn(n, Hkv, D, device=dev, dtype=torch.bfloat16) for n in lens]
    vs = [torch.randn(n, Hkv, D, device=dev, dtype=torch.bfloat16) for n in lens]
    for b, n in enumerate(lens):
        pos = torch.arange(n, device=dev)
        slots = (table[b].long()[pos // page] * page + pos % page)
        half = n // 2  # (two appends: a prefill, then the rest)
        cache.append(ks[b][:half], vs[b][:half], slots[:half])
        cache.append(ks[b][half:], vs[b][half:], slots[half:])
    seq_lens = torch.tensor(lens, dtype=torch.int32, device=dev)
    for queries in (1, 4):
        q = torch.randn(B, Hq, queries, D, device=dev, dtype=torch.bfloat16)
        o, lse = cache.decode(q, table, seq_lens, return_lse=True)
        worst = 1.0
        for b, n in enumerate(lens):
            kk = ks[b].permute(1, 0, 2).unsqueeze(0)
            vv = vs[b].permute(1, 0, 2).unsqueeze(0)
            ref = reference(q[b:b + 1], kk, vv, True)[0]
            worst = min(worst, cosine(o[b:b + 1].float(), ref))
        check(worst >= min_cosine, f"PagedKVCache.decode ({value_format} V), {queries} queries: cosine vs FP64 on "
              f"the BF16 inputs {worst:.4f}")
        o_bshd = cache.decode(q.transpose(1, 2), table, seq_lens, layout="bshd")
        check(torch.equal(o_bshd.transpose(1, 2), o),
              f"PagedKVCache.decode ({value_format} V), {queries} queries: bshd equals bhsd")
    q = torch.randn(B, Hq, 1, D, device=dev, dtype=torch.bfloat16)
    k_new = torch.randn(B, Hkv, D, device=dev, dtype=torch.bfloat16)
    slot_new = torch.tensor([int(table[b, 0]) * page for b in range(B)], dtype=torch.int64, device=dev)
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        cache.append(k_new, k_new, slot_new)
        cache.decode(q, table, seq_lens)
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        cache.append(k_new, k_new, slot_new)
        captured = cache.decode(q, table, seq_lens)
    k_new.copy_(torch.randn_like(k_new))
    q.copy_(torch.randn_like(q))
    g.replay()
    torch.cuda.synchronize()
    cache.append(k_new, k_new, slot_new)
    eager = cache.decode(q, table, seq_lens)
    check(torch.equal(captured, eager),
          f"PagedKVCache ({value_format} V): a captured append + decode replays bit for bit on new values")
    compiled = torch.compile(lambda q: cache.decode(q, table, seq_lens), fullgraph=True)(q)
    check(torch.equal(compiled, eager), f"PagedKVCache.decode ({value_format} V): torch.compile(fullgraph=True) gives "
          "the eager bits")


if __name__ == "__main__":
    sys.exit(main())
