"""fa4jit.attention as a PyTorch custom op (torch.library), with a fake implementation so that
torch.compile(fullgraph=True) traces through it. Imported only when torch is importable."""
import ctypes
import math
from typing import Optional

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


def _check_shapes(q, k, v):
    """q, k, v shapes as [B, H, S, D]."""
    if q[0] != k[0] or tuple(k) != tuple(v) or q[3] != k[3]:
        raise ValueError(f"fa4jit.attention: shapes q {tuple(q)}, k {tuple(k)}, v {tuple(v)} "
                         "do not form an attention (as [B, H, S, D])")
    if k[1] == 0 or q[1] % k[1] != 0:
        raise ValueError(f"fa4jit.attention: {q[1]} query heads are not a multiple of {k[1]} kv heads")


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


# The eager call's plans. A plan holds everything about a call that its tensors' data pointers do
# not change: the packed fa4jit_forward_args with the pointers left zero, the output's shape in the
# caller's layout, and the workspace size. The key is every property the checks and the arguments
# read, so a call that finds its plan has passed the same checks before.
_plans = {}
_MAX_PLANS = 4096
_is_capturing = getattr(torch._C, "_cuda_isCurrentStreamCapturing", None)
_current_device = getattr(torch._C, "_cuda_getDevice", None)


class _Plan:
    __slots__ = ("segments", "o_shape", "o_like_q", "lse_shape", "device", "workspace_bytes", "engine", "forward")


def _bhsd_fields(shape, stride, layout):
    """The [B, H, S, D] shape and strides of a tensor given in `layout`."""
    if layout == "bshd":
        return (shape[0], shape[2], shape[1], shape[3]), (stride[0], stride[2], stride[1], stride[3])
    return tuple(shape), tuple(stride)


def _make_plan(q, k, v, causal, route, softmax_scale, return_lse, layout):
    """The plan of an eager call, after the full checks; None where the general path must run (a
    dtype conversion, an empty batch, or tensors on a device other than the current one)."""
    _check(q, k, v)
    if softmax_scale is not None and not (math.isfinite(float(softmax_scale)) and float(softmax_scale) > 0):
        raise ValueError(f"fa4jit.attention: softmax_scale {softmax_scale} is not a finite positive number")
    qs, qst = _bhsd_fields(q.shape, q.stride(), layout)
    ks, kst = _bhsd_fields(k.shape, k.stride(), layout)
    vs, vst = _bhsd_fields(v.shape, v.stride(), layout)
    _check_shapes(qs, ks, vs)
    if (q.dtype == torch.float16 and route == "bf16") or q.numel() == 0 or k.numel() == 0:
        return None
    device = q.device.index if q.device.index is not None else torch.cuda.current_device()
    if _current_device is None or _is_capturing is None or device != _current_device():
        return None
    # O is made as torch.empty_like(q) makes it (q's memory order, dense), or dense in the caller's
    # layout where that would not leave the head dim contiguous; its strides are a function of
    # q's shape and strides, which the plan's key holds.
    o_shape = tuple(q.shape)
    o_like_q = torch.empty_like(q).stride()
    if o_like_q[3] == 1:
        o_strides = o_like_q
    else:
        o_strides = [1] * 4
        for i in (2, 1, 0):
            o_strides[i] = o_strides[i + 1] * o_shape[i + 1]
    os_, ost = _bhsd_fields(o_shape, o_strides, layout)
    dtype = _DTYPE_CODES[q.dtype]
    scale = float(softmax_scale) if softmax_scale is not None else 1.0 / math.sqrt(qs[3])
    plan = _Plan()
    template = bytes(L.pack_forward_args(
        ((0, dtype, qs, qst), (0, dtype, ks, kst), (0, dtype, vs, vst), (0, dtype, os_, ost)), 0, L.ROUTES[route],
        1 if causal else 0, scale, 0))
    plan.segments = L.forward_args_segments(template)
    plan.o_shape = o_shape
    plan.o_like_q = o_like_q[3] == 1
    plan.lse_shape = tuple(qs[:3]) if return_lse else None
    plan.device = device
    plan.engine = L.engine(device)
    plan.forward = L.forward_with_workspace_raw()
    plan.workspace_bytes = None  # (asked with real arguments: the engine checks their pointers)
    return plan


