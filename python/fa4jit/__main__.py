"""`python -m fa4jit ARGS...`: runs the fa4jit command-line tool installed with the package (the
CLI is the one implementation of accuracy, tune, cache, tmem, ...)."""
import os
import sys


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    exe = os.environ.get("FA4JIT_CLI") or os.path.join(here, "bin", "fa4jit")
    if not os.access(exe, os.X_OK):
        sys.exit(f"fa4jit: the command-line tool is not at {exe} (set FA4JIT_CLI)")
    os.execv(exe, [exe] + sys.argv[1:])


if __name__ == "__main__":
    main()
