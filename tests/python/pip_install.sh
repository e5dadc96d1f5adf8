#!/usr/bin/env bash
# `pip install` of the repository into a fresh virtual environment (scikit-build-core builds
# libfa4jit.so and the CLI into the package), then the installed package, away from the source
# tree: it imports without a GPU, loads its library, and `python -m fa4jit` runs its CLI.
# Usage: pip_install.sh SOURCE_DIR WORK_DIR
set -euo pipefail
src=$1 work=$2
rm -rf "$work" && mkdir -p "$work"
python3 -m venv "$work/venv"
"$work/venv/bin/pip" install -q "$src"
cd "$work"
"$work/venv/bin/python" - <<'PY'
import os, fa4jit
assert fa4jit.version() == fa4jit.__version__, (fa4jit.version(), fa4jit.__version__)
here = os.path.dirname(fa4jit.__file__)
assert os.path.isfile(os.path.join(here, "lib", "libfa4jit.so")), os.listdir(here)
print("installed fa4jit", fa4jit.version(), "at", here)
PY
"$work/venv/bin/python" -m fa4jit tmem --help | grep -q "usage: fa4jit tmem"
echo "python -m fa4jit runs the CLI"