def _workspace_size(plan, args):
    size = ctypes.c_uint64()
    L.check(L.workspace_size_raw()(plan.engine.handle, args, ctypes.byref(size)))
    return max(int(size.value), 1)


# Eager calls outside a CUDA-graph capture reuse one workspace per (device, stream), grown to the
# largest size asked: calls on one stream are ordered, so none can overwrite another's workspace.
# A captured call takes a fresh one from the graph's pool, so that replays own theirs.
_stream_workspaces = {}


def _workspace_for(device, stream, nbytes):
    key = (device, stream)
    found = _stream_workspaces.get(key)
    if found is None or found.numel() < nbytes:
        found = _stream_workspaces[key] = torch.empty(nbytes, dtype=torch.uint8, device=f"cuda:{device}")
    return found


def release_workspaces():
    """Frees the workspaces eager fa4jit.attention calls keep per (device, stream) (PyTorch's
    allocator gets them back, stream-ordered); the next call makes a new one."""
    _stream_workspaces.clear()


def _attention_eager(q, k, v, causal, route, softmax_scale, return_lse, layout):
    """fa4jit.attention without the dispatcher: one output allocation per call (two with the LSE),
    the arguments copied from the plan with the data pointers filled in."""
    try:
        # (get_device is the CUDA index, -1 elsewhere: the checks refuse -1, so no plan holds it)
        key = (q.shape, q.stride(), k.shape, k.stride(), v.shape, v.stride(), q.dtype, k.dtype, v.dtype,
               q.get_device(), k.get_device(), v.get_device(), route, causal, softmax_scale, return_lse, layout)
    except (AttributeError, TypeError):
        return None  # (not tensors: the general path's checks name what is wrong)
    plan = _plans.get(key)
    if plan is None:
        plan = _make_plan(q, k, v, causal, route, softmax_scale, return_lse, layout)
        if plan is None:
            return None
        if len(_plans) >= _MAX_PLANS:  # (a server that sees ever new lengths: start over)
            _plans.clear()
        _plans[key] = plan
    if _current_device() != plan.device:
        return None
    o = torch.empty_like(q) if plan.o_like_q else q.new_empty(plan.o_shape)
    lse = q.new_empty(plan.lse_shape, dtype=torch.float32) if plan.lse_shape is not None else None
    stream = _raw_stream(plan.device)
    s0, s1, s2, s3, s4 = plan.segments
    args = L.FORWARD_ARGS_SPLIT.pack(q.data_ptr(), s0, k.data_ptr(), s1, v.data_ptr(), s2, o.data_ptr(), s3,
                                     lse.data_ptr() if lse is not None else 0, s4, stream)
    if plan.workspace_bytes is None:
        plan.workspace_bytes = _workspace_size(plan, args)
    if _is_capturing():
        workspace = torch.empty(plan.workspace_bytes, dtype=torch.uint8, device=q.device)
    else:
        workspace = _workspace_for(plan.device, stream, plan.workspace_bytes)
    rc = plan.forward(plan.engine.handle, args, workspace.data_ptr(), workspace.numel())
    if rc != L.OK:
        # The kernel for the shape may have changed (the tuning database did) and with it the
        # workspace size: ask again once, then report the engine's message.
        need = _workspace_size(plan, args)
        if need <= workspace.numel():
            L.check(rc)
        plan.workspace_bytes = need
        workspace = torch.empty(plan.workspace_bytes, dtype=torch.uint8, device=q.device)
        L.check(plan.forward(plan.engine.handle, args, workspace.data_ptr(), workspace.numel()))
        if not _is_capturing():
            _stream_workspaces[(plan.device, stream)] = workspace
    return (o, lse) if return_lse else o


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


