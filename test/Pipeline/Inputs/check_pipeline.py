"""Checks a pipelined --report-json against the same plan without stages
(argv: one-stage JSON, pipelined JSON, stages, virtual stages): the
pipeline's fields, that the step is the sum of its terms, the bubble in
micro-batch slots of the slowest stage, and the slowest stage's FLOPs and
the fullest stage's arguments as fractions of the one-stage plan's."""
import json
import sys

one = json.load(open(sys.argv[1]))["chosen"]
plan = json.load(open(sys.argv[2]))["chosen"]
stages, virtual = int(sys.argv[3]), int(sys.argv[4])
pipe = plan["pipeline"]
print("stages", pipe["stages"], "virtual", pipe["virtual_stages"],
      "executable", pipe["executable"])
assert (pipe["stages"], pipe["virtual_stages"]) == (stages, virtual)
busy = (plan["compute_seconds"] + plan["communication_seconds"] -
        plan["hidden_seconds"])
total = busy + pipe["bubble_seconds"] + pipe["send_seconds"]
print("step adds up", abs(plan["step_seconds"] - total) <= 1e-9 * total)
# The slowest stage: K - 1 slots of @forward_backward and @train_step once.
slot = (busy - plan["train_step_seconds"]) / (plan["micro_batches"] - 1)
print("bubble is %.2f slots" % (pipe["bubble_seconds"] / slot))
flops = plan["flops_per_device"] / one["flops_per_device"]
print("flops per device 0.25 < x < 0.5", 0.25 < flops < 0.5)
args = plan["argument_bytes"] / one["argument_bytes"]
print("arguments per device 0.25 < x < 0.75", 0.25 < args < 0.75)
print("send bytes", pipe["send_bytes"])
