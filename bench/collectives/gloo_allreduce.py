"""torch.distributed's gloo backend: all_reduce (sum, float32) between N
processes on this machine, timed like bench_local_allreduce.

    /usr/bin/python3 gloo_allreduce.py [bytes] [ranks] [iterations]

Prints "gloo_allreduce_ms <median ms>" (the slowest rank of each round).
Needs Debian's python3-torch (apt-get install -y python3-torch
libopenblas0-pthread).
"""
import os
import sys
import tempfile
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp


def worker(rank, ranks, nbytes, iters, init_file, result):
    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method="file://" + init_file, rank=rank,
                            world_size=ranks)
    x = torch.full((nbytes // 4,), 1.0 + rank, dtype=torch.float32)
    times = []
    for it in range(-5, iters):
        y = x.clone() if it < 0 else x  # in place, as gloo does
        dist.barrier()
        t0 = time.perf_counter()
        dist.all_reduce(y, op=dist.ReduceOp.SUM)
        dt = torch.tensor([time.perf_counter() - t0], dtype=torch.float64)
        dist.all_reduce(dt, op=dist.ReduceOp.MAX)
        if it >= 0:
            times.append(dt.item())
            x = torch.full((nbytes // 4,), 1.0 + rank, dtype=torch.float32)
    if rank == 0:
        times.sort()
        result.put(times[len(times) // 2])
    dist.destroy_process_group()


def main():
    nbytes = int(sys.argv[1]) if len(sys.argv) > 1 else 4 << 20
    ranks = int(sys.argv[2]) if len(sys.argv) > 2 else 2
    iters = int(sys.argv[3]) if len(sys.argv) > 3 else 50
    ctx = mp.get_context("spawn")
    result = ctx.Queue()
    with tempfile.TemporaryDirectory() as d:
        init_file = os.path.join(d, "rendezvous")
        procs = [ctx.Process(target=worker, args=(r, ranks, nbytes, iters, init_file, result))
                 for r in range(ranks)]
        for p in procs:
            p.start()
        median = result.get(timeout=300)
        for p in procs:
            p.join()
    print("gloo_allreduce_ms %.4f" % (median * 1e3))


if __name__ == "__main__":
    main()
