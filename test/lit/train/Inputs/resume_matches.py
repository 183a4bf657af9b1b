"""Resumes a run from checkpoint CK for two more steps and runs the same
steps uninterrupted from step 0; prints whether the resumed steps' losses
are the uninterrupted run's (as printed, so bit for bit to 7 digits).

    resume_matches.py CK -- dist-train args...
"""
import json
import re
import subprocess
import sys

ck = sys.argv[1]
args = sys.argv[sys.argv.index("--") + 1:]
saved = json.load(open(ck + "/index.json"))["step"]
until = str(saved + 2)


def losses(extra):
    out = subprocess.run(args + extra, stdout=subprocess.PIPE, text=True,
                         check=True).stdout
    return dict(re.findall(r"^step (\d+)/\d+: loss (\S+)", out, re.M))


resumed = losses(["--resume", ck, "--steps", until])
whole = losses(["--steps", until])
same = sorted(resumed) == [str(saved + 1), str(saved + 2)] and all(
    whole[k] == v for k, v in resumed.items())
print("saved step", saved, "resumed steps", sorted(resumed, key=int),
      "same as uninterrupted", same)
sys.exit(not same)