def _saved_bytes(shape, fmt):
    """Bytes of one quantized operand of `shape` held in a tensor (fa4jit_quantized_bytes), or None
    for a symbolic shape."""
    if not all(isinstance(n, int) for n in shape):
        return None
    out = ctypes.c_uint64()
    L.check(L.library().fa4jit_quantized_bytes((ctypes.c_int64 * 4)(*shape), fmt, ctypes.byref(out)))
    return out.value


def _saved_tensor(shape, fmt, device):
    return torch.empty(_saved_bytes(tuple(shape), fmt), dtype=torch.uint8, device=device)


class _OperandIn:
    """A quantized operand whose parts live in the uint8 tensor `buf` (fa4jit_quantized_in): the
    engine writes and reads the tensor's memory; closing frees the handle only."""

    def __init__(self, eng, shape, fmt, buf):
        self.handle = ctypes.c_void_p()
        L.check(L.library().fa4jit_quantized_in(eng.handle, (ctypes.c_int64 * 4)(*shape), fmt, buf.data_ptr(),
                                                 buf.numel(), ctypes.byref(self.handle)))

    def __enter__(self):
        return self.handle

    def __exit__(self, *exc):
        L.library().fa4jit_quantized_destroy(self.handle)


def _quantize_in(eng, x, fmt, buf, stream):
    operand = _OperandIn(eng, x.shape, fmt, buf)
    with operand as handle:
        L.check(L.library().fa4jit_quantize_into(eng.handle, ctypes.byref(_tensor_desc(x)), fmt, stream, handle))


def _gradient_ready(t):
    """t as the backward reads it: BF16, head dim contiguous, 16-byte aligned rows."""
    t = t.to(torch.bfloat16)
    if t.stride(-1) != 1 or any(s % 8 for s in t.stride()[:3]) or t.data_ptr() % 16:
        t = t.contiguous()
    return t


def _saved_v_format(backward_pv):
    return L.FORMAT_FP8 if backward_pv == "e4m3" else L.FORMAT_MXFP4


