"""What bench/remat's scripts read from tgc's IR: tg-remat's record on
@train_step and the planned arenas."""
import re
import struct
import subprocess


def run(*args):
    return subprocess.run(args, check=True, capture_output=True, text=True).stdout


def remat_record(text):
    """A reader of @train_step's tg.remat fields (numbers and booleans;
    doubles printed as hex are decoded)."""
    body = re.search(r"@train_step.*?tg\.remat = \{([^}]*)\}", text, re.S).group(1)

    def field(key):
        m = re.search(key + r" = ([^ ,]+)", body)
        if not m:
            return None
        v = m.group(1)
        if v in ("true", "false"):
            return v == "true"
        if v.startswith("0x"):
            return struct.unpack(">d", bytes.fromhex(v[2:]))[0]
        return float(v.strip('"').split(":")[0].strip())
    return field


def step_peak(text):
    """@train_step's planned arena."""
    step = text[text.index("func.func @train_step"):]
    return int(re.search(r"tg\.arena = #tg\.arena<bytes = (\d+)", step).group(1))


def arena_peak(text):
    """The executable's arena: the largest of the step functions' plans."""
    return max(int(m) for m in re.findall(
        r"func\.func @\w+\(.*?tg\.arena = #tg\.arena<bytes = (\d+)", text))
