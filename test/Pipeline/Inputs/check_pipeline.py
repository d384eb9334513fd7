"""Checks a pipelined --report-json, priced as built, against the same plan
without stages (argv: one-stage JSON, pipelined JSON, stages, virtual
stages, and the bounds of the bubble in micro-batch slots): the pipeline's
fields, that the step is the sum of its terms, the slowest stage's idle
time in its own micro-batch slots (its chunk functions on one
micro-batch), and the slowest stage's FLOPs and the fullest stage's
arguments as fractions of the one-stage plan's."""
import json
import sys

one = json.load(open(sys.argv[1]))["chosen"]
plan = json.load(open(sys.argv[2]))["chosen"]
stages, virtual = int(sys.argv[3]), int(sys.argv[4])
low, high = float(sys.argv[5]), float(sys.argv[6])
pipe = plan["pipeline"]
print("stages", pipe["stages"], "virtual", pipe["virtual_stages"],
      "built", pipe["built"], "schedule", pipe["schedule"])
assert (pipe["stages"], pipe["virtual_stages"]) == (stages, virtual)
busy = (plan["compute_seconds"] + plan["communication_seconds"] -
        plan["hidden_seconds"])
total = busy + pipe["bubble_seconds"] + pipe["send_seconds"]
print("step adds up", abs(plan["step_seconds"] - total) <= 1e-9 * total)
# The slowest stage: its chunks on each micro-batch, its update once.
slot = (busy - plan["train_step_seconds"]) / plan["micro_batches"]
bubble = pipe["bubble_seconds"] / slot
print("bubble within %g..%g slots:" % (low, high), low <= bubble <= high,
      "(%.2f)" % bubble)
flops = plan["flops_per_device"] / one["flops_per_device"]
print("flops per device 0.2 < x < 0.5", 0.2 < flops < 0.5)
args = plan["argument_bytes"] / one["argument_bytes"]
print("arguments per device 0.2 < x < 0.75", 0.2 < args < 0.75)
print("send bytes", pipe["send_bytes"])
