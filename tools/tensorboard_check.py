#!/usr/bin/env python3
"""Reads wick's TensorBoard event files with TensorBoard's own reader.

tensorboard_check.py DIR TAG[=COUNT]...  checks that TensorBoard's EventAccumulator finds
COUNT scalar points (at least one without =COUNT) of each TAG in DIR's event files (every
file holding "tfevents") and that their steps are distinct and increasing. Exits 77 (ctest's skip) when the tensorboard
Python package is not installed: wick needs it only for this check.
"""
import glob
import os
import sys

try:
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
except ImportError:
    print("tensorboard_check: the tensorboard Python package is not installed (pip install tensorboard); skipped")
    sys.exit(77)


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    folder = sys.argv[1]
    wanted = dict((arg.split("=") + [None])[:2] for arg in sys.argv[2:])
    found = {}
    for path in sorted(glob.glob(os.path.join(folder, "*tfevents*"))):
        acc = EventAccumulator(path, size_guidance={"scalars": 0})
        acc.Reload()
        for tag in acc.Tags()["scalars"]:
            found.setdefault(tag, []).extend(acc.Scalars(tag))
    failed = False
    for tag, count in wanted.items():
        points = found.get(tag, [])
        steps = [p.step for p in points]
        enough = len(points) > 0 if count is None else len(points) == int(count)
        ok = enough and steps == sorted(set(steps))
        expected = "at least 1" if count is None else count
        print(f"{tag}: {len(points)} points, steps {steps}" + ("" if ok else f"  (expected {expected}, distinct, increasing)"))
        failed |= not ok
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
