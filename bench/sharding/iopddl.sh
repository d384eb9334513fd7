#!/usr/bin/env bash
# The IOPDDL contest benchmark (ASPLOS/EuroSys 2025, google/iopddl): for each
# instance in IOPDDL_DIR, tg-shard-solve runs within the instance's contest
# time limit (reference.csv's time_limit_s, less a margin for start-up and
# reading the file), the contest's evaluate.py scores the solution, and the
# cost is compared with the best contest entry's and with XLA's own solver's.
# Ends with the geometric mean of cost / best contest cost.
#
#   bench/sharding/iopddl.sh [INSTANCE...]     (default: all in reference.csv)
#
# Environment: IOPDDL_DIR (default ../shared/iopddl from the repository
# root), BUILD_DIR (default build), MARGIN_S (default 3), SEED (default 0),
# SOLVER_FLAGS (extra tg-shard-solve flags), TIME_SCALE (default 1: a
# fraction of each time limit, for quick runs while developing).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
data=${IOPDDL_DIR:-$root/../shared/iopddl}
build=${BUILD_DIR:-$root/build}
margin=${MARGIN_S:-3}
scale=${TIME_SCALE:-1}
seed=${SEED:-0}
if [[ ! -f $data/reference.csv ]]; then
  echo "iopddl.sh: no reference.csv in $data (set IOPDDL_DIR)" >&2
  exit 1
fi
if [[ ! -x $build/bin/tg-shard-solve || -f $build/build.ninja ]]; then
  [[ -f $build/build.ninja ]] || cmake -G Ninja -S "$root" -B "$build"
  ninja -C "$build" tg-shard-solve >&2
fi
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

python3 - "$data" "$build/bin/tg-shard-solve" "$out" "$margin" "$scale" "$seed" \
  "${SOLVER_FLAGS:-}" "$@" <<'PY'
import csv, math, os, shlex, subprocess, sys, time
data, solver, out, margin, scale, seed, flags = sys.argv[1:8]
only = set(sys.argv[8:])
ratios = []
with open(os.path.join(data, "reference.csv")) as f:
    rows = [r for r in csv.DictReader(f) if not only or r["instance"] in only]
for row in rows:
    name = row["instance"]
    problem = os.path.join(data, name + ".json.gz")
    solution = os.path.join(out, name + ".json")
    limit = max(1.0, float(row["time_limit_s"]) * float(scale) - float(margin))
    start = time.monotonic()
    run = subprocess.run([solver, problem, "--time-limit", "%g" % limit,
                          "-o", solution, "--seed", seed] + shlex.split(flags),
                         capture_output=True, text=True)
    seconds = time.monotonic() - start
    best = float(row["best_contest_cost"])
    xla = ("XLA ratio %.3f" % (float(row["xla_cost"]) / best)
           if row["xla_cost"] else "XLA: no valid plan")
    score = subprocess.run([sys.executable, os.path.join(data, "evaluate.py"),
                            problem, solution], capture_output=True, text=True)
    if run.returncode != 0 or score.returncode != 0:
        why = (score.stdout + run.stdout + run.stderr).strip().splitlines()
        print("%s: invalid (%s), best contest %d, %s, seconds %.1f"
              % (name, why[0] if why else "no output", best, xla, seconds),
              flush=True)
        ratios.append(float("inf"))
        continue
    cost = float(score.stdout.split()[1])
    ratio = cost / best
    ratios.append(ratio)
    method = run.stdout.rsplit("method ", 1)[-1].rsplit(",", 1)[0]
    print("%s: cost %d, best contest %d, ratio %.4f, %s, seconds %.1f (%s)"
          % (name, cost, best, ratio, xla, seconds, method), flush=True)
if ratios:
    geomean = math.exp(sum(math.log(r) for r in ratios) / len(ratios))
    print("geometric mean of cost / best contest cost over %d instances: %.4f"
          % (len(ratios), geomean))
PY
