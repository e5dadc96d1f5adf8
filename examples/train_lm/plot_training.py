#!/usr/bin/env python3
"""Turns the run logs of train_lm.py in a results folder into the loss plot and the results table.

Writes the plot (training loss, smoothed, and validation loss against tokens; one colour per
route) to --png, prints the markdown table (or writes it to --table), and with --docs replaces
the text between the results markers of that markdown file with the table, the plot and what the
runs shared. Needs matplotlib.

Usage: plot_training.py RESULTS_DIR [--png docs/training/loss.png] [--table FILE] [--docs docs/TRAINING.md]
"""
import argparse
import glob
import json
import math
import os
import sys

REPO = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
BEGIN, END = "<!-- results:begin -->", "<!-- results:end -->"
ROUTE_ORDER = ("sdpa", "nvfp8", "nvfp8-mxfp4")
# Settings every compared run must share (the attention route is what differs).
SHARED = ("layers", "d_model", "heads", "context", "tokens", "batch_size", "lr", "min_lr_ratio", "warmup_steps",
          "weight_decay", "grad_clip", "seed", "val_windows", "compile")


def read_run(path):
    """One run's records: its header, step and val records by step (a resumed run may log a step
    twice; the later record wins), and its last final record (None while unfinished)."""
    run = {"path": path, "header": None, "steps": {}, "vals": {}, "final": None}
    with open(path) as f:
        for line in f:
            if not line.strip():
                continue
            rec = json.loads(line)
            kind = rec.get("type")
            if kind == "header" and run["header"] is None:
                run["header"] = rec
            elif kind == "step":
                run["steps"][rec["step"]] = rec
            elif kind == "val":
                run["vals"][rec["step"]] = rec
            elif kind == "final":
                run["final"] = rec
    if run["header"] is None:
        raise SystemExit(f"plot_training: {path} has no header record")
    run["name"] = run["header"]["run"]
    run["route"] = run["header"]["settings"]["attention"]
    return run


def read_runs(results):
    runs = [read_run(p) for p in sorted(glob.glob(os.path.join(results, "*.jsonl")))]
    if not runs:
        raise SystemExit(f"plot_training: no *.jsonl in {results}")

    def order(run):
        r = run["route"]
        return (ROUTE_ORDER.index(r) if r in ROUTE_ORDER else len(ROUTE_ORDER), run["name"])
    return sorted(runs, key=order)


