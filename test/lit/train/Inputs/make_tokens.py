"""Writes N seeded uint16 tokens below VOCAB: make_tokens.py OUT N VOCAB."""
import random
import struct
import sys

out, n, vocab = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
rng = random.Random(14)
with open(out, "wb") as f:
    f.write(struct.pack("<%dH" % n, *(rng.randrange(vocab) for _ in range(n))))
