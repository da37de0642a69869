#!/usr/bin/env python3
"""torch.optim.lr_scheduler.OneCycleLR's lr and momentum at each step, from its formulas
(no PyTorch needed): the phases and the annealing as its get_lr computes them, in Python
floats. Prints the rows that tests/optim/lr_scheduler_cyclic_and_composed_test.cpp holds as
literals (OneCycleLR.TrajectoryMatchesPyTorchsFormulas):

    python3 tests/optim/one_cycle_reference.py
"""
import math


def phases(total, pct_start, three_phase):
    # (end_step, lr from, lr to, momentum from, momentum to), as torch's _schedule_phases.
    if three_phase:
        return [(float(pct_start * total) - 1, "initial", "max", "max_m", "base_m"),
                (float(2 * pct_start * total) - 2, "max", "initial", "base_m", "max_m"),
                (total - 1, "initial", "min", "max_m", "max_m")]
    return [(float(pct_start * total) - 1, "initial", "max", "max_m", "base_m"),
            (total - 1, "max", "min", "base_m", "max_m")]


def anneal(strategy, start, end, pct):
    if strategy == "cos":
        return end + (start - end) / 2.0 * (math.cos(math.pi * pct) + 1)
    return (end - start) * pct + start


def trajectory(max_lr, total, pct_start=0.3, strategy="cos", three_phase=False, div_factor=25.0,
               final_div_factor=1e4, base_m=0.85, max_m=0.95):
    """[(lr, momentum)] for steps 0..total, or the step where torch divides by zero."""
    initial = max_lr / div_factor
    level = {"initial": initial, "max": max_lr, "min": initial / final_div_factor,
             "max_m": max_m, "base_m": base_m}
    out = []
    for step in range(total + 1):
        start = 0.0
        ps = phases(total, pct_start, three_phase)
        for i, (end, lr_from, lr_to, m_from, m_to) in enumerate(ps):
            if step <= end or i == len(ps) - 1:
                try:
                    pct = (step - start) / (end - start)
                except ZeroDivisionError:
                    return out, step
                out.append((anneal(strategy, level[lr_from], level[lr_to], pct),
                            anneal(strategy, level[m_from], level[m_to], pct)))
                break
            start = end
    return out, None


CASES = [
    # max_lr, total, pct_start, strategy, three_phase
    (1.0, 10, 0.3, "cos", False),
    (1.0, 10, 0.3, "linear", False),
    (0.1, 12, 0.25, "cos", True),
    (0.1, 12, 0.25, "linear", True),
    (2.0, 10, 0.05, "cos", False),   # the first phase ends before step 0
    (2.0, 10, 0.0, "linear", False),  # pct_start 0
    (1.0, 10, 0.6, "cos", True),     # the second phase ends past the third
    (1.0, 1, 0.3, "cos", False),     # a single step
    (1.0, 10, 0.1, "cos", False),    # the first phase has no length: raises at step 0
    (1.0, 10, 1.0, "linear", False),  # raises at step 10
]

if __name__ == "__main__":
    for max_lr, total, pct, strategy, three in CASES:
        traj, fails = trajectory(max_lr, total, pct, strategy, three)
        print(f"max_lr={max_lr} total={total} pct_start={pct} {strategy} three_phase={three} "
              f"raises_at={fails}")
        print("  lr:", ", ".join(repr(lr) for lr, _ in traj))
        print("  momentum:", ", ".join(repr(m) for _, m in traj))