@torch.library.custom_op("fa4jit::training_forward", mutates_args=())
def _training_forward(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: bool, softmax_scale: float,
                      backward_pv: str, backward_qk: str, deterministic: bool
                      ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """The training route's forward on BF16 [B, H, S, D] q, k, v: the nvfp8 forward on NVFP4 Q/K and
    FP8 V, quantized here. Returns O (BF16), the LSE (float32 [B, Hq, Sq]) and what the backward
    reads, each a uint8 tensor holding one quantized operand: NVFP4 Q, NVFP4 K, and V (FP8, or
    MXFP4 for backward_pv "mxfp4"). backward_qk and deterministic are the backward's options."""
    device = q.device.index if q.device.index is not None else torch.cuda.current_device()
    eng = L.engine(device)
    stream = _current_stream(device)
    q, k, v = _gradient_ready(q), _gradient_ready(k), _gradient_ready(v)
    saved_q = _saved_tensor(q.shape, L.FORMAT_NVFP4, q.device)
    saved_k = _saved_tensor(k.shape, L.FORMAT_NVFP4, q.device)
    forward_v = _saved_tensor(v.shape, L.FORMAT_FP8, q.device)
    _quantize_in(eng, q, L.FORMAT_NVFP4, saved_q, stream)
    _quantize_in(eng, k, L.FORMAT_NVFP4, saved_k, stream)
    _quantize_in(eng, v, L.FORMAT_FP8, forward_v, stream)
    o = torch.empty(q.shape, dtype=torch.bfloat16, device=q.device)
    lse = torch.empty(q.shape[:3], dtype=torch.float32, device=q.device)
    with _OperandIn(eng, q.shape, L.FORMAT_NVFP4, saved_q) as qh, \
            _OperandIn(eng, k.shape, L.FORMAT_NVFP4, saved_k) as kh, \
            _OperandIn(eng, v.shape, L.FORMAT_FP8, forward_v) as vh:
        args = L.QuantizedForwardArgs()
        args.q, args.k, args.v = qh, kh, vh
        args.o = _tensor_desc(o)
        args.lse = lse.data_ptr()
        args.route = L.ROUTES["nvfp8"]
        args.causal = 1 if causal else 0
        args.softmax_scale = softmax_scale
        args.stream = stream
        L.check(L.library().fa4jit_forward_quantized(eng.handle, ctypes.byref(args)))
    saved_v = forward_v
    if backward_pv != "e4m3":  # (the MXFP4 P/V variant reads V as directp's forward stores it)
        saved_v = _saved_tensor(v.shape, L.FORMAT_MXFP4, q.device)
        _quantize_in(eng, v, L.FORMAT_MXFP4, saved_v, stream)
    return o, lse, saved_q, saved_k, saved_v


@_training_forward.register_fake
def _(q, k, v, causal, softmax_scale, backward_pv, backward_qk, deterministic):
    def saved(shape, fmt):
        n = _saved_bytes(tuple(shape), fmt)
        if n is None:
            n = torch.library.get_ctx().new_dynamic_size()
        return torch.empty(n, dtype=torch.uint8, device=q.device)

    return (torch.empty(q.shape, dtype=torch.bfloat16, device=q.device),
            torch.empty(q.shape[:3], dtype=torch.float32, device=q.device),
            saved(q.shape, L.FORMAT_NVFP4), saved(k.shape, L.FORMAT_NVFP4), saved(v.shape, _saved_v_format(backward_pv)))


@torch.library.custom_op("fa4jit::training_backward", mutates_args=())
def _training_backward(d_o: torch.Tensor, q: Optional[torch.Tensor], k: Optional[torch.Tensor], o: torch.Tensor,
                       lse: torch.Tensor, saved_q: torch.Tensor, saved_k: torch.Tensor, saved_v: torch.Tensor,
                       kv_shape: list[int], causal: bool, softmax_scale: float, backward_pv: str, backward_qk: str,
                       deterministic: bool) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """dQ, dK, dV (BF16) of the training route (fa4jit_backward, docs/NUMERICS.md §3) from dO and
    what training_forward returned; q and k are the BF16 inputs (backward_qk "bf16"; else None)."""
    device = o.device.index if o.device.index is not None else torch.cuda.current_device()
    eng = L.engine(device)
    d_o = _gradient_ready(d_o)
    dq = torch.empty(o.shape, dtype=torch.bfloat16, device=o.device)
    dk = torch.empty(kv_shape, dtype=torch.bfloat16, device=o.device)
    dv = torch.empty(kv_shape, dtype=torch.bfloat16, device=o.device)
    with _OperandIn(eng, o.shape, L.FORMAT_NVFP4, saved_q) as qh, \
            _OperandIn(eng, kv_shape, L.FORMAT_NVFP4, saved_k) as kh, \
            _OperandIn(eng, kv_shape, _saved_v_format(backward_pv), saved_v) as vh:
        args = L.BackwardArgs()
        args.q, args.k, args.v = qh, kh, vh
        if backward_qk == "bf16":
            if q is None or k is None:
                raise ValueError("fa4jit::training_backward: backward_qk 'bf16' needs the BF16 q and k")
            q, k = _gradient_ready(q), _gradient_ready(k)  # (kept alive until the launch)
            args.q_bf16, args.k_bf16 = _tensor_desc(q), _tensor_desc(k)
        args.o, args.d_o, args.lse = _tensor_desc(o), _tensor_desc(d_o), lse.data_ptr()
        args.dq, args.dk, args.dv = _tensor_desc(dq), _tensor_desc(dk), _tensor_desc(dv)
        args.causal = 1 if causal else 0
        args.softmax_scale = softmax_scale
        args.pv, args.qk = L.PV_FORMATS[backward_pv], L.QK_OPERANDS[backward_qk]
        args.deterministic = 1 if deterministic else 0
        args.stream = _current_stream(device)
        L.check(L.library().fa4jit_backward(eng.handle, ctypes.byref(args)))
    return dq, dk, dv


@_training_backward.register_fake
def _(d_o, q, k, o, lse, saved_q, saved_k, saved_v, kv_shape, causal, softmax_scale, backward_pv, backward_qk,
      deterministic):
    return (torch.empty(o.shape, dtype=torch.bfloat16, device=o.device),
            torch.empty(kv_shape, dtype=torch.bfloat16, device=o.device),
            torch.empty(kv_shape, dtype=torch.bfloat16, device=o.device))


def _training_setup_context(ctx, inputs, output):
    q, k, _v, causal, softmax_scale, backward_pv, backward_qk, deterministic = inputs
    o, lse, saved_q, saved_k, saved_v = output
    keep_bf16 = backward_qk == "bf16"
    ctx.save_for_backward(q if keep_bf16 else None, k if keep_bf16 else None, o, lse, saved_q, saved_k, saved_v)
    ctx.kv_shape = list(k.shape)
    ctx.options = (causal, softmax_scale, backward_pv, backward_qk, deterministic)


def _training_grad(ctx, d_o, _d_lse, *_d_saved):
    # (the LSE is returned for inspection: it carries no gradient, as documented in attention())
    q, k, o, lse, saved_q, saved_k, saved_v = ctx.saved_tensors
    dq, dk, dv = torch.ops.fa4jit.training_backward(d_o, q, k, o, lse, saved_q, saved_k, saved_v, ctx.kv_shape,
                                                    *ctx.options)
    return dq, dk, dv, None, None, None, None, None


_training_forward.register_autograd(_training_grad, setup_context=_training_setup_context)


def _attention_training(q, k, v, causal, route, softmax_scale, return_lse, layout, backward):
    """fa4jit.attention with gradients: route nvfp8 forward and the quantized backward."""
    if route != "nvfp8":
        raise ValueError(f"fa4jit.attention: gradients are computed on the training route (route='nvfp8'); "
                         f"route {route!r} has no backward")
    pv, qk, deterministic = backward
    if pv not in L.PV_FORMATS:
        raise ValueError(f"fa4jit.attention: unknown backward_pv {pv!r} (e4m3 or mxfp4)")
    if qk not in L.QK_OPERANDS:
        raise ValueError(f"fa4jit.attention: unknown backward_qk {qk!r} (bf16 or saved-nvfp4)")
    _check(q, k, v)
    if layout == "bshd":
        q, k, v = q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2)
    _check_shapes(q.shape, k.shape, v.shape)
    if q.shape[-1] not in (64, 128):
        raise ValueError(f"fa4jit.attention: the backward takes head dim 64 or 128, not {q.shape[-1]}")
    dtype = q.dtype
    scale = float(softmax_scale) if softmax_scale is not None else 1.0 / math.sqrt(q.shape[-1])
    q, k, v = q.to(torch.bfloat16), k.to(torch.bfloat16), v.to(torch.bfloat16)
    o, lse, *_saved = torch.ops.fa4jit.training_forward(q, k, v, bool(causal), scale, pv, qk, bool(deterministic))
    if o.dtype != dtype:
        o = o.to(dtype)
    if layout == "bshd":
        o = o.transpose(1, 2)
    return (o, lse) if return_lse else o


