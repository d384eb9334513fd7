#!/usr/bin/env bash
# Plans large models on large simulated clusters with tgc --auto-shard and
# compares each plan with Megatron-LM's published configuration of that size,
# as tgc's cost model prices both (compute roofline + ring alpha-beta
# collectives from planning/cost/clusters/h100-sxm-8.json, gradient
# buckets overlapped with compute, pipeline stages as tgc builds them: the
# split's chunk functions under the schedule's action lists, each stage's
# memory as --report=memory plans it).
#
#   bench/sharding/scale.sh [--out DIR] [--cases "gpt2-124m gpt3-6.7b ..."]
#                           [--tp "1 2 4 8"] [--pp "1 2 4 8"]
#
# Builds tgc if build/bin/tgc is missing (BUILD=dir to use another build),
# writes the model files with bench/sharding/gen_models.py into DIR/models
# (default build/scale), and for each case and each mesh data x tp x pp
# (tp in --tp, pp pipeline stages in --pp, data = devices / (tp x pp); with
# stages, tp in --tp that is at least 2, no more stages than layers, and
# the layers interleaved one per chunk where they divide, as NeMo's
# configurations set it "to maximum"; INTERLEAVE=0 keeps one chunk per
# stage) runs
#
#   tgc MODEL --mesh=data=D,tp=T [--pipeline-stages=P --virtual-stages=V]
#       --batch-size=M --grad-accum=K --cluster=h100-sxm-8 --target=cuda --auto-shard
#       --report=sharding --report-json=...
#
# with the case's global batch G split as G = D x M x K: M = G / D first (one
# micro-batch per step; with stages the largest M that leaves K >= 4 P, as
# a pipeline needs micro-batches to fill it), halved while the solver finds
# no plan that fits or the plan it finds does not fit the device once
# compiled (with stages, halved on down to 1 whatever fits, as smaller
# micro-batches also shrink the bubble). tgc's report
# prices the global batch's step: @forward_backward on K - 1 micro-batches
# and @train_step (the last one, its gradient sync and the update) once,
# as tgc's executable runs them.
#
# Every mesh is tried without and with --remat=full (tg-remat's full
# recomputation, which tg-auto-shard prices), each from the largest
# micro-batch down. Megatron's configuration is the report's "tp x dp",
# "tp+sp x dp" and "megatron" (tp+sp with the distributed optimizer) rows
# (the fastest; "dp" where its TP is 1) on Megatron's mesh (its TP and
# pipeline stages, virtual stages included) at Megatron's published
# micro-batch, without and with recomputation (Megatron-LM recomputes
# activations too), the faster that fits; those runs' plans are tgc's tries
# too. The best plan is the fitting try with the lowest step. The solver alone is AutoShardPass's wall time in the run's
# --mlir-timing report (a separate --compile-to=sharding run would run
# AutoShardPass twice).
#
# Where no mesh has a plan that fits, every mesh without stages is planned again at micro-batch 1 with
# --memory-limit=1000000GB so that the step times still compare; the table
# says "no memory limit" and "does not fit".
#
# Each tgc run's stdout/stderr is kept in DIR/logs; DIR/scale.json has every
# number the table prints. One tgc at a time, under nice.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=${BUILD:-$ROOT/build}
OUT=$BUILD/scale
CASES="gpt2-124m gpt3-6.7b llama2-70b gpt3-175b"
TPS="1 2 4 8"
PPS="1 2 4 8"
while [ $# -gt 0 ]; do
  case $1 in
    --out) OUT=$2; shift 2 ;;
    --cases) CASES=$2; shift 2 ;;
    --tp) TPS=$2; shift 2 ;;
    --pp) PPS=$2; shift 2 ;;
    -h|--help) sed -n "2,$(( $(grep -n "^set -euo" "$0" | cut -d: -f1) - 1 ))p" "$0"; exit 0 ;;
    *) echo "scale.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done

if [ ! -x "$BUILD/bin/tgc" ]; then
  echo "== building tgc in $BUILD"
  [ -f "$BUILD/build.ninja" ] || cmake -G Ninja -S "$ROOT" -B "$BUILD"
  nice ninja -C "$BUILD" tgc
