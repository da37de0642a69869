#!/usr/bin/env python3
"""Counts the Variable functions written by hand: definitions at namespace scope (not in an
anonymous namespace) in wick/**/*.cpp whose result is a Variable (or a pair or vector of
them), by file. The generated definitions (wick/autograd/generated/*.inc, written by
tools/op_list.py from the op tables) are not counted. Issue 47's measure of how much of the
Variable layer is still spelled out instead of declared once.

  tools/count_variable_bodies.py [--rev REV] [--under wick/autograd/functions] [--max N]

--max N fails (exit 1) when the count under --under exceeds N (the ctest
hand_written_variable_bodies holds the op layer under issue 47's target).
"""
import argparse
import os
import re
import subprocess
import sys

RESULT = re.compile(r"^(Variable|std::pair<Variable, ?(Tensor|Variable)>|std::vector<Variable>|WithIndices<Variable>) "
                    r"[a-z_0-9]+\(")


def sources(root, rev):
    if rev:
        names = subprocess.run(["git", "-C", root, "ls-tree", "-r", "--name-only", rev, "wick"], check=True,
                               capture_output=True, text=True).stdout.split()
        for n in names:
            if n.endswith(".cpp"):
                yield n, subprocess.run(["git", "-C", root, "show", f"{rev}:{n}"], check=True, capture_output=True,
                                        text=True).stdout
        return
    for base, _, files in os.walk(os.path.join(root, "wick")):
        for f in sorted(files):
            if f.endswith(".cpp"):
                path = os.path.join(base, f)
                yield os.path.relpath(path, root), open(path).read()


def count(text):
    """Definitions outside anonymous namespaces (clang-format puts `namespace {` and its
    closing `}  // namespace` at column 0)."""
    n, anonymous = 0, False
    for line in text.split("\n"):
        if line.startswith("namespace {"):
            anonymous = True
        elif anonymous and line.startswith("}  // namespace"):
            anonymous = False
        elif not anonymous and RESULT.match(line):
            n += 1
    return n


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--root", default=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    ap.add_argument("--rev", help="count a commit's files instead of the working tree")
    ap.add_argument("--under", default="wick", help="the folder whose total --max checks")
    ap.add_argument("--max", type=int)
    a = ap.parse_args()
    per_file = {path: c for path, text in sources(a.root, a.rev) if (c := count(text))}
    total = sum(c for path, c in per_file.items() if path.startswith(a.under.rstrip("/") + "/"))
    for path, c in sorted(per_file.items(), key=lambda item: (-item[1], item[0])):
        print(f"{c:4d} {path}")
    print(f"{sum(per_file.values())} in wick/, {total} under {a.under}")
    if a.max is not None and total > a.max:
        print(f"count_variable_bodies: {total} hand-written Variable functions under {a.under}, more than {a.max}: "
              "declare the op as a table row with its body (docs/testing.md, 'Ops as tables')", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
