#!/usr/bin/env python3
"""Turns text files into a byte-level token file for dist-train --tokens:
each byte is one uint16 token (a vocabulary of 256), little-endian, the
files one after another. With --val FRACTION, the last part goes to a
second file for evaluation instead.

    python3 scripts/text_to_tokens.py docs/*.md -o train.bin [--val 0.1 val.bin]
"""
import argparse
import array
import sys


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("files", nargs="+", help="text files, read as bytes")
    ap.add_argument("-o", "--out", required=True, help="the token file")
    ap.add_argument("--val", nargs=2, metavar=("FRACTION", "FILE"),
                    help="write the last FRACTION of the tokens to FILE")
    a = ap.parse_args()
    data = b"".join(open(f, "rb").read() for f in a.files)
    tokens = array.array("H", list(data))  # one uint16 per byte
    if sys.byteorder != "little":
        tokens.byteswap()
    cut = len(tokens)
    if a.val:
        fraction = float(a.val[0])
        if not 0 < fraction < 1:
            sys.exit("--val FRACTION must lie between 0 and 1")
        cut = int(len(tokens) * (1 - fraction))
        with open(a.val[1], "wb") as f:
            tokens[cut:].tofile(f)
    with open(a.out, "wb") as f:
        tokens[:cut].tofile(f)
    print("wrote %s: %d tokens%s" % (a.out, cut, "; %s: %d tokens" % (
        a.val[1], len(tokens) - cut) if a.val else ""))


if __name__ == "__main__":
    main()
