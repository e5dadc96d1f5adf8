#!/usr/bin/env bash
# Trains the model once per attention route, one after the other, with the same settings, into
# one results folder, and records the settings there (settings.json). Each route takes about
# 8.5 minutes on an H100/H200 with the defaults; docs/TRAINING.md gives the command of one route
# alone, for machines that limit how long one command may run.
#
# Usage: examples/train_lm/run_all.sh RESULTS_DIR [train_lm.py arguments shared by every route]
#   ROUTES="sdpa nvfp8 nvfp8-mxfp4" (default) picks the routes. The fa4jit routes need the
#   package importable (pip install ., or PYTHONPATH=python with FA4JIT_LIBRARY=.../libfa4jit.so).
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
results=${1:?"usage: run_all.sh RESULTS_DIR [train_lm.py arguments]"}
shift
routes=${ROUTES:-sdpa nvfp8 nvfp8-mxfp4}
mkdir -p "$results"
# settings.json: every train_lm.py setting as the runs resolve it (defaults included), the
# routes, the commit, the date.
python3 - "$here" "$results" "$routes" "$@" <<'PY' || exit 1
import datetime, json, os, subprocess, sys
here, results, routes, extra = sys.argv[1], sys.argv[2], sys.argv[3].split(), sys.argv[4:]
sys.path.insert(0, here)
import train_lm
args = train_lm.apply_tiny(train_lm.build_parser().parse_args(["--attention", routes[0], "--out", results] + extra))
settings = {k: v for k, v in vars(args).items() if k not in ("attention", "out", "run_name")}
commit = subprocess.run(["git", "-C", here, "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()
with open(os.path.join(results, "settings.json"), "w") as f:
    json.dump({"routes": routes, "arguments": extra, "settings": settings, "git_commit": commit or None,
               "started": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")}, f, indent=2)
    f.write("\n")
PY
failed=()
for route in $routes; do
  echo "run_all: $route" >&2
  python3 "$here/train_lm.py" --attention "$route" --out "$results" "$@" || failed+=("$route")
done
if [ ${#failed[@]} -gt 0 ]; then
  echo "run_all: failed: ${failed[*]}" >&2
  exit 1
fi
echo "run_all: done; plot with: python3 $here/plot_training.py $results --docs docs/TRAINING.md" >&2
