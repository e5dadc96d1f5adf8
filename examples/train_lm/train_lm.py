#!/usr/bin/env python3
"""Trains a small byte-level decoder-only language model with one attention route and logs its
loss curve, so that routes can be compared by their losses (docs/TRAINING.md).

Every route trains the same model from the same initial weights on the same batches in the same
order with the same optimizer; only the attention call differs:
  sdpa         torch.nn.functional.scaled_dot_product_attention, causal, BF16 (the baseline)
  nvfp8        fa4jit.attention(route="nvfp8"): NVFP4 Q/K and FP8 P/V forward, FP8 backward
  nvfp8-mxfp4  the same with backward_pv="mxfp4" (P and V fed to the backward as MXFP4)
fa4jit's other routes ("bf16", "directp") are forward-only: fa4jit.attention refuses them when
gradients are needed, so they cannot train and are not offered.

Writes OUT/RUN_NAME.jsonl: a header record, step records, validation records and a final record.
Usage: train_lm.py --attention sdpa --out results [--tokens N] [--checkpoint PATH --resume]
       train_lm.py --tiny --attention sdpa --device cpu --tokens 60000 --out /tmp/smoke
"""
import time

_PROCESS_START = time.monotonic()  # (--max-minutes counts from here, torch's import included)

import argparse  # noqa: E402
import hashlib  # noqa: E402
import json  # noqa: E402
import math  # noqa: E402
import os  # noqa: E402
import platform  # noqa: E402
import statistics  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import sysconfig  # noqa: E402
from pathlib import Path  # noqa: E402

ROUTES = ("sdpa", "nvfp8", "nvfp8-mxfp4")
FA4JIT_BACKWARD_PV = {"nvfp8": "e4m3", "nvfp8-mxfp4": "mxfp4"}
VOCAB = 256  # bytes: no tokenizer, and the same tokens on every machine

# ---------------------------------------------------------------------------------------------
# Corpus: the Python standard library's own sources, present wherever Python is.

# Test suites hold deliberately odd files (bad encodings, syntax errors, generated tables), and
# site-packages/dist-packages differ from one machine to the next; idlelib is ordinary code and
# stays in.
EXCLUDED_DIRS = frozenset({"test", "tests", "site-packages", "dist-packages", "__pycache__"})
# A file is held out for validation when SHA-256 of its relative path falls in this many of 100
# buckets: a whole file is on one side only, and the split does not depend on the file list.
VALIDATION_BUCKETS = 4
# Ends every file: source files contain no NUL byte, so the model sees where a file ends.
SEPARATOR = b"\x00"


def corpus_files(root):
    """Relative '/'-separated paths of the *.py files under root, sorted, excluded dirs left out."""
    root = Path(root)
    out = []
    for path in root.rglob("*.py"):
        rel = path.relative_to(root)
        if EXCLUDED_DIRS.isdisjoint(rel.parts[:-1]) and path.is_file():
            out.append(rel.as_posix())
    return sorted(out)


def is_validation_file(rel_path):
    digest = hashlib.sha256(rel_path.encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "big") % 100 < VALIDATION_BUCKETS


def split_files(rel_paths):
    """(train, validation) lists of paths: every path lands in exactly one."""
    train = [p for p in rel_paths if not is_validation_file(p)]
    val = [p for p in rel_paths if is_validation_file(p)]
    return train, val


def load_corpus(root=None):
    """The training and validation byte streams and a description of them (name, Python version,
    counts and SHA-256 digests) that proves which data a run used."""
    default = root is None
    root = Path(sysconfig.get_paths()["stdlib"] if default else root)
    files = corpus_files(root)
    train_files, val_files = split_files(files)
    if not train_files or not val_files:
        raise SystemExit(f"train_lm: {root} holds {len(files)} usable *.py files; the split needs files on both sides")
    whole = hashlib.sha256()
    streams = {}
    for side, names in (("train", train_files), ("val", val_files)):
        parts = []
        for rel in names:
            parts.append((root / rel).read_bytes())
            parts.append(SEPARATOR)
        streams[side] = b"".join(parts)
    # The digest of the whole corpus is over every file in sorted order, before the split.
    for rel in files:
        whole.update((root / rel).read_bytes())
        whole.update(SEPARATOR)
    info = {
        "name": "python-stdlib" if default else "directory",
        "root": str(root),
        "python_version": platform.python_version(),
        "excluded_dirs": sorted(EXCLUDED_DIRS),
        "validation_buckets_of_100": VALIDATION_BUCKETS,
        "files": len(files),
        "train_files": len(train_files),
        "val_files": len(val_files),
        "bytes": sum(len(s) for s in streams.values()),
        "train_bytes": len(streams["train"]),
        "val_bytes": len(streams["val"]),
        "sha256": whole.hexdigest(),
        "train_sha256": hashlib.sha256(streams["train"]).hexdigest(),
        "val_sha256": hashlib.sha256(streams["val"]).hexdigest(),
    }
    info["val_fraction"] = info["val_bytes"] / info["bytes"]
    return streams["train"], streams["val"], info


