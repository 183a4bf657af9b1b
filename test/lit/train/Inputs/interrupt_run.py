"""Starts dist-train with the given arguments, sends SIGNAL once the line of
step AFTER has appeared, and prints what the run said and how it ended:
the step it stopped after, its exit status, its message, and whether a
temporary checkpoint directory was left beside the checkpoint.

    interrupt_run.py SIGNAL AFTER CHECKPOINT_DIR -- dist-train args...
"""
import glob
import re
import signal
import subprocess
import sys

sig = getattr(signal, sys.argv[1])
after = int(sys.argv[2])
ck = sys.argv[3]
args = sys.argv[sys.argv.index("--") + 1:]
p = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                     text=True)
losses = {}
sent = False
for line in p.stdout:
    m = re.match(r"step (\d+)/\d+: loss (\S+)", line)
    if m:
        losses[int(m.group(1))] = m.group(2)
        if int(m.group(1)) >= after and not sent:
            p.send_signal(sig)
            sent = True
err = p.stderr.read()
status = p.wait()
stopped = re.search(r"stopped by (\S+) after step (\d+)/\d+; (.*)", err)
print("exit", status)
if stopped:
    print("stopped by", stopped.group(1), "after step", stopped.group(2))
    print("message:", stopped.group(3))
    print("last printed step", max(losses), "matches",
          max(losses) == int(stopped.group(2)))
else:
    print("no stop message; stderr:", err)
print("temporaries left:", len(glob.glob(ck + ".tmp-*")))
with open(sys.argv[3] + ".losses", "w") as f:
    for k in sorted(losses):
        f.write("%d %s\n" % (k, losses[k]))
