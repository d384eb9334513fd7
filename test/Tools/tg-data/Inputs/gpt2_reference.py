#!/usr/bin/env python3
# gpt2_reference.py - GPT-2's tokenizer in plain Python, to check tg-data's.
#
#   gpt2_reference.py make-encoder VOCAB_BPE
#       prints an encoder.json for the merges: the 256 byte tokens in
#       GPT-2's order (ids 0..255), then each merge's result, then
#       <|endoftext|> (how gpt2/encoder.json was made from gpt2/vocab.bpe).
#   gpt2_reference.py check --vocab J --merges B [--utf8-errors replace]
#                     --docs F... --bins S...
#       tokenizes the documents as GPT-2's encoder.py does (each preceded by
#       <|endoftext|>) and checks the token shards hold exactly that stream.
#
# The pre-tokenizer is GPT-2's regex run by Python's `re`, with \p{L} and
# \p{N} spelled out from unicodedata and \s as Unicode's White_Space (the
# `regex` module GPT-2 used is not installed here); the BPE loop is
# encoder.py's. Nothing here shares code with tg-data.
import argparse
import json
import sys
import unicodedata

import numpy as np
import re

WHITE_SPACE = ([chr(c) for c in range(0x09, 0x0E)] +
               [" ", "\x85", "\xa0", "\u1680"] +
               [chr(c) for c in range(0x2000, 0x200B)] +
               ["\u2028", "\u2029", "\u202f", "\u205f", "\u3000"])


def bytes_to_unicode():
    bs = (list(range(ord("!"), ord("~") + 1)) +
          list(range(ord("\xa1"), ord("\xac") + 1)) +
          list(range(ord("\xae"), ord("\xff") + 1)))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return dict(zip(bs, [chr(c) for c in cs]))


def category_classes():
    """Regex character-class bodies for the letters (L*) and numbers (N*)."""
    ranges = {"L": [], "N": []}
    for cp in range(0x110000):
        kind = unicodedata.category(chr(cp))[0]
        if kind in ranges:
            spans = ranges[kind]
            if spans and spans[-1][1] == cp - 1:
                spans[-1][1] = cp
            else:
                spans.append([cp, cp])
    esc = lambda cp: "\\U%08x" % cp
    return ["".join(esc(a) if a == b else esc(a) + "-" + esc(b) for a, b in ranges[k])
            for k in ("L", "N")]


def gpt2_pattern():
    letters, numbers = category_classes()
    space = "".join("\\U%08x" % ord(c) for c in WHITE_SPACE)
    return re.compile(
        r"'s|'t|'re|'ve|'m|'ll|'d"
        r"| ?[" + letters + r"]+"
        r"| ?[" + numbers + r"]+"
        r"| ?[^" + space + letters + numbers + r"]+"
        r"|[" + space + r"]+(?![^" + space + r"])"
        r"|[" + space + r"]+")


def read_merges(path):
    lines = open(path, encoding="utf-8").read().split("\n")
    if lines and lines[0].startswith("#version"):
        lines = lines[1:]
    return [tuple(line.split(" ")) for line in lines if line]


class Encoder:
    def __init__(self, encoder, merges):
        self.encoder = encoder
        self.bpe_ranks = dict(zip(merges, range(len(merges))))
        self.byte_encoder = bytes_to_unicode()
        self.pat = gpt2_pattern()

    def bpe(self, token):
        word = tuple(token)
        pairs = set(zip(word, word[1:]))
        if not pairs:
            return [token]
        while True:
            bigram = min(pairs, key=lambda p: self.bpe_ranks.get(p, float("inf")))
            if bigram not in self.bpe_ranks:
                break
            first, second = bigram
            new_word, i = [], 0
            while i < len(word):
                try:
                    j = word.index(first, i)
                except ValueError:
                    new_word.extend(word[i:])
                    break
                new_word.extend(word[i:j])
                i = j
                if word[i] == first and i < len(word) - 1 and word[i + 1] == second:
                    new_word.append(first + second)
                    i += 2
                else:
                    new_word.append(word[i])
                    i += 1
            word = tuple(new_word)
            if len(word) == 1:
                break
            pairs = set(zip(word, word[1:]))
        return list(word)

    def encode(self, text):
        ids = []
        for piece in self.pat.findall(text):
            mapped = "".join(self.byte_encoder[b] for b in piece.encode("utf-8"))
            ids.extend(self.encoder[t] for t in self.bpe(mapped))
        return ids


def make_encoder(args):
    merges = read_merges(args.merges)
    tokens = list(bytes_to_unicode().values())
    for a, b in merges:
        if a + b not in tokens:
            tokens.append(a + b)
    tokens.append("<|endoftext|>")
    print("{")
    print(",\n".join("  %s: %d" % (json.dumps(t, ensure_ascii=False), i)
                     for i, t in enumerate(tokens)))
    print("}")


def read_shard(path):
    header = np.fromfile(path, dtype=np.int32, count=256)
    assert header[0] == 20240520 and header[1] == 1, path
    tokens = np.fromfile(path, dtype=np.uint16, offset=1024)
    assert len(tokens) == header[2], path
    return tokens


def check(args):
    encoder = json.load(open(args.vocab, encoding="utf-8"))
    enc = Encoder(encoder, read_merges(args.merges))
    want = []
    for path in args.docs:
        text = open(path, "rb").read().decode("utf-8", errors=args.utf8_errors)
        want.append(encoder["<|endoftext|>"])
        want.extend(enc.encode(text))
    got = np.concatenate([read_shard(p) for p in args.bins]).tolist()
    if got != want:
        n = next((i for i, (g, w) in enumerate(zip(got, want)) if g != w),
                 min(len(got), len(want)))
        print("MISMATCH at token %d of %d (reference %d): got %s, want %s"
              % (n, len(got), len(want), got[n:n + 8], want[n:n + 8]))
        sys.exit(1)
    merged = sum(1 for t in want if 256 <= t < encoder["<|endoftext|>"])
    print("tokens match: %d (%d from merges)" % (len(got), merged))


def main():
    parser = argparse.ArgumentParser()
    sub = parser.add_subparsers(dest="command", required=True)
    make = sub.add_parser("make-encoder")
    make.add_argument("merges")
    chk = sub.add_parser("check")
    chk.add_argument("--vocab", required=True)
    chk.add_argument("--merges", required=True)
    chk.add_argument("--utf8-errors", default="strict")
    chk.add_argument("--docs", nargs="+", required=True)
    chk.add_argument("--bins", nargs="+", required=True)
    args = parser.parse_args()
    make_encoder(args) if args.command == "make-encoder" else check(args)


if __name__ == "__main__":
    main()