fi
mkdir -p "$OUT/models" "$OUT/logs"
# A private copy, so that a rebuild of build/bin/tgc during the run (others
# share the tree) neither breaks nor mixes the runs.
TGC=$OUT/tgc
cp "$BUILD/bin/tgc" "$TGC"
echo "== tgc: $BUILD/bin/tgc of $(date -u -r "$BUILD/bin/tgc" +%FT%TZ), tree at $(git -C "$ROOT" rev-parse --short HEAD)$(git -C "$ROOT" diff --quiet HEAD -- compiler passes tools dialects frontend || echo ' + uncommitted changes')"
python3 "$ROOT/bench/sharding/gen_models.py" "$OUT/models" --check
cp "$ROOT/examples/gpt2-124m.json" "$OUT/models/gpt2-124m.json"

export ROOT TGC OUT CASES TPS PPS
exec python3 - <<'EOF'
import json, os, subprocess, sys, time

TGC, OUT = os.environ["TGC"], os.environ["OUT"]
CLUSTER = "h100-sxm-8"
with open(os.path.join(os.environ["ROOT"], "compiler", "cost", "clusters",
                       CLUSTER + ".json")) as f:
    spec = json.load(f)["device"]
DEVICE = spec["name"].replace("NVIDIA ", "")
DEVICE_MEMORY = spec["memory_bytes"]  # the limit tgc plans under by default
UNLIMITED = "1000000GB"
INTERLEAVE = os.environ.get("INTERLEAVE", "1") == "1"

# name: devices, global batch (sequences), layers, Megatron's TP, pipeline
# stages (pp; vp virtual) and micro-batch, its source.
CASES = {
    "gpt2-124m": dict(devices=8, batch=512, layers=12, tp=1, pp=1, vp=1,
                      micro=4, seq=1024, megatron=(
        "NeMo-Framework-Launcher gpt3/126m.yaml: TP 1, PP 1, micro-batch 4, "
        "global batch 256 x 2048 tokens (here 512 x 1024, llm.c's 524288 "
        "tokens)")),
    "gpt3-6.7b": dict(devices=64, batch=512, layers=32, tp=2, pp=1, vp=1,
                      micro=1, seq=2048, megatron=(
        "NeMo-Framework-Launcher gpt3/7b_improved.yaml (32 layers, 4096, "
        "32 heads): TP 2, PP 1, micro-batch 1, global batch 512")),
    "llama2-70b": dict(devices=512, batch=2048, layers=80, tp=4, pp=4, vp=20,
                       micro=1, seq=4096, megatron=(
        "NeMo-Framework-Launcher llama/llama2_70b.yaml: TP 4, PP 4 (virtual "
        "20), SP, micro-batch 1, global batch 2048, 1024 GPUs")),
    "gpt3-175b": dict(devices=1024, batch=2048, layers=96, tp=4, pp=8, vp=12,
                      micro=1, seq=2048, megatron=(
        "NeMo-Framework-Launcher gpt3/175b.yaml (commit 056a90e): TP 4, PP 8 "
        "(virtual 12), SP, distributed optimizer, micro-batch 1, global "
        "batch 2048, 128 nodes x 8")),
}


def run(cmd, log):
    t0 = time.monotonic()
    with open(log + ".out", "w") as out, open(log + ".err", "w") as err:
        rc = subprocess.call(["nice"] + cmd, stdout=out, stderr=err)
    wall = time.monotonic() - t0
    error = []
    if rc:
        # The first error and its indented detail lines (tgc's "no plan
        # fits" lists what each plan needs).
        with open(log + ".err", errors="replace") as f:
            for line in f:
                if error and not line.startswith("  "):
                    break
                if error or "error:" in line:
                    error.append(line.strip()[:300])
    return rc, wall, "; ".join(error[:8])


def solver_seconds(log):
    """AutoShardPass's wall seconds in --mlir-timing's report (stderr)."""
    total = None
    with open(log + ".err", errors="replace") as f:
        for line in f:
            words = line.split()
            if len(words) == 7 and words[-1] == "AutoShardPass":
                total = (total or 0.0) + float(words[3])
    return total


