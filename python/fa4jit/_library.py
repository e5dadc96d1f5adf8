"""ctypes bindings of libfa4jit.so (runtime/include/fa4jit/runtime/fa4jit_c.h).

The structs mirror the header field for field; tests/python checks their sizes and offsets
against the C compiler's. Loading the library needs no GPU: it opens libcuda only when an engine
is created.
"""
import ctypes
import os
import struct
import threading

OK = 0

# fa4jit_route: fp8 and fp8-directp store Q and K as E4M3 (large logits; sm_90a); auto: the fastest
# preset whose predicted accuracy meets the budget (set_auto_route_budget).
ROUTES = {"bf16": 0, "nvfp8": 1, "directp": 2, "fp8": 3, "fp8-directp": 4, "auto": 5}
ROUTE_NAMES = {v: k for k, v in ROUTES.items()}
DTYPE_BF16, DTYPE_F32, DTYPE_F16 = 0, 1, 2
FORMAT_NVFP4, FORMAT_MXFP4, FORMAT_FP8 = 0, 1, 2


Shape4 = ctypes.c_int64 * 4


class Tensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_uint64), ("dtype", ctypes.c_int32), ("shape", Shape4), ("stride", Shape4)]


class AttentionState(ctypes.Structure):
    _fields_ = [("o", Tensor), ("lse", ctypes.c_uint64)]


MAX_MERGE_PARTS = 16  # kMaxMergeParts of engine.h


class PagedCache(ctypes.Structure):
    _fields_ = [("k_codes", ctypes.c_uint64), ("k_block_scales", ctypes.c_uint64), ("k_row_scales", ctypes.c_uint64),
                ("v_codes", ctypes.c_uint64), ("v_row_scales", ctypes.c_uint64), ("v_block_scales", ctypes.c_uint64),
                ("pages", ctypes.c_int32), ("kv_heads", ctypes.c_int32), ("page_size", ctypes.c_int32),
                ("head_dim", ctypes.c_int32), ("value_format", ctypes.c_int32)]


KV_VALUE_FORMATS = {"fp8": 0, "mxfp4": 1}


class AppendKvArgs(ctypes.Structure):
    _fields_ = [("cache", PagedCache), ("k", Tensor), ("v", Tensor), ("slot_mapping", ctypes.c_uint64),
                ("stream", ctypes.c_void_p)]


class DecodeArgs(ctypes.Structure):
    _fields_ = [("cache", PagedCache), ("q", Tensor), ("o", Tensor), ("lse", ctypes.c_uint64),
                ("block_table", ctypes.c_uint64), ("block_table_stride", ctypes.c_int32),
                ("seq_lens", ctypes.c_uint64), ("max_seq_len", ctypes.c_int32), ("softmax_scale", ctypes.c_float),
                ("splits", ctypes.c_int32), ("stream", ctypes.c_void_p)]


class ForwardArgs(ctypes.Structure):
    _fields_ = [("q", Tensor), ("k", Tensor), ("v", Tensor), ("o", Tensor), ("lse", ctypes.c_uint64),
                ("route", ctypes.c_int32), ("causal", ctypes.c_int32), ("softmax_scale", ctypes.c_float),
                ("stream", ctypes.c_void_p)]


# fa4jit_forward_args packed in one call (the per-call path of fa4jit.attention, where building the
# ctypes fields one by one costs more than the C call): four fa4jit_tensor (data, dtype, padding,
# shape[4], stride[4]), then lse, route, causal, softmax_scale, padding and stream, little-endian
# as the ctypes layout above (tests/python checks that both give the same bytes).
_TENSOR_FORMAT = "Qi4x4q4q"
FORWARD_ARGS_PACKING = struct.Struct("<" + _TENSOR_FORMAT * 4 + "Qiif4xQ")


def pack_forward_args(tensors, lse, route, causal, softmax_scale, stream):
    """ForwardArgs from four (data, dtype, shape, stride) tuples and the scalar fields."""
    values = []
    for data, dtype, shape, stride in tensors:
        values += (data, dtype, *shape, *stride)
    return ForwardArgs.from_buffer_copy(FORWARD_ARGS_PACKING.pack(*values, lse, route, causal, softmax_scale,
                                                                  stream or 0))


_raw = {}


def _raw_function(name, *argtypes):
    """`name` of the library declared with packed-bytes arguments (c_char_p for the args struct):
    a bytes object is passed by pointer with no ctypes struct built per call."""
    fn = _raw.get(name)
    if fn is None:
        proto = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, *argtypes)
        fn = _raw[name] = proto(ctypes.cast(getattr(library(), name), ctypes.c_void_p).value)
    return fn


