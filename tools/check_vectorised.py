#!/usr/bin/env python3
"""Fails unless GCC vectorises every loop marked `// [simd]` in the given sources.

Each source is compiled (object discarded) with the given compiler and flags plus
-fopt-info-vec-optimized; every line carrying the marker must be reported as "loop
vectorized" (or "basic block ... vectorized"). Speed expectations of the CPU kernels as a
CI gate: a change that makes GCC give up on a loop (a branch it cannot if-convert, a call it
cannot inline, -ftrapping-math) fails here instead of going unnoticed in a benchmark.

  check_vectorised.py --cxx g++ --flags "-O3 -fno-trapping-math -I..." [--header H]... [--instantiate S]... FILE...

A loop in a header (a template the sources instantiate) is marked in the header and the
header named with --header: its marked lines must be reported vectorised, under the header's
name, while compiling some source. A source named with --instantiate is compiled only for
the headers' loops (it has no marked line of its own).
"""
import argparse
import re
import shlex
import subprocess
import sys

MARKER = "// [simd]"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cxx", required=True)
    ap.add_argument("--flags", default="")
    ap.add_argument("--header", action="append", default=[], help="a header whose marked loops the sources instantiate")
    ap.add_argument("--instantiate", action="append", default=[], help="a source compiled for the headers' loops only")
    ap.add_argument("sources", nargs="+")
    a = ap.parse_args()
    failures, checked = [], 0
    in_headers = set()  # (file, line) of every vectorised loop reported in any file
    for src in a.sources + a.instantiate:
        with open(src) as f:
            marked = [n for n, line in enumerate(f, 1) if MARKER in line]
        if not marked and src not in a.instantiate:
            failures.append(f"{src}: no line is marked '{MARKER}'")
            continue
        cmd = [a.cxx] + shlex.split(a.flags) + ["-fopt-info-vec-optimized", "-c", src, "-o", "/dev/null"]
        r = subprocess.run(cmd, capture_output=True, text=True)
        if r.returncode != 0:
            failures.append(f"{src}: the compile failed:\n{r.stderr[-4000:]}")
            continue
        reported = [(m.group(1), int(m.group(2)))
                    for m in re.finditer(r"^([^\s:]+):(\d+):\d+: optimized: (?:loop|basic block).*vectorized", r.stderr, re.M)]
        done = {n for f, n in reported if f.endswith(src) or src.endswith(f)}
        in_headers.update(reported)
        for n in marked:
            checked += 1
            if n not in done:
                failures.append(f"{src}:{n}: marked {MARKER} but not vectorised (see -fopt-info-vec-missed)")
    for h in a.header:
        with open(h) as f:
            marked = [n for n, line in enumerate(f, 1) if MARKER in line]
        if not marked:
            failures.append(f"{h}: no line is marked '{MARKER}'")
        for n in marked:
            checked += 1
            if not any(n == line and (f.endswith(h) or h.endswith(f)) for f, line in in_headers):
                failures.append(f"{h}:{n}: marked {MARKER} but not vectorised in any source's instantiation")
    for f in failures:
        print(f, file=sys.stderr)
    print(f"check_vectorised: {checked} marked loops, {len(failures)} not vectorised")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