def gb(x):
    return "%.1f" % (x / 1e9)


def ms(x):
    return "%.0f" % (x * 1e3)


def preset(plan):
    """"auto-shard: preset dp, as the solver's plan is slower": the chosen
    plan is that preset, named as the report's rows name it (--shard=tp is
    the row "tp x dp", sp "tp+sp x dp")."""
    prefix = "auto-shard: preset "
    if not plan.startswith(prefix):
        return plan
    name = plan.split(",")[0][len(prefix):]
    return {"tp": "tp x dp", "sp": "tp+sp x dp"}.get(name, name)


def megatron_row(report, tp):
    """Megatron's configuration on its mesh: the fastest of tp x dp, tp+sp x
    dp and megatron (tp+sp with the distributed optimizer) that fits, else
    the fastest; dp when its TP is 1."""
    names = ["dp"] if tp == 1 else ["tp x dp", "tp+sp x dp", "megatron"]
    rows = [r for r in [report["chosen"]] + report.get("compared", [])
            if preset(r.get("plan", "")) in names and "step_seconds" in r]
    return min(rows, key=lambda r: (r["memory_bytes"] > DEVICE_MEMORY,
                                    r["step_seconds"])) if rows else None


def mesh_name(data, tp, pp=1, vp=1):
    return "data=%d,tp=%d%s%s" % (data, tp, ",pp=%d" % pp if pp > 1 else "",
                                  " (%d virtual)" % vp if vp > 1 else "")