# ---------------------------------------------------------------------------------------------
# Divergence: judged on the logged training losses.

def detect_divergence(losses, window=50, factor=2.0, min_history=10):
    """The first logged loss that is not finite, or that exceeds `factor` times the median of the
    up to `window` logged losses before it (once `min_history` precede it); None if there is none.
    Returns (index, reason, median)."""
    for i, loss in enumerate(losses):
        if not math.isfinite(loss):
            return i, "non-finite loss", None
        history = losses[max(0, i - window):i]
        if len(history) >= min_history:
            median = statistics.median(history)
            if loss > factor * median:
                return i, f"loss above {factor:g}x the running median", median
    return None


# ---------------------------------------------------------------------------------------------
# Model

def build_parser():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--attention", choices=ROUTES, required=True)
    ap.add_argument("--out", required=True, help="results folder; the log is OUT/RUN_NAME.jsonl")
    ap.add_argument("--run-name", help="default: the attention route")
    # The model: 12 x 768 with 12 heads of 64 (GPT-2 small's blocks; with 256 byte embeddings
    # instead of 50257 tokens that is 85M parameters rather than 124M).
    ap.add_argument("--layers", type=int, default=12)
    ap.add_argument("--d-model", type=int, default=768)
    ap.add_argument("--heads", type=int, default=12)
    ap.add_argument("--context", type=int, default=1024)
    ap.add_argument("--tiny", action="store_true",
                    help="2 layers, d_model 128, 2 heads of 64, context 128, batch 8: the CPU smoke test")
    # Budget (docs/TRAINING.md, "Budget"): 40M tokens of batch 16 x 1024 is 2441 steps, about
    # three passes over the standard library's sources.
    ap.add_argument("--tokens", type=int, default=40_000_000, help="training tokens, the same for every route")
    ap.add_argument("--batch-size", type=int, default=16)
    ap.add_argument("--lr", type=float, default=6e-4)
    ap.add_argument("--min-lr-ratio", type=float, default=0.1, help="the cosine decays to lr x this")
    ap.add_argument("--warmup-steps", type=int, default=100)
    ap.add_argument("--weight-decay", type=float, default=0.1)
    ap.add_argument("--grad-clip", type=float, default=1.0)
    ap.add_argument("--seed", type=int, default=1234)
    ap.add_argument("--corpus-dir", help="train on the *.py files of this folder instead of the standard library")
    ap.add_argument("--device", default=None, help="cuda or cpu (default: cuda when available)")
    ap.add_argument("--compile", action="store_true", help="torch.compile the model (off by default)")
    ap.add_argument("--log-every", type=int, default=10)
    ap.add_argument("--eval-every", type=int, default=250)
    ap.add_argument("--val-windows", type=int, default=128, help="fixed validation windows of context+1 bytes")
    ap.add_argument("--timing-skip-steps", type=int, default=20,
                    help="steps after each start or resume left out of the mean step time (allocator, JIT warm-up)")
    ap.add_argument("--max-minutes", type=float, default=8.5,
                    help="safety stop: training ends early, and says so, to finish within this much wall time")
    ap.add_argument("--checkpoint", help="save model, optimizer, RNG and data position here")
    ap.add_argument("--checkpoint-every", type=int, default=1000)
    ap.add_argument("--resume", action="store_true", help="continue from --checkpoint when it exists")
    ap.add_argument("--stop-at-step", type=int,
                    help="save the checkpoint after this many steps and exit, to split a run over several commands")
    ap.add_argument("--profile-attention", dest="profile_attention", action="store_true", default=True,
                    help="after training, measure attention's share of a step (default)")
    ap.add_argument("--no-profile-attention", dest="profile_attention", action="store_false")
    return ap