def smooth(values, half=5):
    """Centered moving average over 2 x half + 1 logged values (fewer at the ends): no lag, so the
    curves of different routes stay comparable at every token count. A short run (under 20
    logged values per unit of half) is drawn as logged."""
    half = min(half, len(values) // 20)
    out = []
    for i in range(len(values)):
        window = values[max(0, i - half):i + half + 1]
        out.append(sum(window) / len(window))
    return out


def plot(runs, png):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (left, right) = plt.subplots(1, 2, figsize=(12, 4.5))
    colours = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for i, run in enumerate(runs):
        c = colours[i % len(colours)]
        steps = [run["steps"][s] for s in sorted(run["steps"])]
        losses = [r["train_loss"] for r in steps]
        finite = [j for j, v in enumerate(losses) if math.isfinite(v)]
        left.plot([steps[j]["tokens"] / 1e6 for j in finite], smooth([losses[j] for j in finite]),
                  color=c, label=run["name"])
        vals = [run["vals"][s] for s in sorted(run["vals"])]
        right.plot([r["tokens"] / 1e6 for r in vals], [r["val_loss"] for r in vals], "o-", ms=3, color=c,
                   label=run["name"])
        if any("val_loss_sdpa_attention" in r for r in vals):
            right.plot([r["tokens"] / 1e6 for r in vals], [r.get("val_loss_sdpa_attention") for r in vals], "--",
                       color=c, alpha=0.6, label=f"{run['name']}, evaluated with SDPA")
    left.set_title("training loss (centered moving mean)")
    right.set_title("validation loss (fixed held-out windows)")
    for ax in (left, right):
        ax.set_xlabel("training tokens (millions)")
        ax.set_ylabel("loss (nats per byte)")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    # The opening losses (ln 256 = 5.5) would flatten the curves where routes differ.
    ends = [r["val_loss"] for run in runs for r in run["vals"].values() if math.isfinite(r["val_loss"])]
    if ends:
        low = min(ends)
        for ax in (left, right):
            ax.set_ylim(low - 0.1, low + 1.5)
    fig.tight_layout()
    os.makedirs(os.path.dirname(os.path.abspath(png)), exist_ok=True)
    fig.savefig(png, dpi=120)
    plt.close(fig)


def fmt(x, spec, unit=""):
    return "n/a" if x is None or (isinstance(x, float) and not math.isfinite(x)) else format(x, spec) + unit


def mtok(n):
    return f"{n / 1e6:.3g}M"


def table(runs, baseline="sdpa"):
    base = next((r for r in runs if r["route"] == baseline and r["final"]), None)
    bf = base["final"] if base else None
    rows = ["| run | final val loss | gap to sdpa | val loss, SDPA attention at eval | step ms | tokens/s vs sdpa "
            "| attention share of step | diverged | cut by --max-minutes |",
            "|---|---|---|---|---|---|---|---|---|"]
    for run in runs:
        f = run["final"]
        if f is None:
            rows.append(f"| {run['name']} | unfinished | | | | | | | |")
            continue
        gap = speed = None
        if bf and run is not base:
            gap = 100 * (f["final_val_loss"] - bf["final_val_loss"]) / bf["final_val_loss"]
            if f["tokens_per_s"] and bf["tokens_per_s"]:
                speed = f["tokens_per_s"] / bf["tokens_per_s"]
        elif run is base:
            gap, speed = 0.0, 1.0
        prof = f.get("attention_profile") or {}
        share = prof.get("share_of_train_step")
        diverged = "no"
        if f["diverged"]:
            d = f["divergence"]
            diverged = f"yes, step {d['step']} ({d['reason']})"
        cut = f"yes, at {mtok(f['tokens'])} of {mtok(f['planned_tokens'])} tokens" if f["cut"] else "no"
        rows.append(f"| {run['name']} | {fmt(f['final_val_loss'], '.4f')} | {fmt(gap, '+.2f', '%')} | "
                    f"{fmt(f.get('final_val_loss_sdpa_attention'), '.4f')} | {fmt(f['mean_step_ms'], '.1f')} | "
                    f"{fmt(speed, '.2f', 'x')} | {fmt(None if share is None else 100 * share, '.0f', '%')} | "
                    f"{diverged} | {cut} |")
    return "\n".join(rows)


def shared_facts(runs):
    """What the runs had in common, and every way in which they did not."""
    lines = []
    h0 = runs[0]["header"]
    s0 = h0["settings"]
    c0 = h0["corpus"]
    lines.append(f"- Model: {s0['layers']} layers, d_model {s0['d_model']}, {s0['heads']} heads of "
                 f"{s0['d_model'] // s0['heads']}, context {s0['context']}, {h0['params'] / 1e6:.1f}M parameters; "
                 f"{mtok(s0['tokens'])} tokens in batches of {s0['batch_size']} x {s0['context']}, "
                 f"lr {s0['lr']:g}, seed {s0['seed']}.")
    lines.append(f"- Corpus: {c0['name']} (Python {c0['python_version']}), {c0['files']} files, {c0['bytes']} bytes, "
                 f"{c0['val_files']} files ({100 * c0['val_fraction']:.1f}% of bytes) held out; "
                 f"SHA-256 {c0['sha256'][:16]}.")
    devices = sorted({r["header"]["device"] for r in runs})
    lines.append(f"- Device: {', '.join(devices)}; PyTorch {', '.join(sorted({r['header']['torch'] for r in runs}))}.")
    for run in runs[1:]:
        h = run["header"]
        diff = [k for k in SHARED if h["settings"].get(k) != s0.get(k)]
        if diff:
            lines.append(f"- **{run['name']} differs from {runs[0]['name']} in {', '.join(diff)}**: not comparable.")
        if h["corpus"]["sha256"] != c0["sha256"]:
            lines.append(f"- **{run['name']} trained on other data** (corpus SHA-256 {h['corpus']['sha256'][:16]}).")
    if len(devices) > 1:
        lines.append("- **The runs used different devices**: their times are not comparable.")
    lines.append("- Attention share: attention forward + backward inside a training step, from CUDA events "
                 "around each layer's attention call, over the training loop's mean step time "
                 "(`attention_profile` in each final record also has the isolated micro-benchmark).")
    return "\n".join(lines)


def results_section(runs, png, docs):
    rel = os.path.relpath(os.path.abspath(png), os.path.dirname(os.path.abspath(docs)))
    return "\n".join([shared_facts(runs), "", table(runs), "", f"![loss curves]({rel})"])


def fill_docs(docs, section):
    with open(docs) as f:
        text = f.read()
    if text.count(BEGIN) != 1 or text.count(END) != 1 or text.index(BEGIN) > text.index(END):
        raise SystemExit(f"plot_training: {docs} needs one {BEGIN} ... {END} pair")
    head, rest = text.split(BEGIN)
    _, tail = rest.split(END)
    with open(docs, "w") as f:
        f.write(f"{head}{BEGIN}\n{section}\n{END}{tail}")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("results", help="folder of train_lm.py's RUN.jsonl files")
    ap.add_argument("--png", default=os.path.join(REPO, "docs", "training", "loss.png"))
    ap.add_argument("--table", help="write the markdown table here instead of stdout")
    ap.add_argument("--docs", help="markdown file whose results markers get the table and the plot")
    a = ap.parse_args(argv)
    runs = read_runs(a.results)
    plot(runs, a.png)
    md = table(runs)
    if a.table:
        with open(a.table, "w") as f:
            f.write(md + "\n")
    else:
        print(md)
    if a.docs:
        fill_docs(a.docs, results_section(runs, a.png, a.docs))
    print(f"plot_training: {len(runs)} runs; plot {a.png}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
