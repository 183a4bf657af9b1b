"""Damages a copy of a checkpoint for the error tests (checkpoint-errors.test).

    corrupt_checkpoint.py SRC DST ACTION
"""
import json
import os
import shutil
import sys

src, dst, action = sys.argv[1:4]
shutil.rmtree(dst, ignore_errors=True)
shutil.copytree(src, dst)
index_path = os.path.join(dst, "index.json")
index = json.load(open(index_path))


def save():
    json.dump(index, open(index_path, "w"), indent=1)


def flip(name, at):
    with open(os.path.join(dst, name), "r+b") as f:
        f.seek(at)
        b = f.read(1)
        f.seek(at)
        f.write(bytes([b[0] ^ 1]))


if action == "truncate":  # the last 7 bytes of rank 1's file
    path = os.path.join(dst, "rank-00001.safetensors")
    os.truncate(path, os.path.getsize(path) - 7)
elif action == "flip-data":  # one bit of the last piece of rank 1's file
    flip("rank-00001.safetensors", os.path.getsize(os.path.join(dst, "rank-00001.safetensors")) - 3)
elif action == "flip-header":  # one bit inside rank 0's JSON header
    flip("rank-00000.safetensors", 20)
elif action == "remove-file":
    os.remove(os.path.join(dst, "rank-00001.safetensors"))
elif action == "remove-piece":  # wte.weight loses its second piece
    index["tensors"]["wte.weight"]["pieces"].pop()
    save()
elif action == "cut-index":  # index.json ends after 500 bytes
    text = open(index_path).read()
    open(index_path, "w").write(text[:500])
elif action == "step-string":
    index["step"] = "two"
    save()
elif action == "fingerprint":
    index["model"]["fingerprint"] = "0123456789abcdef"
    save()
elif action == "shape":  # ln_f.bias saved as [16]: its one piece halves
    t = index["tensors"]["ln_f.bias"]
    t["shape"] = [16]
    p = t["pieces"][0]
    p["shape"] = [16]
    p["bytes"][1] = p["bytes"][0] + 64
    save()
elif action == "piece-outside":  # a piece that leaves its tensor
    index["tensors"]["ln_f.bias"]["pieces"][0]["offsets"] = [8]
    save()
else:
    sys.exit("unknown action " + action)
