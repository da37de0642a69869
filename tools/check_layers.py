#!/usr/bin/env python3
"""The layers' shape (docs/DESIGN.md, "Layers"); fails on any of:

1. an upward include: every #include of another layer's header (<wick/LAYER/...>, or
   "kernels/..." for the kernels) in a layer's folder must name a layer that folder may
   see. The distributed layer's folders are layers of their own (comm/ below control/
   below data_parallel/ below pipeline/, which reduces its stages' gradients over replicas
   with the data-parallel reducer; all below distributed/'s own files). cudasim/
   (the CUDA simulator) sees no layer.
2. a header that is neither public nor internal: each header of the installed layers is
   either reachable from wick/wick.h (following <wick/...> includes) or listed in
   cmake/internal_headers.txt, never both (an internal header included by a public one
   would be missing from an install).
3. an include a reader cannot follow: every <wick/...> include anywhere in the tree names a
   file that is in the tree (no header made by the build, no link made at configure time).

    tools/check_layers.py [ROOT]      check the tree at ROOT (default: this checkout)
    tools/check_layers.py --self-test show that each kind of fault is caught
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
    "cudasim": set(),
}
BELOW_DISTRIBUTED = {"tensor", "kernels", "autograd", "nn", "optim", "data", "train"}
MAY_SEE["distributed/comm"] = BELOW_DISTRIBUTED
MAY_SEE["distributed/control"] = BELOW_DISTRIBUTED | {"distributed/comm"}
MAY_SEE["distributed/data_parallel"] = MAY_SEE["distributed/control"] | {"distributed/control"}
MAY_SEE["distributed/pipeline"] = MAY_SEE["distributed/data_parallel"] | {"distributed/data_parallel"}
MAY_SEE["distributed"] = MAY_SEE["distributed/pipeline"] | {"distributed/pipeline"}


def folder(layer):
    """Where a layer's sources are, relative to the root."""
    return layer if layer in ("kernels", "cudasim") else "wick/" + layer


INCLUDE = re.compile(r'^\s*#\s*include\s*(?:<wick/([a-z_]+(?:/[a-z_]+)*)/[a-z_0-9]+\.h>|"(kernels)/)')
SOURCES = (".h", ".cpp", ".cu", ".cuh")


def named_layer(path):
    """The layer an included path (after wick/) belongs to: the longest layer folder it is in."""
    best = None
    for layer in MAY_SEE:
        if (path == layer or path.startswith(layer + "/")) and (best is None or len(layer) > len(best)):
            best = layer
    return best


def layer_of(relpath):
    """The layer a file of the tree (relative to the root) belongs to, or None."""
    best = None
    for layer in MAY_SEE:
        top = folder(layer) + "/"
        if relpath.startswith(top) and (best is None or len(top) > len(folder(best)) + 1):
            best = layer
    return best


def source_files(root, tops):
    for top in tops:
        for dirpath, _, files in os.walk(os.path.join(root, top)):
            for name in sorted(files):
                if name.endswith(SOURCES):
                    path = os.path.join(dirpath, name)
                    yield os.path.relpath(path, root), path


def violations(root):
    found = []
    for rel, path in source_files(root, ["wick", "kernels", "cudasim"]):
        layer = layer_of(rel)
        if layer is None:
            continue
        with open(path, encoding="utf-8", errors="replace") as f:
            for number, line in enumerate(f, 1):
                m = INCLUDE.match(line)
                if not m:
                    continue
                target = named_layer(m.group(1) or m.group(2))
                if target is not None and target != layer and target not in MAY_SEE[layer]:
                    found.append(f"{rel}:{number}: {layer}/ may not include {target}/ ({line.strip()})")
    return found


INSTALLED = ("tensor", "autograd", "nn", "optim", "data", "train", "distributed")
WICK_INCLUDE = re.compile(r'^\s*#\s*include\s*<(wick/[a-z_0-9/]+\.h)>')


def includes(path):
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return [m.group(1) for m in map(WICK_INCLUDE.match, f) if m]
    except FileNotFoundError:
        return []


def header_violations(root):
    public, stack = set(), ["wick/wick.h"]
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
        for header, _ in source_files(root, [folder(layer)]):
            if not header.endswith(".h"):
                continue
            if header in public and header in internal:
                found.append(f"{header}: listed internal, but wick/wick.h reaches it")
            elif header not in public and header not in internal:
                found.append(f"{header}: neither reachable from wick/wick.h nor listed in cmake/internal_headers.txt")
    for header in sorted(internal):
        if not os.path.exists(os.path.join(root, header)):
            found.append(f"cmake/internal_headers.txt lists {header}, which does not exist")
    return found


def unfollowable_includes(root):
    found = []
    for rel, path in source_files(root, ["wick", "kernels", "tests", "bench", "examples", "fuzz", "tools"]):
        for number, header in enumerate(includes(path), 1):
            target = os.path.join(root, header)
            if not os.path.isfile(target) or os.path.islink(target):
                found.append(f"{rel}: includes <{header}>, which is not a file of the tree")
    return found


def check(root):
    return violations(root) + header_violations(root) + unfollowable_includes(root)


def write(root, path, text):
    os.makedirs(os.path.dirname(os.path.join(root, path)), exist_ok=True)
    with open(os.path.join(root, path), "w") as f:
        f.write(text)


def self_test():
    with tempfile.TemporaryDirectory() as root:
        write(root, "wick/tensor/a.h", "#pragma once\n")
        write(root, "wick/tensor/f.cpp", "#include <wick/tensor/a.h>\n")
        write(root, "wick/nn/f.cpp", "#include <wick/tensor/a.h>\n#include <wick/optim/sgd.h>\n")
        write(root, "wick/optim/sgd.h", "#pragma once\n")
        write(root, "kernels/cpu/f.cpp", '#include "kernels/cpu/x.h"\n#include <wick/train/loop.h>\n')
        write(root, "wick/train/loop.h", "#pragma once\n")
        write(root, "wick/distributed/comm/c.h", "#include <wick/distributed/control/s.h>\n")
        write(root, "wick/distributed/control/s.h", "#include <wick/distributed/comm/c.h>\n")
        write(root, "wick/nn/public.h", "#include <wick/nn/hidden.h>\n")
        write(root, "wick/nn/hidden.h", "#pragma once\n")
        write(root, "wick/nn/stray.h", "#pragma once\n")
        write(root, "tests/t.cpp", "#include <wick/nn/public.h>\n#include <wick/config.h>\n")
        write(root, "wick/wick.h", "#include <wick/tensor/a.h>\n#include <wick/nn/public.h>\n#include <wick/optim/sgd.h>\n"
              "#include <wick/train/loop.h>\n#include <wick/distributed/control/s.h>\n")
        write(root, "cmake/internal_headers.txt", "# internal\nwick/nn/hidden.h\nwick/nn/gone.h\n")
        found = check(root)
    expected = ["wick/nn/f.cpp:2: nn/ may not include optim/", "kernels/cpu/f.cpp:2: kernels/ may not include train/",
                "wick/distributed/comm/c.h:1: distributed/comm/ may not include distributed/control/",
                "wick/nn/hidden.h: listed internal, but", "wick/nn/stray.h: neither reachable",
                "cmake/internal_headers.txt lists wick/nn/gone.h", "tests/t.cpp: includes <wick/config.h>"]
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
    found = check(root)
    for v in found:
        print(v)
    if found:
        print(f"{len(found)} problem(s): see docs/DESIGN.md, 'Layers'")
        return 1
    print("layers: every include points down and names a file of the tree; every header is public or listed internal")
    return 0


if __name__ == "__main__":
    sys.exit(main())
