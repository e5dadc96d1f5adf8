"""fa4jit.attention as a PyTorch custom op (torch.library), with a fake implementation so that
torch.compile(fullgraph=True) traces through it. Imported only when torch is importable."""
import ctypes
import math

import torch

from . import _library as L

_DTYPES = (torch.bfloat16, torch.float16)


_DTYPE_CODES = {torch.bfloat16: L.DTYPE_BF16, torch.float16: L.DTYPE_F16, torch.float32: L.DTYPE_F32}


def _tensor_desc(t):
    """A [B, H, S, D] view (any strides, head dim contiguous) as the C API's fa4jit_tensor."""
    return L.Tensor(t.data_ptr(), _DTYPE_CODES[t.dtype], L.Shape4(*t.shape), L.Shape4(*t.stride()))


def _fields(t):
    """The fa4jit_tensor fields of a BF16 or FP16 [B, H, S, D] view, for L.pack_forward_args."""
    return (t.data_ptr(), _DTYPE_CODES[t.dtype], t.shape, t.stride())


# The current stream's handle without making a torch.cuda.Stream object on every call.
_raw_stream = getattr(torch._C, "_cuda_getCurrentRawStream", None)


def _current_stream(device_index):
    if _raw_stream is not None:
        return _raw_stream(device_index)
    return torch.cuda.current_stream(device_index).cuda_stream


def _check(q, k, v):
    for name, t in (("q", q), ("k", k), ("v", v)):
        if not isinstance(t, torch.Tensor):
            raise TypeError(f"fa4jit.attention: {name} must be a torch.Tensor, not {type(t).__name__}")
        if t.dim() != 4:
            raise ValueError(f"fa4jit.attention: {name} must be 4-D, got shape {tuple(t.shape)}")
        if t.dtype not in _DTYPES:
            raise TypeError(f"fa4jit.attention: {name} must be bfloat16 or float16, got {t.dtype}")
        if t.device.type != "cuda":
            raise ValueError(f"fa4jit.attention: {name} is on {t.device}; fa4jit runs on CUDA tensors only")
        if t.stride(-1) != 1:
            raise ValueError(f"fa4jit.attention: {name}'s head dim must be contiguous (stride 1)")
    if not (q.dtype == k.dtype == v.dtype):
        raise TypeError(f"fa4jit.attention: q, k, v dtypes differ ({q.dtype}, {k.dtype}, {v.dtype})")
    if not (q.device == k.device == v.device):
        raise ValueError("fa4jit.attention: q, k and v must be on one device")
    if q.shape[-1] not in (64, 128, 256):
        raise ValueError(f"fa4jit.attention: head dim {q.shape[-1]} is not supported (64, 128 or 256)")


# Workspace bytes per (device, q shape, k shape, route, causal): the size follows the kernel the
# engine picks for the shape, which changes only if the tuning database does; a forward that then
# finds the workspace too small is retried once with the size asked again.
_workspace_bytes = {}


def _attention_bhsd_impl(q, k, v, causal, route, softmax_scale):
    o = torch.empty(q.shape, dtype=q.dtype, device=q.device)
    lse = torch.empty(q.shape[:3], dtype=torch.float32, device=q.device)
    if q.numel() == 0:
        return o, lse
    device = q.device.index if q.device.index is not None else torch.cuda.current_device()
    args = L.pack_forward_args((_fields(q), _fields(k), _fields(v), _fields(o)), lse.data_ptr(), L.ROUTES[route],
                               1 if causal else 0, softmax_scale, _current_stream(device))
    lib = L.library()
    eng = L.engine(device)
    key = (device, tuple(q.shape), tuple(k.shape), route, bool(causal))
    for attempt in (0, 1):
        need = _workspace_bytes.get(key) if attempt == 0 else None
        if need is None:
            size = ctypes.c_uint64()
            L.check(lib.fa4jit_workspace_size(eng.handle, ctypes.byref(args), ctypes.byref(size)))
            need = _workspace_bytes[key] = max(int(size.value), 1)
        # The workspace comes from PyTorch's allocator: stream-ordered, and from the graph's pool
        # while a CUDA graph is captured.
        workspace = torch.empty(need, dtype=torch.uint8, device=q.device)
        rc = lib.fa4jit_forward_with_workspace(eng.handle, ctypes.byref(args), workspace.data_ptr(), need)
        if rc == L.OK:
            return o, lse
        if attempt == 0 and key in _workspace_bytes:
            del _workspace_bytes[key]  # (asked again: the kernel for the shape may have changed)
            continue
        L.check(rc)
    return o, lse