def apply_tiny(args):
    if args.tiny:
        args.layers, args.d_model, args.heads, args.context = 2, 128, 2, 128
        args.batch_size = min(args.batch_size, 8)
        args.warmup_steps = min(args.warmup_steps, 10)
    return args


def main(argv=None):
    args = apply_tiny(build_parser().parse_args(argv))
    import torch
    return Trainer(args, torch).run()


def make_modules(torch):
    """The model's classes, made once torch is imported (the corpus and divergence helpers above
    need no torch)."""
    nn = torch.nn
    F = torch.nn.functional

    class Stamp(torch.autograd.Function):
        """Identity on its tensors that records a timing mark when the forward passes it and
        another when the backward does: placed before and after the attention call, the marks
        bracket the attention's forward and its backward in the stream's order."""

        @staticmethod
        def forward(ctx, mark, *xs):
            ctx.mark = mark
            mark("forward")
            return tuple(x.view_as(x) for x in xs)

        @staticmethod
        def backward(ctx, *grads):
            ctx.mark("backward")
            return (None, *grads)

    class Block(nn.Module):
        def __init__(self, d_model, heads, model):
            super().__init__()
            self.heads = heads
            self.model = [model]  # (a plain list: the model is not a submodule of its blocks)
            self.ln1 = nn.LayerNorm(d_model)
            self.qkv = nn.Linear(d_model, 3 * d_model, bias=False)
            self.proj = nn.Linear(d_model, d_model, bias=False)
            self.ln2 = nn.LayerNorm(d_model)
            self.fc = nn.Linear(d_model, 4 * d_model, bias=False)
            self.fc_out = nn.Linear(4 * d_model, d_model, bias=False)

        def forward(self, x, marks=None):
            b, s, c = x.shape
            qkv = self.qkv(self.ln1(x)).view(b, s, 3, self.heads, c // self.heads)
            # [B, H, S, D] views of the one projection, head dim contiguous: SDPA and fa4jit
            # (layout "bhsd") both read them as they are, without a copy.
            q, k, v = (t.transpose(1, 2) for t in qkv.unbind(2))
            if marks is not None:
                q, k, v = Stamp.apply(marks[0], q, k, v)
            o = self.model[0].attend(q, k, v)
            if marks is not None:
                (o,) = Stamp.apply(marks[1], o)
            x = x + self.proj(o.transpose(1, 2).reshape(b, s, c))
            return x + self.fc_out(F.gelu(self.fc(self.ln2(x))))

    class GPT(nn.Module):
        """Pre-LN decoder. Positions are learned absolute embeddings added at the input (GPT-2's
        choice): Q and K reach the attention call as plain projections, so what a route's
        quantization sees is not mixed with a rotation applied between projection and attention."""

        def __init__(self, layers, d_model, heads, context, attend):
            super().__init__()
            self.attend = attend
            self.tok = nn.Embedding(VOCAB, d_model)
            self.pos = nn.Embedding(context, d_model)
            self.blocks = nn.ModuleList(Block(d_model, heads, self) for _ in range(layers))
            self.ln_f = nn.LayerNorm(d_model)
            self.marks = None  # per block (before, after) marks while the attention is profiled
            for name, p in self.named_parameters():
                if p.dim() == 2:
                    # GPT-2's initialization: N(0, 0.02), the residual branches' output
                    # projections scaled down by sqrt(2 x layers).
                    std = 0.02 / math.sqrt(2 * layers) if name.endswith(("proj.weight", "fc_out.weight")) else 0.02
                    nn.init.normal_(p, 0.0, std)

        def forward(self, idx, targets):
            s = idx.shape[1]
            x = self.tok(idx) + self.pos(torch.arange(s, device=idx.device))
            for i, block in enumerate(self.blocks):
                x = block(x, None if self.marks is None else self.marks[i])
            logits = F.linear(self.ln_f(x), self.tok.weight)  # (output tied to the byte embedding)
            return F.cross_entropy(logits.float().view(-1, VOCAB), targets.reshape(-1))

    return GPT


def make_attention(torch, route):
    if route == "sdpa":
        F = torch.nn.functional
        return lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True)
    import fa4jit
    pv = FA4JIT_BACKWARD_PV[route]
    return lambda q, k, v: fa4jit.attention(q, k, v, causal=True, route="nvfp8", backward_pv=pv)