def forward_with_workspace_raw():
    """fa4jit_forward_with_workspace(engine, packed args bytes, workspace, workspace_bytes)."""
    return _raw_function("fa4jit_forward_with_workspace", ctypes.c_char_p, ctypes.c_uint64, ctypes.c_uint64)


def workspace_size_raw():
    """fa4jit_workspace_size(engine, packed args bytes, uint64 out)."""
    return _raw_function("fa4jit_workspace_size", ctypes.c_char_p, ctypes.POINTER(ctypes.c_uint64))


# fa4jit_forward_args as the five pointers a call fills in (q, k, v, o data; lse) and the stream,
# with the bytes between them, which stay the same for a shape (dtype and shape of each tensor;
# route, causal, scale): FORWARD_ARGS_SPLIT.pack(q, seg0, k, seg1, v, seg2, o, seg3, lse, seg4,
# stream) gives the packed struct.
_POINTER_OFFSETS = tuple(getattr(ForwardArgs, n).offset for n in ("q", "k", "v", "o", "lse", "stream"))
_SEGMENT_BOUNDS = tuple((a + 8, b) for a, b in zip(_POINTER_OFFSETS, _POINTER_OFFSETS[1:]))
FORWARD_ARGS_SPLIT = struct.Struct("<" + "".join(f"Q{b - a}s" for a, b in _SEGMENT_BOUNDS) + "Q")


def forward_args_segments(packed):
    """The five fixed segments of packed fa4jit_forward_args bytes (see FORWARD_ARGS_SPLIT)."""
    return tuple(bytes(packed[a:b]) for a, b in _SEGMENT_BOUNDS)


class QuantizedForwardArgs(ctypes.Structure):
    _fields_ = [("q", ctypes.c_void_p), ("k", ctypes.c_void_p), ("v", ctypes.c_void_p), ("o", Tensor),
                ("lse", ctypes.c_uint64), ("route", ctypes.c_int32), ("causal", ctypes.c_int32),
                ("softmax_scale", ctypes.c_float), ("stream", ctypes.c_void_p)]


PV_FORMATS = {"e4m3": 0, "mxfp4": 1}
QK_OPERANDS = {"bf16": 0, "saved-nvfp4": 1}


class BackwardArgs(ctypes.Structure):
    _fields_ = [("q", ctypes.c_void_p), ("k", ctypes.c_void_p), ("v", ctypes.c_void_p), ("q_bf16", Tensor),
                ("k_bf16", Tensor), ("o", Tensor), ("d_o", Tensor), ("lse", ctypes.c_uint64), ("dq", Tensor),
                ("dk", Tensor), ("dv", Tensor), ("causal", ctypes.c_int32), ("softmax_scale", ctypes.c_float),
                ("pv", ctypes.c_int32), ("qk", ctypes.c_int32), ("deterministic", ctypes.c_int32),
                ("stream", ctypes.c_void_p)]


def _candidates():
    """Where libfa4jit.so is looked for: FA4JIT_LIBRARY, then beside this package (a wheel)."""
    explicit = os.environ.get("FA4JIT_LIBRARY")
    if explicit:
        return [explicit]
    here = os.path.dirname(os.path.abspath(__file__))
    return [os.path.join(here, "lib", "libfa4jit.so"), os.path.join(here, "libfa4jit.so")]


_lock = threading.Lock()
_lib = None