@torch.library.custom_op("fa4jit::attention_bhsd", mutates_args=())
def _attention_bhsd(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: bool, route: str,
                    softmax_scale: float) -> tuple[torch.Tensor, torch.Tensor]:
    """Attention of [B, H, S, D] views (strided; BF16, or FP16 for the nvfp8 and directp routes);
    returns O (q's dtype and shape, dense) and the LSE (float32 [B, Hq, Sq], natural log)."""
    return _attention_bhsd_impl(q, k, v, causal, route, softmax_scale)


@_attention_bhsd.register_fake
def _(q, k, v, causal, route, softmax_scale):
    return (torch.empty(q.shape, dtype=q.dtype, device=q.device),
            torch.empty(q.shape[:3], dtype=torch.float32, device=q.device))


class QuantizedKV:
    """K and V quantized once (NVFP4 K; MXFP4 V for directp, FP8 V for nvfp8), owned by the
    library until this object is collected: what fa4jit.attention(q, kv) reads instead of BF16
    K and V, for a KV cache that is attended many times."""

    def __init__(self, k, v, route, layout):
        if route not in ("directp", "nvfp8"):
            raise ValueError(f"fa4jit.quantize_kv: route {route!r} has no quantized K/V (directp or nvfp8)")
        if layout not in ("bhsd", "bshd"):
            raise ValueError(f"fa4jit.quantize_kv: unknown layout {layout!r} (bhsd or bshd)")
        _check(k, k, v)
        if layout == "bshd":
            k, v = k.transpose(1, 2), v.transpose(1, 2)
        if k.shape != v.shape:
            raise ValueError(f"fa4jit.quantize_kv: k {tuple(k.shape)} and v {tuple(v.shape)} differ")
        self.route, self.shape, self.device = route, tuple(k.shape), k.device
        self._eng = L.engine(k.device.index if k.device.index is not None else torch.cuda.current_device())
        stream = torch.cuda.current_stream(k.device).cuda_stream
        self.k = _quantize(self._eng, k, L.FORMAT_NVFP4, stream)
        self.v = _quantize(self._eng, v, L.FORMAT_MXFP4 if route == "directp" else L.FORMAT_FP8, stream)

    def __del__(self):
        for h in (getattr(self, "k", None), getattr(self, "v", None)):
            if h:
                L.library().fa4jit_quantized_destroy(h)


def _quantize(eng, x, fmt, stream):
    handle = ctypes.c_void_p()
    desc = _tensor_desc(x)
    L.check(L.library().fa4jit_quantize(eng.handle, ctypes.byref(desc), fmt, stream, ctypes.byref(handle)))
    return handle


def quantize_kv(k, v, *, route="directp", layout="bhsd"):
    """Quantizes K and V once for fa4jit.attention(q, kv) (see QuantizedKV)."""
    return QuantizedKV(k, v, route, layout)


