#!/usr/bin/env python3
"""Turns a .cu file into C++ that g++ compiles with runtime/cuda/simt/Simt.h:

    simt_rewrite.py IN.cu OUT.cpp

Three constructs of CUDA C++ have no C++ spelling, and only these change
(line numbers stay, so diagnostics and sanitizer reports name the .cu line):

  kernel<<<grid, block[, bytes[, stream]]>>>(args);
      ::tgc::simt::launch("kernel", __FILE__, __LINE__, kernel,
                          ::tgc::simt::LaunchConfig(grid, block, ...), args);
  extern __shared__ [__align__(N)] T name[];
      T *name = static_cast<T *>(::tgc::simt::dynamicShared());
  asm volatile("op.with.dots {%0, ...}, ...;" : "+f"(c) : "r"(a));
      ::tgc::simt::ptx::op_with_dots(c, ..., a, TGC_SIMT_SITE);
      (the operands in the order the instruction names them; an instruction
      Simt.h does not define fails to compile, naming it)

A line directive keeps the original file name. Comments and string literals
are left alone. Exits 1 with a message naming the file and line when a
construct cannot be parsed.
"""
import re
import sys


def fail(path, text, pos, what):
    line = text.count("\n", 0, pos) + 1
    sys.exit("simt_rewrite.py: %s:%d: %s" % (path, line, what))


def code_mask(text):
    """For each character, whether it is code (not a comment or a literal)."""
    mask = bytearray(len(text))
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            i = n if j < 0 else j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            i = n if j < 0 else j + 2
        elif c in "\"'":
            j = i + 1
            while j < n and text[j] != c:
                j += 2 if text[j] == "\\" else 1
            i = j + 1
        else:
            mask[i] = 1
            i += 1
    return mask


def matching(text, mask, pos, open_, close):
    """The index just past the bracket that closes the one at `pos`."""
    depth = 0
    for i in range(pos, len(text)):
        if not mask[i]:
            continue
        if text[i] == open_:
            depth += 1
        elif text[i] == close:
            depth -= 1
            if depth == 0:
                return i + 1
    return -1


def split_top(text, sep=","):
    """Splits at `sep` outside brackets."""
    parts, depth, start = [], 0, 0
    for i, c in enumerate(text):
        if c in "([{<":
            depth += 1
        elif c in ")]}>":
            depth -= 1
        elif c == sep and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    parts.append(text[start:])
    return [p.strip() for p in parts if p.strip()]


def kernel_name_start(text, mask, end):
    """Where the kernel expression that ends at `end` (before <<<) starts:
    an identifier with ::, possibly followed by <template arguments>."""
    i = end
    while i > 0 and text[i - 1].isspace():
        i -= 1
    if text[i - 1] == ">":
        depth = 0
        j = i - 1
        while j >= 0:
            if mask[j] and text[j] == ">":
                depth += 1
            elif mask[j] and text[j] == "<":
                depth -= 1
                if depth == 0:
                    break
            j -= 1
        i = j
    while i > 0 and (text[i - 1].isalnum() or text[i - 1] in "_:"):
        i -= 1
    return i


def rewrite_launches(path, text):
    mask = code_mask(text)
    out, done = [], 0
    for m in re.finditer(r"<<<", text):
        start = m.start()
        if start < done or not mask[start]:
            continue
        close = text.find(">>>", start)
        if close < 0:
            fail(path, text, start, "<<< without >>>")
        config = text[start + 3:close]
        paren = close + 3
        while paren < len(text) and text[paren].isspace():
            paren += 1
        if paren >= len(text) or text[paren] != "(":
            fail(path, text, start, "a launch's >>> is not followed by (")
        end = matching(text, mask, paren, "(", ")")
        if end < 0:
            fail(path, text, paren, "unbalanced launch arguments")
        name_start = kernel_name_start(text, mask, start)
        kernel = text[name_start:start].strip()
        if not kernel or name_start < done:
            fail(path, text, start, "no kernel name before <<<")
        args = text[paren + 1:end - 1]
        label = re.sub(r"\s+", " ", kernel)
        call = ('::tgc::simt::launch("%s", __FILE__, __LINE__, %s, '
                "::tgc::simt::LaunchConfig(%s)%s%s)"
                % (label, kernel, config, ", " if args.strip() else "", args))
        # Keep the line count: the replaced text's newlines go at the end.
        newlines = text.count("\n", name_start, end) - call.count("\n")
        out += [text[done:name_start], call, "\n" * max(newlines, 0)]
        done = end
    out.append(text[done:])
    return "".join(out)


SHARED = re.compile(r"extern\s+__shared__\s+(?:__align__\s*\(\s*\d+\s*\)\s*)?"
                    r"([A-Za-z_][\w:\s<>,*]*?)\s*\b(\w+)\s*\[\s*\]\s*;")


def rewrite_shared(text):
    return SHARED.sub(lambda m: "%s *%s = static_cast<%s *>("
                      "::tgc::simt::dynamicShared());"
                      % (m.group(1).strip(), m.group(2), m.group(1).strip()),
                      text)


ASM = re.compile(r"\basm\s*(?:volatile|__volatile__)?\s*\(")


def rewrite_asm(path, text):
    while True:
        mask = code_mask(text)
        match = next((m for m in ASM.finditer(text) if mask[m.start()]), None)
        if not match:
            return text
        open_ = match.end() - 1
        end = matching(text, mask, open_, "(", ")")
        if end < 0:
            fail(path, text, open_, "unbalanced asm statement")
        body = text[open_ + 1:end - 1]
        # The template: adjacent string literals, then up to three
        # colon-separated operand lists.
        strings = re.match(r'\s*((?:"(?:[^"\\]|\\.)*"\s*)+)', body)
        if not strings:
            fail(path, text, open_, "asm without a template string")
        template = "".join(re.findall(r'"((?:[^"\\]|\\.)*)"',
                                      strings.group(1)))
        template = template.replace("\\n", " ").replace("\\t", " ").strip()
        template = template.rstrip(";").strip()
        sections = body[strings.end():].split(":")[1:]
        operands = []
        for section in sections[:2]:
            for operand in split_top(section):
                m = re.match(r'"[^"]*"\s*\((.*)\)\s*$', operand, re.S)
                if not m:
                    fail(path, text, open_, "cannot read asm operand %r"
                         % operand)
                operands.append(m.group(1).strip())
        parts = template.split(None, 1)
        opcode = parts[0]
        used = re.findall(r"%(\d+)", parts[1] if len(parts) > 1 else "")
        try:
            args = [operands[int(u)] for u in used]
        except IndexError:
            fail(path, text, open_, "asm names an operand it does not have")
        function = "::tgc::simt::ptx::" + re.sub(r"\W", "_", opcode)
        call = "%s(%s)" % (function, ", ".join(args + ["TGC_SIMT_SITE"]))
        newlines = text.count("\n", match.start(), end)
        text = text[:match.start()] + call + "\n" * newlines + text[end:]


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: simt_rewrite.py IN.cu OUT.cpp")
    source, target = sys.argv[1:]
    try:
        text = open(source).read()
    except OSError as e:
        sys.exit("simt_rewrite.py: cannot read %s: %s" % (source, e.strerror))
    text = rewrite_asm(source, text)
    text = rewrite_shared(text)
    text = rewrite_launches(source, text)
    with open(target, "w") as f:
        f.write('#line 1 "%s"\n' % source)
        f.write(text)


if __name__ == "__main__":
    main()
