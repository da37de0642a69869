#!/usr/bin/env python3
"""Fails when a layer includes a header of a layer above it (docs/DESIGN.md, "Layers").

Every #include of another layer's header (<wick/LAYER/...> or "LAYER/...") in a layer's
folder must name a layer that folder may see. cudasim/ (the CUDA simulator) sees no layer.

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


def self_test():
    with tempfile.TemporaryDirectory() as root:
        for layer, text in [("tensor", '#include <wick/tensor/a.h>\n'),
                            ("nn", '#include <wick/autograd/v.h>\n#include <wick/optim/sgd.h>\n'),
                            ("kernels/cpu", '#include "kernels/cpu/x.h"\n#include "train/loop.h"\n')]:
            os.makedirs(os.path.join(root, layer))
            with open(os.path.join(root, layer, "f.cpp"), "w") as f:
                f.write(text)
        found = violations(root)
    expected = ["nn/f.cpp:2: nn/ may not include optim/", "kernels/cpu/f.cpp:2: kernels/ may not include train/"]
    for e in expected:
        if not any(v.startswith(e) for v in found):
            print(f"check_layers self-test: missed '{e}'; found {found}")
            return 1
    if len(found) != len(expected):
        print(f"check_layers self-test: expected {len(expected)} violations, found {found}")
        return 1
    print("check_layers self-test: both upward includes caught, nothing else")
    return 0


def main():
    if sys.argv[1:] == ["--self-test"]:
        return self_test()
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    found = violations(root)
    for v in found:
        print(v)
    if found:
        print(f"{len(found)} upward include(s): see docs/DESIGN.md, 'Layers'")
        return 1
    print("layers: every include points down")
    return 0


if __name__ == "__main__":
    sys.exit(main())
