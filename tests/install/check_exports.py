#!/usr/bin/env python3
"""libfa4jit.so exports exactly the functions fa4jit_c.h declares with FA4JIT_API, and needs no
C++ symbol from outside (its C++ runtime, LLVM, fmt and spdlog are inside it and local).
Usage: check_exports.py LIBRARY HEADER"""
import re
import subprocess
import sys


def symbols(lib, *flags):
    out = subprocess.run(["nm", "-D", *flags, lib], check=True, capture_output=True, text=True).stdout
    rows = [line.split() for line in out.splitlines() if line.strip()]
    return [(r[-2], r[-1].split("@")[0]) for r in rows]  # (type, name)


def main():
    lib, header = sys.argv[1], sys.argv[2]
    declared = set(re.findall(r"^FA4JIT_API [^(]*?\b(fa4jit_\w+)\(", open(header).read(), re.M))
    exported = {name for kind, name in symbols(lib, "--defined-only")}
    problems = []
    if not declared:
        problems.append(f"no FA4JIT_API declarations found in {header}")
    if exported - declared:
        problems.append("exported but not declared: " + ", ".join(sorted(exported - declared)))
    if declared - exported:
        problems.append("declared but not exported: " + ", ".join(sorted(declared - exported)))
    # Strong undefined C++ symbols would bind to whatever C++ library the host loaded.
    cxx = sorted(name for kind, name in symbols(lib, "--undefined-only") if kind == "U" and name.startswith("_Z"))
    if cxx:
        problems.append("undefined C++ symbols: " + ", ".join(cxx[:10]))
    for p in problems:
        print("check_exports:", p)
    print(f"check_exports: {len(exported)} symbols exported, {len(declared)} declared")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
