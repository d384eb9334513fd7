#!/usr/bin/env python3
# expect_error.py COMMAND... - runs COMMAND, prints its stdout and stderr
# together, and succeeds only when it exits with status 1: a clean error, not
# success and not a crash (a signal or an abort). The tests use it where
# LLVM tests write `not`, which is not on the PATH lit gives them here.
import subprocess
import sys

result = subprocess.run(sys.argv[1:], stdout=subprocess.PIPE,
                        stderr=subprocess.STDOUT)
sys.stdout.write(result.stdout.decode("utf-8", errors="replace"))
if result.returncode != 1:
    print("expect_error.py: expected exit status 1, got %d" % result.returncode)
    sys.exit(1)