def plan_mesh(name, case, tp, limit=None, micro=1, once=False, remat=False,
              pp=1, vp=1):
    data = case["devices"] // (tp * pp)
    if case["batch"] % data or case["devices"] % (tp * pp):
        print("  mesh %s: skipped, global batch %d is not a multiple of "
              "data=%d" % (mesh_name(data, tp, pp, vp), case["batch"], data))
        return None
    per_replica = case["batch"] // data
    # Without a limit (the fall-backs below) or once: the largest divisor of
    # the replica's batch up to the given micro-batch. With pipeline stages:
    # at least 4 micro-batches per stage.
    if limit is None and not once:
        micro = max(per_replica // (4 * pp if pp > 1 else 1), 1)
        micro = next(m for m in range(micro, 0, -1) if per_replica % m == 0)
    else:
        micro = next(m for m in range(min(micro, per_replica), 0, -1)
                     if per_replica % m == 0)
    tries = []
    while True:
        accum = per_replica // micro
        tag = "%s.data%d.tp%d%s.m%d%s%s" % (
            name, data, tp, ".pp%dv%d" % (pp, vp) if pp > 1 else "", micro,
            "" if limit is None else ".nolimit", ".remat" if remat else "")
        rjson = os.path.join(OUT, "logs", tag + ".json")
        cmd = [TGC, os.path.join(OUT, "models", name + ".json"),
               "--mesh=data=%d,tp=%d" % (data, tp), "--batch-size=%d" % micro,
               "--grad-accum=%d" % accum, "--cluster=" + CLUSTER,
               "--target=cuda", "--auto-shard", "--report=sharding",
               "--report-json=" + rjson, "--mlir-timing"]
        if limit is not None:
            cmd.append("--memory-limit=" + limit)
        if remat:
            cmd.append("--remat=full")
        if pp > 1:
            cmd += ["--pipeline-stages=%d" % pp, "--virtual-stages=%d" % vp]
        if os.path.exists(rjson):
            os.remove(rjson)
        rc, wall, error = run(cmd, os.path.join(OUT, "logs", tag))
        attempt = dict(data=data, tp=tp, pp=pp, vp=vp, micro=micro,
                       accum=accum, rc=rc,
                       unlimited=limit is not None, remat=remat,
                       wall=wall, error=error,
                       solver_wall=solver_seconds(
                           os.path.join(OUT, "logs", tag)),
                       cmd=" ".join(cmd))
        if rc == 0:
            with open(rjson) as f:
                r = json.load(f)
            c = r["chosen"]
            attempt.update(plan=c["plan"], step=c["step_seconds"],
                           micro_step=c["train_step_seconds"],
                           memory=c["memory_bytes"],
                           fits=c["memory_bytes"] <= DEVICE_MEMORY,
                           limit=DEVICE_MEMORY, mfu=r["mfu"],
                           solver=r.get("solver", {}))
            meg = (megatron_row(r, case["tp"])
                   if (tp, pp, vp) == (case["tp"], case["pp"], case["vp"])
                   else None)
            if meg:
                attempt["megatron"] = dict(
                    plan=preset(meg["plan"]), step=meg["step_seconds"],
                    memory=meg["memory_bytes"],
                    fits=meg["memory_bytes"] <= DEVICE_MEMORY)
            attempt["compared"] = [
                dict(plan=x.get("plan"), step=x.get("step_seconds"),
                     memory=x.get("memory_bytes"), verdict=x.get("verdict"))
                for x in r.get("compared", [])]
        tries.append(attempt)
        if rc == 0:
            print("  mesh %s micro %d x %d%s: %.1f s (solver %s s), "
                  "plan %s, step %s ms (micro-step %s ms), MFU %.1f%%, memory %s GB%s"
                  % (mesh_name(data, tp, pp, vp), micro, accum,
                     (" no memory limit" if limit else "") +
                     (" remat full" if remat else ""), wall,
                     "%.1f" % attempt["solver_wall"]
                     if attempt["solver_wall"] is not None else "?",
                     attempt["plan"], ms(attempt["step"]),
                     ms(attempt["micro_step"]), 100 * attempt["mfu"],
                     gb(attempt["memory"]),
                     "" if attempt["fits"] else " (does not fit)"))
        else:
            print("  mesh %s micro %d x %d%s: %.1f s, tgc exit %d: %s"
                  % (mesh_name(data, tp, pp, vp), micro, accum,
                     (" no memory limit" if limit else "") +
                     (" remat full" if remat else ""), wall, rc, error))
        # With stages, smaller micro-batches also shrink the bubble: go on
        # down to 1 and let the fastest count.
        if (((rc == 0 and attempt["fits"]) and pp == 1) or micro == 1 or
                limit is not None or once):
            break
        if rc != 0 and "fits" not in error:
            break  # an error other than memory: smaller batches won't help
        micro = next(m for m in range(micro // 2, 0, -1)
                     if per_replica % m == 0)
    return tries


results = {}
for name in os.environ["CASES"].split():
    case = CASES[name]
    print("== %s on %d x %s, global batch %d x %d" % (
        name, case["devices"], DEVICE, case["batch"], case["seq"]),
        flush=True)
    tries = []
    for pp in [int(p) for p in os.environ["PPS"].split()]:
        if pp > case["layers"]:
            continue
        for tp in [int(t) for t in os.environ["TPS"].split()]:
            if case["devices"] % (tp * pp) or (pp > 1 and tp < 2):
                continue
            # With stages, as many virtual stages as the layers allow (one
            # layer per chunk where they divide): the smallest bubble.
            vp = case["layers"] // pp if pp > 1 and INTERLEAVE else 1
            for remat in (False, True):
                tries += plan_mesh(name, case, tp, remat=remat, pp=pp,
                                   vp=vp) or []
                sys.stdout.flush()
    # Megatron's mesh at its micro-batch, without and with recomputation:
    # its configuration's row, and plans of tgc's as any other try.
    megatron_tries = []
    for remat in (False, True):
        megatron_tries += plan_mesh(name, case, case["tp"],
                                    micro=case["micro"], once=True,
                                    remat=remat, pp=case["pp"],
                                    vp=case["vp"]) or []
    tries += megatron_tries
    ok = [t for t in tries if t["rc"] == 0]
    fitting = [t for t in ok if t["fits"]]
    if not fitting:
        # Nothing fits the device (tgc does not price pipeline stages):
        # plan micro-batch 1 on every mesh without a memory limit, so that
        # the step times can still be compared; the table marks the memory
        # as not fitting.
        print("  no plan fits %.1f GB on any mesh: micro-batch 1 without a "
              "memory limit" % (DEVICE_MEMORY / 1e9), flush=True)
        for tp in [int(t) for t in os.environ["TPS"].split()]:
            if case["devices"] % tp == 0:
                tries += plan_mesh(name, case, tp, UNLIMITED) or []
        ok = [t for t in tries if t["rc"] == 0 and t["unlimited"]]
    best = min(fitting or ok, key=lambda t: t["step"]) if ok else None
    # Megatron's row: the faster of its plans without and with
    # recomputation that fits, else the faster.
    meg = [t for t in megatron_tries + ok if "megatron" in t and
           t["micro"] == case["micro"]]
    meg = min(meg, key=lambda t: (not t["megatron"]["fits"],
                                  t["megatron"]["step"])) if meg else None
    if best and not meg:
        # No plan fits on Megatron's mesh at its micro-batch, so tgc priced
        # none there: its presets without a memory limit.
        print("  Megatron's mesh (tp=%d) has no report: its plans without a "
              "memory limit" % case["tp"], flush=True)
        extra = plan_mesh(name, case, case["tp"], UNLIMITED,
                          case["micro"], once=True, pp=case["pp"],
                          vp=case["vp"]) or []
        tries += extra
        meg = [t for t in extra if "megatron" in t]
        meg = meg[-1] if meg else None
    entry = dict(case, tries=tries, best=best, megatron_try=meg)
    results[name] = entry

with open(os.path.join(OUT, "scale.json"), "w") as f:
    json.dump(results, f, indent=1)

print()
print("| case | mesh (micro x accum) | search s (solver; all tries) | step ms "
      "| MFU | memory GB of limit | Megatron config as tgc models it "
      "| step ms | memory GB | ratio |")
print("|---|---|---|---|---|---|---|---|---|---|")
for name, e in results.items():
    b = e["best"]
    if not b:
        print("| %s on %d x %s | no plan (every try failed) | | | | | | | | |"
              % (name, e["devices"], DEVICE))
        continue
    m = e["megatron_try"]
    mrow = m["megatron"] if m else None
    total = sum(t["wall"] for t in e["tries"])
    print("| %s on %d x %s | %s (%d x %d)%s | %.1f (%s; all meshes %.0f) | %s | "
          "%.1f%% | %s of %s%s | TP=%d PP=%d%s %s (data=%d, %d x %d%s) | %s | %s%s "
          "| %s |" % (
              name, e["devices"], DEVICE,
              mesh_name(b["data"], b["tp"], b.get("pp", 1), b.get("vp", 1)),
              b["micro"],
              b["accum"], (" no memory limit" if b["unlimited"] else "") +
              (", remat full" if b.get("remat") else ""),
              b["wall"],
              "%.1f" % b["solver_wall"] if b["solver_wall"] is not None
              else "?", total,
              ms(b["step"]), 100 * b["mfu"], gb(b["memory"]), gb(b["limit"]),
              "" if b["fits"] else " (does not fit)", e["tp"], e["pp"],
              " (%d virtual)" % e["vp"] if e["vp"] > 1 else "",
              mrow["plan"] if mrow else "-", m["data"] if m else 0,
              m["micro"] if m else 0, m["accum"] if m else 0,
              ", remat full" if m and m.get("remat") else "",
              ms(mrow["step"]) if mrow else "-",
              gb(mrow["memory"]) if mrow else "-",
              "" if not mrow or mrow["fits"] else " (does not fit)",
              "%.2f" % (b["step"] / mrow["step"]) if mrow else "-"))
print()
print("step: the global batch's step (@forward_backward x (accum - 1) + "
      "@train_step; with pp stages as built: the stage that finishes last, "
      "its chunks, its idle time and its update); search: wall "
      "seconds of the chosen mesh's tgc run (solver + the 6 plans compiled "
      "and priced), solver: AutoShardPass in its --mlir-timing, all tries: "
      "every tgc run of the case. Logs and commands: %s/logs, numbers: %s/scale.json"
      % (OUT, OUT))
EOF