def _attention_quantized(q, kv, causal, softmax_scale, return_lse, layout):
    if not isinstance(q, torch.Tensor) or q.dim() != 4 or q.dtype not in _DTYPES or q.device != kv.device:
        raise ValueError("fa4jit.attention: q must be a 4-D bf16/fp16 CUDA tensor on the quantized K/V's device")
    if layout == "bshd":
        q = q.transpose(1, 2)
    o = torch.empty(q.shape, dtype=q.dtype, device=q.device)
    lse = torch.empty(q.shape[:3], dtype=torch.float32, device=q.device)
    stream = torch.cuda.current_stream(q.device).cuda_stream
    lib = L.library()
    qh = _quantize(kv._eng, q, L.FORMAT_NVFP4, stream)
    try:
        args = L.QuantizedForwardArgs()
        args.q, args.k, args.v = qh, kv.k, kv.v
        args.o = _tensor_desc(o)
        args.lse = lse.data_ptr()
        args.route = L.ROUTES[kv.route]
        args.causal = 1 if causal else 0
        args.softmax_scale = float(softmax_scale) if softmax_scale is not None else 1.0 / math.sqrt(q.shape[-1])
        args.stream = stream
        L.check(lib.fa4jit_forward_quantized(kv._eng.handle, ctypes.byref(args)))
    finally:
        lib.fa4jit_quantized_destroy(qh)
    if layout == "bshd":
        o = o.transpose(1, 2)
    return (o, lse) if return_lse else o


def attention(q, k, v=None, *, causal=False, route="directp", softmax_scale=None, return_lse=False,
              layout="bhsd"):
    """Scaled dot-product attention with fa4jit on the current CUDA stream.

    q [B, Hq, Sq, D], k and v [B, Hkv, Sk, D] (layout "bhsd", as SDPA), or [B, S, H, D] (layout
    "bshd", as flash_attn_func): strided views are used as they are, never copied. BF16 or FP16,
    read and written as they are (route "bf16" converts FP16 to BF16 and back: a copy each way). Hq a multiple of Hkv (GQA/MQA); causal
    masks are bottom-right aligned. Returns O in q's layout and dtype, and with return_lse the
    float32 LSE [B, Hq, Sq] (natural log). route: "directp", "nvfp8" or "bf16".

    With k a QuantizedKV (fa4jit.quantize_kv) and no v, only q is quantized per call (eagerly:
    that form is not a custom op, and it allocates Q's quantized operand each call).
    """
    if isinstance(k, QuantizedKV):
        if v is not None:
            raise ValueError("fa4jit.attention: with quantized K/V, pass no v")
        return _attention_quantized(q, k, causal, softmax_scale, return_lse, layout)
    if v is None:
        raise ValueError("fa4jit.attention: v is missing")
    if route not in L.ROUTES:
        raise ValueError(f"fa4jit.attention: unknown route {route!r} (directp, nvfp8 or bf16)")
    if layout not in ("bhsd", "bshd"):
        raise ValueError(f"fa4jit.attention: unknown layout {layout!r} (bhsd or bshd)")
    _check(q, k, v)
    if layout == "bshd":
        q, k, v = q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2)
    if q.shape[0] != k.shape[0] or k.shape != v.shape or q.shape[3] != k.shape[3]:
        raise ValueError(f"fa4jit.attention: shapes q {tuple(q.shape)}, k {tuple(k.shape)}, v {tuple(v.shape)} "
                         "do not form an attention (as [B, H, S, D])")
    if k.shape[1] == 0 or q.shape[1] % k.shape[1] != 0:
        raise ValueError(f"fa4jit.attention: {q.shape[1]} query heads are not a multiple of {k.shape[1]} kv heads")
    dtype = q.dtype
    if dtype == torch.float16 and route == "bf16":  # (its kernels read BF16; nvfp8, directp read FP16)
        q, k, v = q.to(torch.bfloat16), k.to(torch.bfloat16), v.to(torch.bfloat16)
    scale = float(softmax_scale) if softmax_scale is not None else 1.0 / math.sqrt(q.shape[-1])
    if torch.compiler.is_compiling():
        o, lse = torch.ops.fa4jit.attention_bhsd(q, k, v, bool(causal), route, scale)
    else:  # eager: the same function without the dispatcher's cost per call
        o, lse = _attention_bhsd_impl(q, k, v, bool(causal), route, scale)
    if o.dtype != dtype:
        o = o.to(dtype)
    if layout == "bshd":
        o = o.transpose(1, 2)
    return (o, lse) if return_lse else o