def library():
    """The loaded libfa4jit.so with its function signatures declared (loaded once)."""
    global _lib
    with _lock:
        if _lib is not None:
            return _lib
        tried = []
        for path in _candidates():
            if os.path.exists(path):
                lib = ctypes.CDLL(path, mode=ctypes.RTLD_LOCAL)
                break
            tried.append(path)
        else:
            raise ImportError("fa4jit: libfa4jit.so not found (tried " + ", ".join(tried) +
                              "); set FA4JIT_LIBRARY to its path")
        p, u64, i32 = ctypes.c_void_p, ctypes.c_uint64, ctypes.c_int32
        sig = {
            "fa4jit_engine_create": ([ctypes.c_int, ctypes.POINTER(p)], ctypes.c_int),
            "fa4jit_engine_destroy": ([p], None),
            "fa4jit_forward": ([p, ctypes.POINTER(ForwardArgs)], ctypes.c_int),
            "fa4jit_workspace_size": ([p, ctypes.POINTER(ForwardArgs), ctypes.POINTER(u64)], ctypes.c_int),
            "fa4jit_forward_with_workspace": ([p, ctypes.POINTER(ForwardArgs), u64, u64], ctypes.c_int),
            "fa4jit_quantize": ([p, ctypes.POINTER(Tensor), i32, p, ctypes.POINTER(p)], ctypes.c_int),
            "fa4jit_quantized_destroy": ([p], None),
            "fa4jit_quantize_into": ([p, ctypes.POINTER(Tensor), i32, p, p], ctypes.c_int),
            "fa4jit_forward_quantized": ([p, ctypes.POINTER(QuantizedForwardArgs)], ctypes.c_int),
            "fa4jit_quantized_bytes": ([ctypes.POINTER(ctypes.c_int64), i32, ctypes.POINTER(u64)], ctypes.c_int),
            "fa4jit_quantized_in": ([p, ctypes.POINTER(ctypes.c_int64), i32, u64, u64, ctypes.POINTER(p)],
                                    ctypes.c_int),
            "fa4jit_backward": ([p, ctypes.POINTER(BackwardArgs)], ctypes.c_int),
            "fa4jit_engine_workspace_bytes": ([p, ctypes.POINTER(u64)], ctypes.c_int),
            "fa4jit_merge_states": ([p, ctypes.POINTER(AttentionState), i32, ctypes.POINTER(Tensor), u64, p],
                                    ctypes.c_int),
            "fa4jit_paged_cache_bytes": ([i32, i32, i32, i32, i32, ctypes.POINTER(u64)], ctypes.c_int),
            "fa4jit_paged_cache_at": ([u64, i32, i32, i32, i32, i32, ctypes.POINTER(PagedCache)], ctypes.c_int),
            "fa4jit_append_kv": ([p, ctypes.POINTER(AppendKvArgs)], ctypes.c_int),
            "fa4jit_decode_workspace_size": ([p, ctypes.POINTER(DecodeArgs), ctypes.POINTER(u64)], ctypes.c_int),
            "fa4jit_decode_with_workspace": ([p, ctypes.POINTER(DecodeArgs), u64, u64], ctypes.c_int),
            "fa4jit_set_auto_route_budget": ([p, ctypes.c_double, ctypes.c_double], ctypes.c_int),
            "fa4jit_auto_route": ([p, i32, i32, ctypes.c_int64, ctypes.POINTER(i32), ctypes.POINTER(ctypes.c_double)],
                                  ctypes.c_int),
            "fa4jit_last_error": ([], ctypes.c_char_p),
            "fa4jit_version": ([], ctypes.c_char_p),
        }
        for name, (args, res) in sig.items():
            fn = getattr(lib, name)
            fn.argtypes, fn.restype = args, res
        _lib = lib
        return lib


class Fa4jitError(RuntimeError):
    """An error the engine reported, with its message."""


def check(rc):
    if rc != OK:
        raise Fa4jitError(library().fa4jit_last_error().decode("utf-8", "replace"))


class Engine:
    """One fa4jit engine on one CUDA device (fa4jit_engine_create)."""

    def __init__(self, device):
        handle = ctypes.c_void_p()
        check(library().fa4jit_engine_create(int(device), ctypes.byref(handle)))
        self.handle = handle
        self.device = device
        check(library().fa4jit_set_auto_route_budget(handle, *_auto_route_budget))

    def __del__(self):
        if getattr(self, "handle", None) and _lib is not None:
            _lib.fa4jit_engine_destroy(self.handle)
            self.handle = None


_engines = {}
# route="auto"'s budget on every engine: (min_cosine, logit_std), fa4jit_set_auto_route_budget.
_auto_route_budget = (0.98, 1.0)


def set_auto_route_budget(min_cosine, logit_std):
    """The accuracy budget of route="auto" on every device's engine, now and later."""
    global _auto_route_budget
    if not (-1.0 < float(min_cosine) <= 1.0) or not (0.0 < float(logit_std) < float("inf")):
        raise ValueError(f"fa4jit.set_auto_route_budget: min_cosine {min_cosine} must be in (-1, 1] and "
                         f"logit_std {logit_std} positive and finite")
    with _lock:
        for e in _engines.values():
            check(library().fa4jit_set_auto_route_budget(e.handle, float(min_cosine), float(logit_std)))
        _auto_route_budget = (float(min_cosine), float(logit_std))


def auto_route(device, head_dim, causal, seqlen_k):
    """(route name, predicted cosine) that route="auto" runs for a shape on `device`."""
    route, cosine = ctypes.c_int32(), ctypes.c_double()
    check(library().fa4jit_auto_route(engine(device).handle, int(head_dim), int(bool(causal)), int(seqlen_k),
                                      ctypes.byref(route), ctypes.byref(cosine)))
    return ROUTE_NAMES[route.value], cosine.value


def engine(device):
    """The engine of `device`, created on first use; one per device for the whole process."""
    with _lock:
        found = _engines.get(device)
    if found is not None:
        return found
    made = Engine(device)
    with _lock:
        return _engines.setdefault(device, made)
