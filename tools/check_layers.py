#!/usr/bin/env python3
"""The layers' shape (docs/DESIGN.md, "Layers"); fails on either of:

1. an upward include: every #include of another layer's header (<wick/LAYER/...> or
   "LAYER/...") in a layer's folder must name a layer that folder may see. cudasim/ (the
   CUDA simulator) sees no layer.
2. a header that is neither public nor internal: each header of the installed layers is
   either reachable from <wick/wick.h> (cmake/wick.h.in and include/wick/distributed.h,
   following <wick/...> includes) or listed in cmake/internal_headers.txt, never both (an
   internal header included by a public one would be missing from an install).

    tools/check_layers.py [ROOT]      check the tree at ROOT (default: this checkout)
    tools/check_layers.py --self-test show that an upward include is caught
"""
import os
import re
import sys
import tempfile

# What each layer may include besides itself: the arrows of docs/DESIGN.md's diagram.
MAY_SEE = {
    "tensor": set(),
    "kernels": {"tensor"},
    "autograd": {"tensor", "kernels"},
    "nn": {"tensor", "kernels", "autograd"},
    "optim": {"tensor", "kernels", "autograd", "nn"},
    "data": {"tensor", "kernels", "autograd"},
    "train": {"tensor", "kernels", "autograd", "nn", "optim", "data"},
    "distributed": {"tensor", "kernels", "autograd", "nn", "optim", "data", "train"},
    "cudasim": set(),
}
LAYERS = "|".join(n for n in MAY_SEE if n != "cudasim")
INCLUDE = re.compile(r'^\s*#\s*include\s*[<"](?:wick/)?(' + LAYERS + r')/')
SOURCES = (".h", ".cpp", ".cu", ".cuh")


def violations(root):
    found = []
    for layer, allowed in MAY_SEE.items():
        top = os.path.join(root, layer)
        for folder, _, files in os.walk(top):
            for name in sorted(files):
                if not name.endswith(SOURCES):
                    continue
                path = os.path.join(folder, name)
                with open(path, encoding="utf-8", errors="replace") as f:
                    for number, line in enumerate(f, 1):
                        m = INCLUDE.match(line)
                        if m and m.group(1) != layer and m.group(1) not in allowed:
                            found.append(f"{os.path.relpath(path, root)}:{number}: {layer}/ may not include "
                                         f"{m.group(1)}/ ({line.strip()})")
    return found


INSTALLED = ("tensor", "autograd", "nn", "optim", "data", "train", "distributed")
WICK_INCLUDE = re.compile(r'^\s*#\s*include\s*<wick/([a-z_]+/[a-z_0-9/]+\.h)>')


def header_violations(root):
    def includes(path):
        try:
            with open(path, encoding="utf-8", errors="replace") as f:
                return [m.group(1) for m in map(WICK_INCLUDE.match, f) if m]
        except FileNotFoundError:
            return []

    roots = includes(os.path.join(root, "cmake", "wick.h.in")) + includes(os.path.join(root, "include", "wick",
                                                                                         "distributed.h"))
    public, stack = set(), list(roots)
    while stack:
        header = stack.pop()
        if header not in public:
            public.add(header)
            stack += includes(os.path.join(root, header))
    internal = set()
    with open(os.path.join(root, "cmake", "internal_headers.txt")) as f:
        internal = {line.strip() for line in f if line.strip() and not line.startswith("#")}
    found = []
    for layer in INSTALLED:
        for folder, _, files in os.walk(os.path.join(root, layer)):
            for name in sorted(files):
                if not name.endswith(".h"):
                    continue
                header = os.path.relpath(os.path.join(folder, name), root)
                if header in public and header in internal:
                    found.append(f"{header}: listed internal, but <wick/wick.h> reaches it")
                elif header not in public and header not in internal:
                    found.append(f"{header}: neither reachable from <wick/wick.h> nor listed in "
                                 "cmake/internal_headers.txt")
    for header in sorted(internal):
        if not os.path.exists(os.path.join(root, header)):
            found.append(f"cmake/internal_headers.txt lists {header}, which does not exist")
    return found


def write(root, path, text):
    os.makedirs(os.path.dirname(os.path.join(root, path)), exist_ok=True)
    with open(os.path.join(root, path), "w") as f:
        f.write(text)


def self_test():
    with tempfile.TemporaryDirectory() as root:
        write(root, "tensor/a.h", "#pragma once\n")
        write(root, "tensor/f.cpp", "#include <wick/tensor/a.h>\n")
        write(root, "nn/f.cpp", "#include <wick/autograd/v.h>\n#include <wick/optim/sgd.h>\n")
        write(root, "kernels/cpu/f.cpp", '#include "kernels/cpu/x.h"\n#include "train/loop.h"\n')
        write(root, "nn/public.h", "#include <wick/nn/hidden.h>\n")
        write(root, "nn/hidden.h", "#pragma once\n")
        write(root, "nn/stray.h", "#pragma once\n")
        write(root, "cmake/wick.h.in", "#include <wick/tensor/a.h>\n#include <wick/nn/public.h>\n")
        write(root, "cmake/internal_headers.txt", "# internal\nnn/hidden.h\nnn/gone.h\n")
        found = violations(root) + header_violations(root)
    expected = ["nn/f.cpp:2: nn/ may not include optim/", "kernels/cpu/f.cpp:2: kernels/ may not include train/",
                "nn/hidden.h: listed internal, but", "nn/stray.h: neither reachable",
                "cmake/internal_headers.txt lists nn/gone.h"]
    for e in expected:
        if not any(v.startswith(e) for v in found):
            print(f"check_layers self-test: missed '{e}'; found {found}")
            return 1
    if len(found) != len(expected):
        print(f"check_layers self-test: expected {len(expected)} findings, found {found}")
        return 1
    print(f"check_layers self-test: all {len(expected)} planted faults found, nothing else")
    return 0


def main():
    if sys.argv[1:] == ["--self-test"]:
        return self_test()
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    found = violations(root) + header_violations(root)
    for v in found:
        print(v)
    if found:
        print(f"{len(found)} problem(s): see docs/DESIGN.md, 'Layers'")
        return 1
    print("layers: every include points down; every header is public or listed internal")
    return 0


if __name__ == "__main__":
    sys.exit(main())
