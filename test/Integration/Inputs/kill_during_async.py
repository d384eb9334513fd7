"""Kills a run that checkpoints asynchronously at seeded random moments and
checks that what it leaves always resumes.

usage: kill_during_async.py EXE OUT KILLS SEED -- RUN_FLAGS...

The run trains with --checkpoint-async --checkpoint-every 1; after a random
delay the driver waits for a write in flight (a temporary file or partial
directory in the checkpoint directory) and sends SIGKILL at once, so each
kill lands at a random point of some write.
The newest checkpoint of its directory must then resume (--resume DIR) and
take the next step with the loss the uninterrupted run (trained first,
with --log) has at that step, bit for bit. Prints one summary line and
exits 1 on the first kill that leaves no resumable checkpoint or a wrong
one.
"""
import json, os, random, shutil, signal, subprocess, sys, time


def losses(path):
    with open(path) as f:
        return {e["step"]: e["loss"] for e in map(json.loads, f) if "loss" in e}


def main():
    exe, out, kills, seed = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    flags = sys.argv[sys.argv.index("--") + 1:]
    os.makedirs(out, exist_ok=True)
    reference = os.path.join(out, "reference.jsonl")
    start = time.time()
    subprocess.run([exe] + flags + ["--quiet", "--log", reference], check=True)
    duration = time.time() - start
    want = losses(reference)
    rng = random.Random(seed)
    interrupted = 0
    for k in range(kills):
        ckpt = os.path.join(out, "ck%d" % k)
        shutil.rmtree(ckpt, ignore_errors=True)
        run = subprocess.Popen([exe] + flags + [
            "--quiet", "--checkpoint-dir", ckpt, "--checkpoint-every", "1",
            "--checkpoint-async", "--keep-checkpoints", "2"])
        time.sleep(rng.uniform(0.1, 0.1 + duration / 2))
        deadline = time.time() + duration
        while time.time() < deadline and run.poll() is None:
            if os.path.isdir(ckpt) and any(n.startswith(".")
                                           for n in os.listdir(ckpt)):
                break
            time.sleep(0.0002)
        run.send_signal(signal.SIGKILL)
        run.wait()
        names = sorted(os.listdir(ckpt)) if os.path.isdir(ckpt) else []
        done = [n for n in names if n.startswith("step_") and
                not n.endswith((".partial", ".tmp")) and "partial" not in n]
        interrupted += len(names) > len(done)
        if not done:
            continue  # killed before the first checkpoint: nothing to check
        step = int(done[-1][5:].split(".")[0])
        if step >= max(want):
            continue
        log = os.path.join(out, "resumed%d.jsonl" % k)
        resumed = subprocess.run([exe] + flags + [
            "--quiet", "--resume", ckpt, "--steps", str(step + 1), "--log",
            log], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        if resumed.returncode != 0:
            sys.stdout.write(resumed.stdout)
            print("kill %d: the newest checkpoint %s does not resume" %
                  (k, done[-1]))
            sys.exit(1)
        got = losses(log).get(step + 1)
        if got != want[step + 1]:
            print("kill %d: resumed from %s, step %d's loss %r, uninterrupted "
                  "%r" % (k, done[-1], step + 1, got, want[step + 1]))
            sys.exit(1)
    print("%d kills: every newest checkpoint resumed on the uninterrupted "
          "curve" % kills)
    print("%d of them interrupted a write" % interrupted)


if __name__ == "__main__":
    main()