def git_commit():
    try:
        out = subprocess.run(["git", "-C", str(Path(__file__).resolve().parent), "rev-parse", "HEAD"],
                             capture_output=True, text=True, timeout=10)
        return out.stdout.strip() or None
    except (OSError, subprocess.SubprocessError):
        return None


# Settings that must match for a checkpoint to continue a run.
RESUME_KEYS = ("attention", "layers", "d_model", "heads", "context", "tokens", "batch_size", "lr", "min_lr_ratio",
               "warmup_steps", "weight_decay", "grad_clip", "seed", "val_windows")


class Trainer:
    def __init__(self, args, torch):
        self.args, self.torch = args, torch
        a = args
        if a.d_model % a.heads:
            raise SystemExit("train_lm: --d-model must be a multiple of --heads")
        self.device = torch.device(a.device or ("cuda" if torch.cuda.is_available() else "cpu"))
        self.cuda = self.device.type == "cuda"
        if a.attention != "sdpa" and not self.cuda:
            raise SystemExit(f"train_lm: --attention {a.attention} runs on CUDA only")
        self.run_name = a.run_name or a.attention
        self.out_dir = Path(a.out)
        self.out_dir.mkdir(parents=True, exist_ok=True)
        self.log_path = self.out_dir / f"{self.run_name}.jsonl"
        self.tokens_per_step = a.batch_size * a.context
        self.total_steps = max(1, a.tokens // self.tokens_per_step)
        self.deadline_s = a.max_minutes * 60 if a.max_minutes else None

    # -- data -----------------------------------------------------------------------------------

    def load_data(self):
        torch = self.torch
        train, val, self.corpus = load_corpus(self.args.corpus_dir)
        # The streams live on the device (a few MB): a batch is one gather there.
        self.train_data = torch.frombuffer(bytearray(train), dtype=torch.uint8).to(self.device)
        self.val_data = torch.frombuffer(bytearray(val), dtype=torch.uint8).to(self.device)
        n = self.args.context + 1
        if len(val) < n or len(train) < n:
            raise SystemExit("train_lm: the corpus is shorter than one window")
        # The data order: a CPU generator seeded once draws every batch's window starts, so the
        # order is the same on every device and its state is the data position of a checkpoint.
        self.batch_gen = torch.Generator().manual_seed(self.args.seed)
        # Validation windows: fixed by the seed, the same for every route.
        g = torch.Generator().manual_seed(self.args.seed + 1)
        self.val_starts = torch.randint(0, len(val) - n + 1, (self.args.val_windows,), generator=g)
        self.offsets = torch.arange(n, device=self.device)

    def windows(self, data, starts):
        chunk = data[starts.to(self.device)[:, None] + self.offsets[None, :]].long()
        return chunk[:, :-1], chunk[:, 1:]

    def next_batch(self):
        n = self.args.context + 1
        starts = self.torch.randint(0, self.train_data.numel() - n + 1, (self.args.batch_size,),
                                    generator=self.batch_gen)
        return self.windows(self.train_data, starts)

    # -- model ----------------------------------------------------------------------------------

    def build(self):
        torch, a = self.torch, self.args
        torch.manual_seed(a.seed)  # (the same initial weights for every route)
        GPT = make_modules(torch)
        self.attend = make_attention(torch, a.attention)
        self.model = GPT(a.layers, a.d_model, a.heads, a.context, self.attend).to(self.device)
        self.params = sum(p.numel() for p in self.model.parameters())
        print(f"train_lm: {self.params / 1e6:.2f}M parameters ({a.layers} layers, d_model {a.d_model}, "
              f"{a.heads} heads of {a.d_model // a.heads}, context {a.context})", file=sys.stderr)
        decay = [p for p in self.model.parameters() if p.dim() >= 2]
        rest = [p for p in self.model.parameters() if p.dim() < 2]
        self.opt = torch.optim.AdamW([{"params": decay, "weight_decay": a.weight_decay},
                                      {"params": rest, "weight_decay": 0.0}],
                                     lr=a.lr, betas=(0.9, 0.95), eps=1e-8, fused=self.cuda)
        self.step_fn = torch.compile(self.model) if a.compile else self.model

    def autocast(self):
        # CUDA: FP32 master weights and optimizer state, matmuls and attention in BF16 under
        # autocast, so Q, K, V reach every route as the BF16 tensors fa4jit takes. CPU: FP32
        # throughout (the smoke test), where BF16 matmuls would only be slower.
        if self.cuda:
            return self.torch.autocast("cuda", dtype=self.torch.bfloat16)
        return self.torch.autocast("cpu", enabled=False)

    def lr_at(self, step):
        a = self.args
        if step < a.warmup_steps:
            return a.lr * (step + 1) / a.warmup_steps
        span = max(1, self.total_steps - a.warmup_steps)
        t = min(1.0, (step - a.warmup_steps) / span)
        low = a.lr * a.min_lr_ratio
        return low + 0.5 * (a.lr - low) * (1 + math.cos(math.pi * t))

    # -- logging --------------------------------------------------------------------------------

    def write(self, record):
        self.log.write(json.dumps(record) + "\n")
        self.log.flush()

    def header(self):
        torch, a = self.torch, self.args
        rec = {"type": "header", "run": self.run_name, "settings": vars(a), "steps": self.total_steps,
               "tokens_per_step": self.tokens_per_step, "corpus": self.corpus, "params": self.params,
               "device": torch.cuda.get_device_name(self.device) if self.cuda else platform.processor() or "cpu",
               "torch": torch.__version__, "python": platform.python_version(), "git_commit": git_commit(),
               "precision": "bf16 autocast, fp32 weights" if self.cuda else "fp32"}
        if a.attention != "sdpa":
            import fa4jit
            rec["fa4jit"] = {"package": fa4jit.__version__, "library": fa4jit.version(),
                             "route": "nvfp8", "backward_pv": FA4JIT_BACKWARD_PV[a.attention]}
        return rec

    # -- evaluation -----------------------------------------------------------------------------

    def evaluate(self, attend=None):
        """Mean loss over the fixed validation windows, with the route's attention (or `attend`)."""
        torch, model = self.torch, self.model
        saved = model.attend
        if attend is not None:
            model.attend = attend
        total = torch.zeros((), device=self.device, dtype=torch.float64)
        try:
            with torch.no_grad(), self.autocast():
                for i in range(0, len(self.val_starts), self.args.batch_size):
                    starts = self.val_starts[i:i + self.args.batch_size]
                    x, y = self.windows(self.val_data, starts)
                    total += model(x, y).double() * len(starts)
        finally:
            model.attend = saved
        return float(total / len(self.val_starts))

    def eval_record(self, step):
        t0 = time.perf_counter()
        rec = {"type": "val", "step": step, "tokens": step * self.tokens_per_step, "val_loss": self.evaluate()}
        if self.args.attention != "sdpa":
            # The same weights with exact (BF16 SDPA) attention: separates what the route's
            # training did to the weights from what its forward does at evaluation.
            rec["val_loss_sdpa_attention"] = self.evaluate(make_attention(self.torch, "sdpa"))
        rec["eval_s"] = time.perf_counter() - t0
        self.history["last_eval_s"] = rec["eval_s"]
        self.write(rec)
        print(f"train_lm: step {step}: val loss {rec['val_loss']:.4f}", file=sys.stderr)
        return rec

    # -- checkpoint -----------------------------------------------------------------------------

    def save_checkpoint(self, step):
        torch, h = self.torch, self.history
        h["interval_loss"], h["interval_max"] = float(self.acc_loss), float(self.acc_max)
        h["interval_steps"] = self.acc_steps
        state = {
            "step": step,
            "settings": {k: getattr(self.args, k) for k in RESUME_KEYS},
            "corpus_sha256": self.corpus["sha256"],
            "model": self.model.state_dict(),
            "optimizer": self.opt.state_dict(),
            "batch_generator": self.batch_gen.get_state(),
            "torch_rng": torch.get_rng_state(),
            "cuda_rng": torch.cuda.get_rng_state_all() if self.cuda else None,
            "history": self.history,
        }
        path = Path(self.args.checkpoint)
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(path.name + ".tmp")
        torch.save(state, tmp)
        os.replace(tmp, path)  # (a run stopped while saving leaves the previous checkpoint whole)

    def load_checkpoint(self):
        torch = self.torch
        state = torch.load(self.args.checkpoint, map_location=self.device, weights_only=False)
        want = {k: getattr(self.args, k) for k in RESUME_KEYS}
        if state["settings"] != want or state["corpus_sha256"] != self.corpus["sha256"]:
            diff = {k: (state["settings"].get(k), want[k]) for k in want if state["settings"].get(k) != want[k]}
            raise SystemExit(f"train_lm: {self.args.checkpoint} is of another run (settings {diff}, corpus "
                             f"{state['corpus_sha256'][:12]} vs {self.corpus['sha256'][:12]})")
        self.model.load_state_dict(state["model"])
        self.opt.load_state_dict(state["optimizer"])
        self.batch_gen.set_state(state["batch_generator"])
        torch.set_rng_state(state["torch_rng"])
        if self.cuda and state["cuda_rng"] is not None:
            torch.cuda.set_rng_state_all(state["cuda_rng"])
        self.history = state["history"]
        return state["step"]

    # -- the run --------------------------------------------------------------------------------

    def elapsed(self):
        return time.monotonic() - _PROCESS_START

    def reserve_s(self):
        """Wall time kept back for what follows training: the final evaluation, the attention
        profile and the checkpoint, estimated from the last evaluation and step times."""
        step_s = (self.history["timed_s"] / self.history["timed_steps"]) if self.history["timed_steps"] else 1.0
        profile = 12 * step_s + 10 if self.args.profile_attention else 0
        checkpoint = 15 if self.args.checkpoint else 0
        return 2 * self.history["last_eval_s"] + profile + checkpoint + 5

    def run(self):
        torch, a = self.torch, self.args
        self.load_data()
        self.build()
        # Restartable state, saved in the checkpoint: logged losses (the divergence detector's
        # input), the timed steps, the last evaluation's cost (for the --max-minutes reserve),
        # the sums of the current log interval.
        self.history = {"losses": [], "timed_s": 0.0, "timed_steps": 0, "divergence": None, "last_eval_s": 0.0,
                        "interval_loss": 0.0, "interval_max": -math.inf, "interval_steps": 0}
        start = 0
        resuming = bool(a.resume and a.checkpoint and Path(a.checkpoint).exists())
        if resuming:
            start = self.load_checkpoint()
        elif a.resume:
            print(f"train_lm: no checkpoint at {a.checkpoint}; starting from step 0", file=sys.stderr)
        continuing_log = resuming and self.log_path.exists()
        self.log = open(self.log_path, "a" if continuing_log else "w")
        if not continuing_log:
            self.write(self.header())
        if resuming:
            self.write({"type": "resume", "step": start, "elapsed_s": self.elapsed(),
                        "device": torch.cuda.get_device_name(self.device) if self.cuda else "cpu"})
        else:
            self.eval_record(0)
        end_reason = self.train(start)
        if end_reason == "stop-at-step":
            self.write({"type": "stop", "step": self.step, "elapsed_s": self.elapsed()})
            self.log.close()
            return 0
        self.finish(end_reason)
        self.log.close()
        return 0

    def train(self, start):
        """Trains from step `start`; returns why it stopped: "done", "max-minutes", "stop-at-step"
        or "non-finite loss"."""
        torch, a, h = self.torch, self.args, self.history
        self.model.train()
        # The sums of the current log interval, on the device (no synchronization per step);
        # a checkpoint taken inside an interval carries them.
        self.acc_loss = torch.tensor(h["interval_loss"], device=self.device, dtype=torch.float64)
        self.acc_max = torch.tensor(h["interval_max"], device=self.device, dtype=torch.float64)
        self.acc_steps = h["interval_steps"]
        interval_start = start - self.acc_steps
        self.step = start
        t0 = time.perf_counter()
        paused = 0.0  # evaluation and checkpoint time inside the interval, kept out of its timing
        while self.step < self.total_steps:
            if self.deadline_s is not None and self.elapsed() + self.reserve_s() > self.deadline_s:
                return "max-minutes"
            lr = self.lr_at(self.step)
            for group in self.opt.param_groups:
                group["lr"] = lr
            x, y = self.next_batch()
            with self.autocast():
                loss = self.step_fn(x, y)
            loss.backward()
            grad_norm = torch.nn.utils.clip_grad_norm_(self.model.parameters(), a.grad_clip)
            self.opt.step()
            self.opt.zero_grad(set_to_none=True)
            loss = loss.detach().double()
            self.acc_loss += loss
            torch.maximum(self.acc_max, loss, out=self.acc_max)
            self.acc_steps += 1
            self.step += 1
            done = self.step == self.total_steps
            if self.step % a.log_every == 0 or done:
                mean = float(self.acc_loss) / self.acc_steps  # (synchronizes: the interval's work is done)
                dt = time.perf_counter() - t0 - paused
                self.write({"type": "step", "step": self.step, "tokens": self.step * self.tokens_per_step,
                            "train_loss": mean, "train_loss_max": float(self.acc_max), "lr": lr,
                            "grad_norm": float(grad_norm), "step_ms": 1e3 * dt / self.acc_steps,
                            "tokens_per_s": self.acc_steps * self.tokens_per_step / dt,
                            "epochs": self.step * self.tokens_per_step / self.corpus["train_bytes"]})
                # (every process warms up: the timing skips the opening steps after a resume too)
                if interval_start >= start + a.timing_skip_steps:
                    h["timed_s"] += dt
                    h["timed_steps"] += self.acc_steps
                self.note_loss(mean)
                self.acc_loss.zero_()
                self.acc_max.fill_(-math.inf)
                self.acc_steps, interval_start = 0, self.step
                t0, paused = time.perf_counter(), 0.0
                if not math.isfinite(mean):
                    return "non-finite loss"
            if done:
                break
            p0 = time.perf_counter()
            if self.step % a.eval_every == 0:
                self.model.eval()
                self.eval_record(self.step)
                self.model.train()
            stop = self.step == a.stop_at_step
            if a.checkpoint and (stop or (a.checkpoint_every and self.step % a.checkpoint_every == 0)):
                self.save_checkpoint(self.step)
            paused += time.perf_counter() - p0
            if stop:
                return "stop-at-step"
        return "done"

    def note_loss(self, mean):
        """Adds a logged loss to the history and records the first divergence."""
        h = self.history
        h["losses"].append(mean)
        if h["divergence"] is None:
            found = detect_divergence(h["losses"])
            if found is not None:
                i, reason, median = found
                h["divergence"] = {"log_index": i, "step": self.step, "loss": h["losses"][i],
                                   "running_median": median, "reason": reason}
                print(f"train_lm: diverged at step {self.step}: {reason}", file=sys.stderr)

    def finish(self, end_reason):
        a, h = self.args, self.history
        self.model.eval()
        val = self.eval_record(self.step)
        if a.checkpoint:
            self.save_checkpoint(self.step)
        profile = self.profile_attention() if a.profile_attention else None
        mean_step_ms = 1e3 * h["timed_s"] / h["timed_steps"] if h["timed_steps"] else None
        final = {
            "type": "final", "step": self.step, "tokens": self.step * self.tokens_per_step,
            "planned_steps": self.total_steps, "planned_tokens": self.total_steps * self.tokens_per_step,
            "epochs": self.step * self.tokens_per_step / self.corpus["train_bytes"],
            "final_val_loss": val["val_loss"], "final_val_loss_sdpa_attention": val.get("val_loss_sdpa_attention"),
            "final_train_loss": h["losses"][-1] if h["losses"] else None,
            "mean_step_ms": mean_step_ms, "timed_steps": h["timed_steps"],
            "tokens_per_s": self.tokens_per_step / (mean_step_ms / 1e3) if mean_step_ms else None,
            "diverged": h["divergence"] is not None, "divergence": h["divergence"],
            "cut": end_reason == "max-minutes", "end_reason": end_reason,
            "max_minutes": a.max_minutes, "elapsed_s": self.elapsed(), "attention_profile": profile,
        }
        if final["cut"]:
            print(f"train_lm: cut by --max-minutes at step {self.step} of {self.total_steps}", file=sys.stderr)
        self.write(final)
        return final

    # -- attention profile ----------------------------------------------------------------------

    def profile_attention(self, warmup=3, reps=5):
        """Attention's share of a training step, measured two ways (medians over `reps` after
        `warmup` unmeasured repeats):

        in_step: forward + backward of real training batches (no optimizer step, so the trained
          weights stay as they are) with marks around every attention call (Stamp): on CUDA an
          event pair around each layer's attention forward and another around its backward, all
          on the step's stream, so the time between a pair is what the stream spends from the
          attention's launch to its end, host-bound gaps included; the step is bracketed by
          events too. On CPU the marks read the clock (CPU kernels run synchronously).
        micro: attention forward + backward alone at the model's shape on random tensors
          (dense [B, H, S, D], the kernels without the rest of the model), timed the same way,
          times the number of layers.

        Both are reported against the forward + backward time and against the training loop's
        mean step time (which also holds the optimizer step and gradient clipping)."""
        torch, a = self.torch, self.args
        model = self.model
        cuda = self.cuda

        def clock():
            if cuda:
                e = torch.cuda.Event(enable_timing=True)
                e.record()
                return e
            return time.perf_counter()

        def ms(t0, t1):
            return t0.elapsed_time(t1) if cuda else 1e3 * (t1 - t0)

        class Marks:
            def __init__(self):
                self.times = {}

            def __call__(self, phase):
                self.times.setdefault(phase, []).append(clock())

        def sync():
            if cuda:
                torch.cuda.synchronize()

        gen = torch.Generator().manual_seed(a.seed + 2)  # (not the training order's generator)
        model.train()
        attn_ms, step_ms = [], []
        for rep in range(warmup + reps):
            n = a.context + 1
            starts = torch.randint(0, self.train_data.numel() - n + 1, (a.batch_size,), generator=gen)
            x, y = self.windows(self.train_data, starts)
            marks = [(Marks(), Marks()) for _ in model.blocks]
            model.marks = marks
            sync()
            t0 = clock()
            with self.autocast():
                loss = model(x, y)
            loss.backward()
            t1 = clock()
            sync()
            model.marks = None
            model.zero_grad(set_to_none=True)
            if rep < warmup:
                continue
            total = 0.0
            for before, after in marks:
                total += ms(before.times["forward"][0], after.times["forward"][0])
                total += ms(after.times["backward"][0], before.times["backward"][0])
            attn_ms.append(total)
            step_ms.append(ms(t0, t1))
        # The micro-benchmark, at the model's shape and dtype.
        dtype = torch.bfloat16 if cuda else torch.float32
        g = torch.Generator(device=self.device).manual_seed(a.seed + 3)
        shape = (a.batch_size, a.heads, a.context, a.d_model // a.heads)
        q, k, v, do = (torch.randn(shape, generator=g, device=self.device, dtype=dtype) for _ in range(4))
        for t in (q, k, v):
            t.requires_grad_(True)
        micro = []
        for rep in range(warmup + reps):
            sync()
            t0 = clock()
            o = self.attend(q, k, v)
            torch.autograd.grad(o, (q, k, v), do)
            t1 = clock()
            sync()
            if rep >= warmup:
                micro.append(ms(t0, t1) * a.layers)
        in_step = statistics.median(attn_ms)
        fwd_bwd = statistics.median(step_ms)
        micro_ms = statistics.median(micro)
        train_step = 1e3 * self.history["timed_s"] / self.history["timed_steps"] if self.history["timed_steps"] else None
        return {
            "method": "median of %d after %d warm-up; %s" % (reps, warmup, "CUDA events" if cuda else "CPU clock"),
            "attention_ms_in_step": in_step, "fwd_bwd_ms": fwd_bwd,
            "share_of_fwd_bwd": in_step / fwd_bwd,
            "share_of_train_step": in_step / train_step if train_step else None,
            "micro_attention_ms_per_step": micro_ms, "micro_share_of_fwd_bwd": micro_ms / fwd_bwd,
            "micro_share_of_train_step": micro_ms / train_step if train_step else None,
        }


if __name__ == "__main__":
    sys.exit(main())
