"""Writes a checkpoint under each mesh and resumes it under each mesh: every
resumed run must continue the uninterrupted run's loss curve.

usage: resume_grid.py --mpirun CMD --data FILE --model JSON --out DIR
           --batch N --stop S --steps T [--run-flags "..."]
           [--pairs ring|star|all] --reference LABEL LABEL:PROCS:TGC_FLAGS ...

Each LABEL:PROCS:TGC_FLAGS is compiled with `tgc MODEL TGC_FLAGS` (once
for labels with the same flags) and run
under `CMD -np PROCS` (one process without CMD when PROCS is 1), always with
the global --batch-size N, so that the meshes differ in micro-batch size,
accumulation and data replicas but not in the steps they take. The
reference mesh trains T steps uninterrupted from the seed's weights. Every
mesh trains S steps and writes a checkpoint, and other meshes resume it and
train to step T:
  ring (the default): each mesh's checkpoint resumed by the next mesh in
        the list (the last's by the first), so every mesh writes and reads
        once, always across meshes;
  star: the ring, and the reference mesh resumes every checkpoint and every
        mesh resumes the reference's;
  all:  every mesh resumes every checkpoint (N x N runs).
Prints one line per pair ("dp2 -> one: 3 steps agree") and exits 1 when a
loss differs from the reference's by more than 1e-5 relative, or when a run
fails.
"""
import argparse, json, os, shlex, subprocess, sys


def run(cmd):
    done = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          text=True)
    if done.returncode != 0:
        sys.stdout.write(done.stdout)
        raise SystemExit("failed (%d): %s" % (done.returncode, " ".join(cmd)))
    return done.stdout


def losses(path):
    with open(path) as f:
        return {e["step"]: e["loss"] for e in map(json.loads, f) if "loss" in e}


def main():
    p = argparse.ArgumentParser()
    for flag in ["--mpirun", "--data", "--model", "--out", "--run-flags",
                 "--reference"]:
        p.add_argument(flag, default="")
    p.add_argument("--pairs", choices=["ring", "star", "all"], default="ring")
    for flag in ["--batch", "--stop", "--steps"]:
        p.add_argument(flag, type=int, required=True)
    p.add_argument("meshes", nargs="+")
    a = p.parse_args()
    os.makedirs(a.out, exist_ok=True)
    meshes, built = {}, {}
    for spec in a.meshes:
        label, procs, flags = spec.split(":", 2)
        # Labels with the same flags run one executable (an elastic mesh on
        # several process counts).
        if flags not in built:
            built[flags] = os.path.join(a.out, label)
            run(["tgc", a.model, "-o", built[flags], "--opt-level=1"] +
                shlex.split(flags))
        meshes[label] = (int(procs), built[flags])

    def launch(label, extra):
        procs, exe = meshes[label]
        cmd = [exe, "--data", a.data, "--batch-size", str(a.batch),
               "--threads", "1", "--quiet"] + shlex.split(a.run_flags) + extra
        if procs > 1:
            cmd = shlex.split(a.mpirun) + ["-np", str(procs)] + cmd
        return run(cmd)

    reference = os.path.join(a.out, "reference.jsonl")
    launch(a.reference, ["--steps", str(a.steps), "--log", reference])
    want = {s: l for s, l in losses(reference).items() if s > a.stop}
    labels = list(meshes)
    if a.reference not in meshes:
        raise SystemExit("--reference %s names none of the meshes" % a.reference)

    def readers(writer):
        if a.pairs == "all":
            return labels
        ring = labels[(labels.index(writer) + 1) % len(labels)]
        if a.pairs == "ring":
            return [ring]
        star = labels if writer == a.reference else [a.reference]
        return [r for r in labels if r == ring or r in star]

    failed = False
    for writer in meshes:
        ckpt = os.path.join(a.out, "ckpt-" + writer)
        launch(writer, ["--steps", str(a.stop), "--checkpoint-dir", ckpt])
        # The newest checkpoint: a file on one process, a directory on more.
        path = os.path.join(ckpt, sorted(os.listdir(ckpt))[-1])
        for reader in readers(writer):
            log = os.path.join(a.out, "%s-%s.jsonl" % (writer, reader))
            launch(reader, ["--steps", str(a.steps), "--resume", path,
                            "--log", log])
            got = losses(log)
            bad = [s for s in sorted(want) if s not in got or
                   abs(got[s] - want[s]) > 1e-5 * max(abs(want[s]), 1e-6)]
            if bad or set(got) != set(want):
                failed = True
                for s in bad[:3]:
                    print("%s -> %s: step %d: %r vs %r" %
                          (writer, reader, s, got.get(s), want[s]))
                print("%s -> %s: DIFFERENT" % (writer, reader))
            else:
                print("%s -> %s: %d steps agree" % (writer, reader, len(got)))
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