def attention(q, k, v=None, *, causal=False, route="directp", softmax_scale=None, return_lse=False,
              layout="bhsd", backward_pv="e4m3", backward_qk="bf16", deterministic=False):
    """Scaled dot-product attention with fa4jit on the current CUDA stream.

    q [B, Hq, Sq, D], k and v [B, Hkv, Sk, D] (layout "bhsd", as SDPA), or [B, S, H, D] (layout
    "bshd", as flash_attn_func): strided views are used as they are, never copied. BF16 or FP16,
    read and written as they are (route "bf16" converts FP16 to BF16 and back: a copy each way). Hq a multiple of Hkv (GQA/MQA); causal
    masks are bottom-right aligned. Returns O in q's layout and dtype, and with return_lse the
    float32 LSE [B, Hq, Sq] (natural log). route: "directp", "nvfp8", "bf16", or "fp8" / "fp8-directp"
    (E4M3 Q/K with nvfp8's / directp's P and V: accurate at large logits; sm_90a), or "auto" (the
    fastest of them whose CPU model meets fa4jit.set_auto_route_budget's budget for the shape).

    With k a QuantizedKV (fa4jit.quantize_kv) and no v, only q is quantized per call (eagerly:
    that form is not a custom op, and it allocates Q's quantized operand each call).

    Gradients (autograd, when q, k or v requires grad): route "nvfp8" only, head dim 64 or 128.
    The forward keeps NVFP4 Q/K and FP8 V; the backward rebuilds P from them and returns BF16
    dQ, dK, dV (docs/NUMERICS.md §3). backward_pv "mxfp4" feeds P and V as MXFP4 instead (the
    variant the paper found unstable in training), backward_qk "saved-nvfp4" has the dS products
    read the saved NVFP4 Q/K instead of the BF16 inputs, and deterministic=True gives the same
    dQ bits every run. The training call is the custom op fa4jit::training_forward with its
    registered backward, so torch.compile traces it; the LSE it returns carries no gradient.
    """
    if isinstance(k, QuantizedKV):
        if v is not None:
            raise ValueError("fa4jit.attention: with quantized K/V, pass no v")
        return _attention_quantized(q, k, causal, softmax_scale, return_lse, layout)
    if v is None:
        raise ValueError("fa4jit.attention: v is missing")
    if route not in L.ROUTES:
        raise ValueError(f"fa4jit.attention: unknown route {route!r} ({', '.join(L.ROUTES)})")
    if layout not in ("bhsd", "bshd"):
        raise ValueError(f"fa4jit.attention: unknown layout {layout!r} (bhsd or bshd)")
    if torch.is_grad_enabled() and any(isinstance(t, torch.Tensor) and t.requires_grad for t in (q, k, v)):
        return _attention_training(q, k, v, causal, route, softmax_scale, return_lse, layout,
                                   (backward_pv, backward_qk, deterministic))
    compiling = torch.compiler.is_compiling()
    if not compiling:  # eager: no dispatcher, and the checks and arguments made once per shape
        out = _attention_eager(q, k, v, causal, route, softmax_scale, return_lse, layout)
        if out is not None:
            return out
    _check(q, k, v)
    if layout == "bshd":
        q, k, v = q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2)
    _check_shapes(q.shape, k.shape, v.shape)
    dtype = q.dtype
    if dtype == torch.float16 and route == "bf16":  # (its kernels read BF16; nvfp8, directp read FP16)
        q, k, v = q.to(torch.bfloat16), k.to(torch.bfloat16), v.to(torch.bfloat16)
    scale = float(softmax_scale) if softmax_scale is not None else 1.0 / math.sqrt(q.shape[-1])
    if compiling:
        o, lse = torch.ops.fa4jit.attention_bhsd(q, k, v, bool(causal), route, scale)
    else:  # (eager calls the fast path could not take: FP16 on the bf16 route, empty tensors)
        o, lse = _attention_bhsd_impl(q, k, v, bool(causal), route, scale)
    if o.dtype != dtype:
        o = o.to(dtype)
    if layout == "bshd":
        o = o.transpose(1, 2)
    return (o, lse) if return_lse else o
