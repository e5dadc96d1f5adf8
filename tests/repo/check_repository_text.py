#!/usr/bin/env python3
"""Keeps development history and references outside the repository out of its text.

usage: check_repository_text.py [SOURCE_DIR]   check every tracked text file (default: .)
       check_repository_text.py --self-test    check the rules themselves on sample lines

Every text file `git ls-files` lists (or, outside a git checkout, every file under SOURCE_DIR but
build*/ and .git) is read line by line. A finding is printed as path:line: rule: text, and any
finding makes the exit status 1. Rules:
  - history: an ordinal (first ... thirtieth) followed by session, call or step; the word
    session(s); "call N"; "issue N" or "issue #N"; names like session16 or call5, in text or in
    a file's path (line 0);
  - outside references: the planning folder beside the repository and its design and hardware notes (the repository's own documents are
    under docs/);
  - README.md: lines of at most 100 characters, table rows and code blocks at most 140.
Skipped: binary files, tests/repo/ (this checker and its samples), tests/codegen/golden/ (hashes).
Python 3 standard library only.
"""
import os
import re
import subprocess
import sys

# The planning folder beside the repository, spelled in parts so that this file does not point at it.
OUTSIDE = "/".join(("..", "sha" + "red"))
DESIGN_DOC = "DES" + "IGN.md"
HW_NOTES = "HARDWARE" + "-NOTES"

ORDINALS = (
    "first second third fourth fifth sixth seventh eighth ninth tenth eleventh twelfth thirteenth "
    "fourteenth fifteenth sixteenth seventeenth eighteenth nineteenth twentieth twenty-first "
    "twenty-second twenty-third twenty-fourth twenty-fifth twenty-sixth twenty-seventh "
    "twenty-eighth twenty-ninth thirtieth"
).split()

# (rule name, pattern) on each line of text. Case-insensitive.
TEXT_RULES = [
    ("history: ordinal session/call/step",
     re.compile(r"\b(?:%s)\s+(?:sessions?|calls?|steps?)\b" % "|".join(map(re.escape, ORDINALS)), re.I)),
    ("history: session", re.compile(r"\bsessions?\b", re.I)),
    ("history: call number", re.compile(r"\bcalls? [0-9]+\b", re.I)),
    ("history: issue number", re.compile(r"\bissue #?[0-9]+\b", re.I)),
    ("history: session/call name", re.compile(r"\b(?:session|call)[0-9]+", re.I)),
    ("outside reference: " + OUTSIDE, re.compile(re.escape(OUTSIDE) + r"\b")),
    ("outside reference: " + DESIGN_DOC, re.compile(r"\b" + re.escape(DESIGN_DOC) + r"\b")),
    ("outside reference: " + HW_NOTES, re.compile(r"\b" + re.escape(HW_NOTES) + r"\b")),
]
PATH_RULE = ("history: session/call name in a path", re.compile(r"(?:session|call)[0-9]+", re.I))

SKIPPED_PREFIXES = ("tests/repo/", "tests/codegen/golden/")
README = "README.md"
README_LINE = 100
README_TABLE_OR_CODE_LINE = 140


def line_findings(text):
    """The rule names a line of text breaks."""
    return [name for name, pattern in TEXT_RULES if pattern.search(text)]


def path_findings(path):
    name, pattern = PATH_RULE
    return [name] if pattern.search(path) else []


def readme_findings(lines):
    """(line number, rule) for README lines too long: tables and code blocks get more room."""
    out = []
    in_code = False
    for number, line in enumerate(lines, 1):
        fence = line.lstrip().startswith("```")
        roomy = in_code or fence or line.lstrip().startswith("|")
        limit = README_TABLE_OR_CODE_LINE if roomy else README_LINE
        if len(line) > limit:
            what = "table row or code block" if roomy else "line"
            out.append((number, "README: %s of %d characters (at most %d)" % (what, len(line), limit)))
        if fence:
            in_code = not in_code
    return out


