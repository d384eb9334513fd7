#!/usr/bin/env python3
# files.py - file chores for the tg-data tests, which run with only the tool
# directory on PATH (no rm, mkdir, gzip or head):
#
#   files.py fresh DIR              remove DIR and create it empty
#   files.py gzip SRC DST           gzip SRC into DST (no name or time stamp)
#   files.py truncate SRC DST N     the first N bytes of SRC into DST
#   files.py corrupt SRC DST AT     SRC with the byte at offset AT inverted
#   files.py bytes DST TEXT         DST holds TEXT, Python escapes decoded
#                                   (its directory is created when missing)
import gzip
import os
import shutil
import sys

command, args = sys.argv[1], sys.argv[2:]
if command == "fresh":
    shutil.rmtree(args[0], ignore_errors=True)
    os.makedirs(args[0])
elif command == "gzip":
    data = open(args[0], "rb").read()
    open(args[1], "wb").write(gzip.compress(data, mtime=0))
elif command == "truncate":
    open(args[1], "wb").write(open(args[0], "rb").read()[: int(args[2])])
elif command == "corrupt":
    data = bytearray(open(args[0], "rb").read())
    data[int(args[2])] ^= 0xFF
    open(args[1], "wb").write(bytes(data))
elif command == "bytes":
    os.makedirs(os.path.dirname(args[0]) or ".", exist_ok=True)
    open(args[0], "wb").write(args[1].encode("latin-1").decode("unicode_escape").encode("latin-1"))
else:
    sys.exit("files.py: unknown command " + command)
