#!/usr/bin/env python3
"""Runs tg-remat's auto policy with the exact solver (CBC) and the min-cut
on one step at activation budgets spread from the least to all the bytes
the backward reads, and checks the min-cut's added FLOPs are within 1% of
the exact optimum (or TOLERANCE) at each:
compare_solvers.py tg-opt step.mlir [BUDGETS [TOLERANCE]]."""
import re
import struct
import subprocess
import sys

tg_opt, step = sys.argv[1], sys.argv[2]
steps = int(sys.argv[3]) if len(sys.argv) > 3 else 10
tolerance = float(sys.argv[4]) if len(sys.argv) > 4 else 0.01


def remat(budget, solver):
    pipeline = ("builtin.module(func.func(tg-remat{remat=auto "
                f"activation-budget={budget} solver={solver}}}))")
    out = subprocess.run([tg_opt, step, "--pass-pipeline=" + pipeline],
                         check=True, capture_output=True, text=True).stdout
    record = re.search(r"@train_step.*?tg\.remat = \{([^}]*)\}", out).group(1)

    def field(key):
        value = re.search(key + r" = ([^ ,]+)", record).group(1)
        if value.startswith("0x"):
            return struct.unpack(">d", bytes.fromhex(value[2:]))[0]
        return float(value)

    return field("added_flops"), field("kept_bytes"), field("kept_bytes_before"), field("min_kept_bytes")


_, _, most, least = remat(1 << 62, "min-cut")
worst = 0.0
for i in range(1, steps):
    budget = int(least + (most - least) * i / steps)
    exact, kept_exact, _, _ = remat(budget, "exact")
    heuristic, kept, _, _ = remat(budget, "min-cut")
    assert kept <= budget and kept_exact <= budget, (budget, kept, kept_exact)
    gap = (heuristic - exact) / max(exact, 1.0)
    worst = max(worst, gap)
    print(f"budget {budget}: exact {exact:.6g} min-cut {heuristic:.6g} gap {100 * gap:.3f}%")
print(f"min-cut within {100 * tolerance:g}% of the exact optimum"
      if worst <= tolerance else
      f"MIN-CUT {100 * worst:.2f}% WORSE THAN THE OPTIMUM")