def listed_files(root):
    """Tracked files (relative, '/'-separated): git ls-files, or a walk outside a git checkout."""
    def git(*args):
        return subprocess.run(["git", "-C", root] + list(args), stdout=subprocess.PIPE,
                              stderr=subprocess.DEVNULL, check=True).stdout.decode("utf-8", "replace")

    try:
        # (the source dir must be a checkout's top, not a folder inside some other checkout)
        if os.path.realpath(git("rev-parse", "--show-toplevel").strip()) == os.path.realpath(root):
            return [p for p in git("ls-files", "-z").split("\0") if p]
    except (OSError, subprocess.CalledProcessError):
        pass
    files = []
    for directory, subdirs, names in os.walk(root):
        rel = os.path.relpath(directory, root)
        subdirs[:] = sorted(d for d in subdirs
                            if d != ".git" and not (rel == "." and d.startswith("build")))
        for name in sorted(names):
            files.append(os.path.normpath(os.path.join(rel, name)).replace(os.sep, "/"))
    return files


def read_text(path):
    """The file's lines, or None for a binary (or unreadable) file."""
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError:
        return None
    if b"\0" in data[:8192]:
        return None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return None
    return text.splitlines()


def check(root):
    findings = []
    for rel in listed_files(root):
        if rel.startswith(SKIPPED_PREFIXES):
            continue
        for rule in path_findings(rel):
            findings.append("%s:0: %s" % (rel, rule))
        lines = read_text(os.path.join(root, rel))
        if lines is None:
            continue
        for number, line in enumerate(lines, 1):
            for rule in line_findings(line):
                findings.append("%s:%d: %s: %s" % (rel, number, rule, line.strip()[:120]))
        if rel == README:
            for number, rule in readme_findings(lines):
                findings.append("%s:%d: %s" % (rel, number, rule))
    return findings


def self_test():
    must_find = {
        "the sixteenth session's step": "history: ordinal session/call/step",
        "(Fifth session call 5)": "history: ordinal session/call/step",
        "measured in the twenty-third call": "history: ordinal session/call/step",
        "the first step was": "history: ordinal session/call/step",
        # strict on purpose: plain English too, so that "the first call of this session" cannot pass
        "the first call of a shape compiles": "history: ordinal session/call/step",
        "the sessions before": "history: session",
        "the session start": "history: session",
        "measured in call 7": "history: call number",
        "Call 11 timed it": "history: call number",
        "(issue 3's benchmark)": "history: issue number",
        "fixes issue #12": "history: issue number",
        "docs/perf-data/2026-12-03-session16-call5/": "history: session/call name",
        "see call5/bench.jsonl": "history: session/call name",
        "summary in " + OUTSIDE + "/seed/": "outside reference: " + OUTSIDE,
        "(" + DESIGN_DOC + " §1.2)": "outside reference: " + DESIGN_DOC,
        HW_NOTES + ".md: Hopper has no FP4": "outside reference: " + HW_NOTES,
    }
    for text, rule in must_find.items():
        found = line_findings(text)
        assert rule in found, "%r: expected %r, got %r" % (text, rule, found)
    clean = [
        "// 128 keys beat 64 at D256 by 11-20% on the H200: fa4jit bench --variants keys64,keys128",
        "// The first k-step overwrites D; a third warp per scheduler issues while two wait.",
        "// A shape compiles once; later calls hit the cache (one call per forward).",
        "references: docs/ARCHITECTURE.md §6, docs/NUMERICS.md §2.3, ../include/fa4jit/common.cuh",
        "calling 3 kernels, recall 4 entries, tissue 5, sessionless; the SM issues 128 per clock",
        "the seed is in every failure message (seed 15138174181126868532)",
    ]
    for text in clean:
        found = line_findings(text)
        assert not found, "%r: unexpected %r" % (text, found)
    assert path_findings("docs/perf-data/2026-12-01-session10-call2/bench.jsonl")
    assert path_findings("data/call7/x.log")
    assert not path_findings("docs/benchmarks/forward/fa4jit.jsonl")
    readme = [
        "x" * 100,
        "y" * 101,
        "| " + "t" * 130 + " |",
        "| " + "t" * 140 + " |",
        "```sh",
        "c" * 140,
        "c" * 141,
        "```",
        "z" * 101,
    ]
    assert [n for n, _ in readme_findings(readme)] == [2, 4, 7, 9], readme_findings(readme)
    print("repo_text self-test: %d history and reference samples, %d clean lines, README lengths: ok"
          % (len(must_find), len(clean)))
    return 0


def main(argv):
    if len(argv) > 1 and argv[1] == "--self-test":
        return self_test()
    root = argv[1] if len(argv) > 1 else "."
    findings = check(root)
    for f in findings:
        print(f)
    print("repo_text: %d finding%s" % (len(findings), "" if len(findings) == 1 else "s"))
    return 1 if findings else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
