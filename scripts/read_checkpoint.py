#!/usr/bin/env python3
"""Reads a distopt checkpoint (docs/checkpoints.md) with numpy alone.

    read_checkpoint.py DIR                      # list tensors, verify every CRC
    read_checkpoint.py DIR --print NAME         # one reassembled tensor
    read_checkpoint.py DIR --compare-onnx M.onnx  # parameters == M's initializers

Independent of distopt's C++ code: it follows the documented layout only.
"""
import argparse
import json
import os
import struct
import sys
import zlib

import numpy as np

DTYPES = {"F32": np.float32, "F64": np.float64, "F16": np.float16,
          "I64": np.int64, "I32": np.int32, "I16": np.int16, "I8": np.int8,
          "U8": np.uint8, "BOOL": np.bool_}


def load(directory):
    with open(os.path.join(directory, "index.json")) as f:
        index = json.load(f)
    if index.get("format") != "distopt-checkpoint" or index.get("version") != 1:
        sys.exit("not a distopt checkpoint (version 1)")
    # Whole-file and header checksums.
    for name, entry in index["files"].items():
        with open(os.path.join(directory, name), "rb") as f:
            data = f.read()
        if len(data) != entry["bytes"]:
            sys.exit(f"{name}: {len(data)} bytes, index.json says {entry['bytes']}")
        if zlib.crc32(data) != entry["crc32"]:
            sys.exit(f"{name}: fails its crc32")
        (n,) = struct.unpack("<Q", data[:8])
        if 8 + n != entry["header_bytes"] or zlib.crc32(data[:8 + n]) != entry["header_crc32"]:
            sys.exit(f"{name}: bad safetensors header")
    tensors = {}
    for name, t in index["tensors"].items():
        if t["dtype"] == "BF16":
            sys.exit("BF16 needs a bfloat16 type numpy lacks")
        dtype = np.dtype(DTYPES[t["dtype"]]).newbyteorder("<")
        out = np.zeros(t["shape"], dtype=dtype)
        covered = 0
        for p in t["pieces"]:
            begin, end = p["bytes"]
            with open(os.path.join(directory, p["file"]), "rb") as f:
                f.seek(begin)
                raw = f.read(end - begin)
            if zlib.crc32(raw) != p["crc32"]:
                sys.exit(f"{p['file']}: piece of {name} fails its crc32")
            block = index["checksum_block_bytes"]
            blocks = [zlib.crc32(raw[i:i + block]) for i in range(0, len(raw), block)]
            if blocks != p["block_crc32"]:
                sys.exit(f"{p['file']}: piece of {name} fails its block crc32s")
            piece = np.frombuffer(raw, dtype=dtype).reshape(p["shape"])
            box = tuple(slice(o, o + s) for o, s in zip(p["offsets"], p["shape"]))
            out[box] = piece
            covered += piece.size
        if covered != out.size:
            sys.exit(f"{name}: pieces cover {covered} of {out.size} elements")
        tensors[name] = out
    return index, tensors


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("dir")
    ap.add_argument("--print", dest="show")
    ap.add_argument("--compare-onnx")
    args = ap.parse_args()
    index, tensors = load(args.dir)
    print(f"step {index['step']}, saved with --mesh '{index['mesh']}' "
          f"--plan '{index['plan']}' on {index['ranks']} rank(s); "
          f"{len(index['files'])} file(s), {len(tensors)} tensor(s), checksums ok")
    if args.show:
        t = tensors[args.show]
        print(f"{args.show} {t.dtype} {list(t.shape)} sum {float(t.astype(np.float64).sum()):.9g}")
    if args.compare_onnx:
        import onnx
        from onnx import numpy_helper
        model = onnx.load(args.compare_onnx)
        same = 0
        for init in model.graph.initializer:
            if init.name not in tensors:
                continue
            want = numpy_helper.to_array(init)
            if not np.array_equal(want, tensors[init.name]):
                sys.exit(f"{init.name} differs from {args.compare_onnx}")
            same += 1
        print(f"{same} parameter(s) equal to {os.path.basename(args.compare_onnx)}'s initializers")


if __name__ == "__main__":
    main()
