#!/usr/bin/env python3
"""The Python package without a GPU: it imports (with or without torch), its ctypes structs match
the C layout, the library's errors become Fa4jitError with the engine's message, `python -m
fa4jit` runs the CLI, and bad tensors are refused before any launch. With torch present, the fake
implementation lets torch.compile(fullgraph=True) trace through fa4jit.attention.

Usage: test_package.py C_ABI_PROGRAM (with FA4JIT_LIBRARY, FA4JIT_CLI and PYTHONPATH set)"""
import ctypes
import json
import os
import subprocess
import sys
import unittest

C_ABI = sys.argv.pop(1) if len(sys.argv) > 1 else None

import fa4jit  # noqa: E402
from fa4jit import _library as L  # noqa: E402


class Package(unittest.TestCase):
    def test_imports_and_reports_the_library_version(self):
        self.assertEqual(fa4jit.version(), fa4jit.__version__)

    def test_structs_match_the_c_layout(self):
        layout = json.loads(subprocess.run([C_ABI], check=True, capture_output=True, text=True).stdout)
        for cname, cls in (("fa4jit_tensor", L.Tensor), ("fa4jit_forward_args", L.ForwardArgs),
                           ("fa4jit_quantized_forward_args", L.QuantizedForwardArgs),
                           ("fa4jit_backward_args", L.BackwardArgs),
                           ("fa4jit_attention_state", L.AttentionState), ("fa4jit_paged_cache", L.PagedCache),
                           ("fa4jit_append_kv_args", L.AppendKvArgs), ("fa4jit_decode_args", L.DecodeArgs)):
            self.assertEqual(ctypes.sizeof(cls), layout[cname], cname)
            for field, _ in cls._fields_:
                self.assertEqual(getattr(cls, field).offset, layout[f"{cname}.{field}"], f"{cname}.{field}")

    def test_route_names_carry_the_c_values(self):
        layout = json.loads(subprocess.run([C_ABI], check=True, capture_output=True, text=True).stdout)
        routes = {k.split(".", 1)[1]: v for k, v in layout.items() if k.startswith("route.")}
        self.assertEqual(L.ROUTES, routes)
        # The auto budget's C calls refuse a missing engine with the engine's message.
        self.assertEqual(L.library().fa4jit_set_auto_route_budget(None, 0.98, 1.0), 1)
        self.assertIn("engine", L.library().fa4jit_last_error().decode())
        route, cos = ctypes.c_int32(), ctypes.c_double()
        self.assertEqual(L.library().fa4jit_auto_route(None, 128, 0, 4096, ctypes.byref(route), ctypes.byref(cos)), 1)

    def test_packed_forward_args_equal_the_ctypes_struct(self):
        t = [(0x7f0000001000 + 64 * i, L.DTYPE_BF16, (2, 8 - i, 300 + i, 128), (8 * 300 * 128, 300 * 128, 128, 1))
             for i in range(4)]
        packed = L.pack_forward_args(t, 0x7f00000fff00, L.ROUTES["directp"], 1, 0.08838834764831845, 0x1234)
        built = L.ForwardArgs(*[L.Tensor(d, dt, L.Shape4(*sh), L.Shape4(*st)) for d, dt, sh, st in t],
                              0x7f00000fff00, L.ROUTES["directp"], 1, 0.08838834764831845, 0x1234)
        self.assertEqual(bytes(packed), bytes(built))
        self.assertEqual(L.FORWARD_ARGS_PACKING.size, ctypes.sizeof(L.ForwardArgs))
        self.assertEqual(packed.k.shape[1], 7)
        self.assertEqual(packed.stream, 0x1234)

    def test_split_forward_args_rebuild_the_packed_struct(self):
        t = [(0x7f0000001000 + 64 * i, L.DTYPE_F16, (3, 8 - i, 300 + i, 64), (8 * 300 * 64, 300 * 64, 64, 1))
             for i in range(4)]
        full = bytes(L.pack_forward_args(t, 0x7f00000fff00, L.ROUTES["nvfp8"], 1, 0.3, 0x5678))
        blank = bytes(L.pack_forward_args([(0, *x[1:]) for x in t], 0, L.ROUTES["nvfp8"], 1, 0.3, 0))
        s = L.forward_args_segments(blank)
        rebuilt = L.FORWARD_ARGS_SPLIT.pack(t[0][0], s[0], t[1][0], s[1], t[2][0], s[2], t[3][0], s[3],
                                            0x7f00000fff00, s[4], 0x5678)
        self.assertEqual(rebuilt, full)
        self.assertEqual(L.FORWARD_ARGS_SPLIT.size, ctypes.sizeof(L.ForwardArgs))
        self.assertEqual(L.ForwardArgs.lse.offset, 320)
        self.assertEqual(L.ForwardArgs.stream.offset, 344)

    def test_raw_bindings_pass_packed_arguments_to_the_library(self):
        t = [(0, L.DTYPE_BF16, (1, 1, 8, 64), (512, 512, 64, 1))] * 4
        packed = bytes(L.pack_forward_args(t, 0, L.ROUTES["directp"], 0, 0.125, 0))
        size = ctypes.c_uint64(7)
        self.assertEqual(L.workspace_size_raw()(None, packed, ctypes.byref(size)), 1)
        self.assertIn("engine", L.library().fa4jit_last_error().decode())
        self.assertEqual(L.forward_with_workspace_raw()(None, packed, 0, 0), 1)
        self.assertEqual(L.workspace_size_raw()(None, None, ctypes.byref(size)), 1)

    def test_engine_errors_carry_the_engine_message(self):
        if os.path.exists("/dev/nvidia0"):
            self.skipTest("a GPU is present: the engine opens")
        with self.assertRaises(fa4jit.Fa4jitError) as caught:
            L.Engine(0)
        self.assertIn("CUDA", str(caught.exception))

    def test_quantized_operand_bytes_follow_the_shape_and_refuse_bad_input(self):
        def size(shape, fmt):
            out = ctypes.c_uint64()
            rc = L.library().fa4jit_quantized_bytes((ctypes.c_int64 * 4)(*shape), fmt, ctypes.byref(out))
            return rc, out.value
        rc, nvfp4 = size((2, 4, 384, 128), L.FORMAT_NVFP4)
        self.assertEqual(rc, 0)
        # (payload alone: 4 bits per element)
        self.assertGreaterEqual(nvfp4, 2 * 4 * 384 * 128 // 2)
        self.assertGreater(size((2, 4, 768, 128), L.FORMAT_NVFP4)[1], nvfp4)
        self.assertGreater(size((2, 4, 384, 128), L.FORMAT_FP8)[1], nvfp4)
        self.assertEqual(size((2, 0, 384, 128), L.FORMAT_NVFP4)[0], 1)
        self.assertIn("shape[1]", L.library().fa4jit_last_error().decode())
        self.assertEqual(size((2, 4, 384, 128), 9)[0], 1)
        self.assertIn("unknown format 9", L.library().fa4jit_last_error().decode())
        handle = ctypes.c_void_p()
        self.assertEqual(L.library().fa4jit_quantized_in(None, (ctypes.c_int64 * 4)(1, 1, 8, 64), L.FORMAT_NVFP4,
                                                         0, 0, ctypes.byref(handle)), 1)
        self.assertIn("must not be NULL", L.library().fa4jit_last_error().decode())

    def test_paged_cache_bytes_and_layout_refuse_bad_dims(self):
        out = ctypes.c_uint64()
        self.assertEqual(L.library().fa4jit_paged_cache_bytes(100, 8, 16, 128, 0, ctypes.byref(out)), 0)
        # K 76 and V 132 bytes per token row (payloads, block scales, two row scales), arrays 256-aligned
        rows = 100 * 8 * 16
        self.assertGreaterEqual(out.value, rows * (64 + 8 + 4 + 128 + 4))
        self.assertLess(out.value, rows * (64 + 8 + 4 + 128 + 4) + 5 * 256)
        cache = L.PagedCache()
        self.assertEqual(L.library().fa4jit_paged_cache_at(1 << 20, 100, 8, 16, 128, 0, ctypes.byref(cache)), 0)
        self.assertEqual(cache.k_codes, 1 << 20)
        self.assertEqual(cache.k_block_scales - cache.k_codes, rows * 64)
        self.assertEqual(cache.page_size, 16)
        self.assertEqual(cache.v_block_scales, 0)
        # MXFP4 V: 64 payload bytes and 4 scales per row instead of 128 and a float
        mx = ctypes.c_uint64()
        self.assertEqual(L.library().fa4jit_paged_cache_bytes(100, 8, 16, 128, 1, ctypes.byref(mx)), 0)
        self.assertEqual(out.value - mx.value, rows * (128 + 4 - 64 - 4))
        self.assertEqual(L.library().fa4jit_paged_cache_at(1 << 20, 100, 8, 16, 128, 1, ctypes.byref(cache)), 0)
        self.assertEqual((cache.v_row_scales, cache.value_format), (0, 1))
        self.assertGreater(cache.v_block_scales, cache.v_codes)
        self.assertEqual(L.library().fa4jit_paged_cache_bytes(100, 8, 24, 128, 0, ctypes.byref(out)), 1)
        self.assertIn("page_size 24", L.library().fa4jit_last_error().decode())
        self.assertEqual(L.library().fa4jit_paged_cache_bytes(100, 8, 16, 256, 0, ctypes.byref(out)), 1)
        self.assertIn("head_dim 256", L.library().fa4jit_last_error().decode())
        self.assertEqual(L.library().fa4jit_paged_cache_bytes(100, 8, 16, 128, 5, ctypes.byref(out)), 1)
        self.assertIn("value_format 5", L.library().fa4jit_last_error().decode())
        self.assertEqual(L.library().fa4jit_paged_cache_at(100, 100, 8, 16, 128, 0, ctypes.byref(cache)), 1)
        self.assertIn("256-byte aligned", L.library().fa4jit_last_error().decode())

    def test_python_m_fa4jit_runs_the_cli(self):
        run = subprocess.run([sys.executable, "-m", "fa4jit", "tmem", "--help"], capture_output=True, text=True)
        self.assertEqual(run.returncode, 0, run.stderr)
        self.assertIn("usage: fa4jit tmem", run.stdout + run.stderr)


try:
    import torch
except ImportError:
    torch = None


@unittest.skipIf(torch is None, "torch is not installed")
class Torch(unittest.TestCase):
    def test_cpu_tensors_and_bad_dtypes_are_refused_before_any_launch(self):
        q = torch.zeros(1, 2, 8, 64, dtype=torch.bfloat16)
        with self.assertRaisesRegex(ValueError, "CUDA tensors only"):
            fa4jit.attention(q, q, q)
        with self.assertRaisesRegex(TypeError, "bfloat16 or float16"):
            fa4jit.attention(q.float(), q.float(), q.float())
        with self.assertRaisesRegex(ValueError, "unknown route"):
            fa4jit.attention(q, q, q, route="fp2")

    def test_paged_cache_refuses_cpu_and_bad_rows(self):
        with self.assertRaisesRegex(ValueError, "not a CUDA device"):
            fa4jit.PagedKVCache(4, 2, 64, page_size=16, device="cpu")
        with self.assertRaisesRegex(ValueError, "not fp8 or mxfp4"):
            fa4jit.PagedKVCache(4, 2, 64, value_format="nvfp4")

    def test_the_paged_ops_fake_shapes(self):
        from torch._subclasses.fake_tensor import FakeTensorMode
        with FakeTensorMode():
            storage = torch.empty(1 << 16, dtype=torch.uint8, device="meta")
            q = torch.empty(3, 32, 2, 128, dtype=torch.bfloat16, device="meta")
            table = torch.empty(3, 10, dtype=torch.int32, device="meta")
            lens = torch.empty(3, dtype=torch.int32, device="meta")
            o, lse = torch.ops.fa4jit.paged_decode(storage, q, table, lens, 30, 8, 16, 1, 0.088, 0, 0)
        self.assertEqual(tuple(o.shape), (3, 32, 2, 128))
        self.assertEqual(o.dtype, torch.bfloat16)
        self.assertEqual(tuple(lse.shape), (3, 32, 2))

    def test_the_fake_implementation_gives_shapes_and_dtypes(self):
        from torch._subclasses.fake_tensor import FakeTensorMode
        with FakeTensorMode():
            q = torch.empty(2, 8, 100, 128, dtype=torch.bfloat16, device="meta")
            k = torch.empty(2, 2, 300, 128, dtype=torch.bfloat16, device="meta")
            o, lse = torch.ops.fa4jit.attention_bhsd(q, k, k, True, "directp", 0.125)
        self.assertEqual(tuple(o.shape), (2, 8, 100, 128))
        self.assertEqual(o.dtype, torch.bfloat16)
        self.assertEqual(tuple(lse.shape), (2, 8, 100))
        self.assertEqual(lse.dtype, torch.float32)

    def test_torch_compile_traces_the_op_in_one_graph(self):
        graphs = []

        def backend(gm, example_inputs):
            graphs.append(gm)
            return gm.forward

        def f(q, k, v):
            o, lse = torch.ops.fa4jit.attention_bhsd(q, k, v, False, "nvfp8", 0.125)
            return o.float().sum() + lse.sum()

        compiled = torch.compile(f, backend=backend, fullgraph=True)
        q = torch.empty(1, 2, 16, 64, dtype=torch.bfloat16, device="meta")
        try:
            compiled(q, q, q)
        except Exception:  # (running the graph on meta tensors may fail; tracing is what is tested)
            pass
        self.assertEqual(len(graphs), 1)
        self.assertIn("fa4jit.attention_bhsd", str(graphs[0].graph))

    def test_the_training_ops_fake_shapes(self):
        from torch._subclasses.fake_tensor import FakeTensorMode
        with FakeTensorMode():
            q = torch.empty(2, 8, 100, 128, dtype=torch.bfloat16, device="meta")
            k = torch.empty(2, 2, 300, 128, dtype=torch.bfloat16, device="meta")
            o, lse, sq, sk, sv = torch.ops.fa4jit.training_forward(q, k, k, True, 0.125, "e4m3", "bf16", False)
            dq, dk, dv = torch.ops.fa4jit.training_backward(o, q, k, o, lse, sq, sk, sv, [2, 2, 300, 128], True,
                                                            0.125, "e4m3", "bf16", False)
            mx = torch.ops.fa4jit.training_forward(q, k, k, True, 0.125, "mxfp4", "bf16", False)[4]
        self.assertEqual((o.dtype, tuple(o.shape), tuple(lse.shape)), (torch.bfloat16, (2, 8, 100, 128), (2, 8, 100)))
        for saved, shape, fmt in ((sq, q.shape, L.FORMAT_NVFP4), (sk, k.shape, L.FORMAT_NVFP4),
                                  (sv, k.shape, L.FORMAT_FP8), (mx, k.shape, L.FORMAT_MXFP4)):
            out = ctypes.c_uint64()
            L.check(L.library().fa4jit_quantized_bytes((ctypes.c_int64 * 4)(*shape), fmt, ctypes.byref(out)))
            self.assertEqual((saved.dtype, saved.numel()), (torch.uint8, out.value))
        self.assertEqual([tuple(t.shape) for t in (dq, dk, dv)], [(2, 8, 100, 128), (2, 2, 300, 128), (2, 2, 300, 128)])

    def test_torch_compile_traces_the_training_step_forward_and_backward(self):
        from torch._functorch.aot_autograd import aot_module_simplified
        graphs = []

        def compiler(gm, example_inputs):
            graphs.append(str(gm.graph))
            return gm.forward

        def backend(gm, example_inputs):
            return aot_module_simplified(gm, example_inputs, fw_compiler=compiler, bw_compiler=compiler)

        def step(q, k, v):  # (what fa4jit.attention calls with gradients, on meta tensors)
            o = torch.ops.fa4jit.training_forward(q, k, v, True, 0.125, "e4m3", "bf16", False)[0]
            return o.float().square().sum()

        q = torch.empty(1, 4, 64, 64, dtype=torch.bfloat16, device="meta", requires_grad=True)
        k = torch.empty(1, 2, 64, 64, dtype=torch.bfloat16, device="meta", requires_grad=True)
        compiled = torch.compile(step, backend=backend, fullgraph=True)
        try:
            compiled(q, k, k).backward()
        except Exception:  # (running the graphs on meta tensors may fail; tracing is what is tested)
            pass
        joined = "\n".join(graphs)
        self.assertIn("fa4jit.training_forward", joined)
        self.assertIn("fa4jit.training_backward", joined)


if __name__ == "__main__":
    unittest.main()
