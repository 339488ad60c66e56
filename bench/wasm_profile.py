#!/usr/bin/python3
"""Where the page's training step spends its time: the WebAssembly engine training pico under
node's sampling profiler, its self time summed by part (the Highway kernels, the engine around
them, malloc and memset, the JavaScript glue of C++ exceptions), and the top functions.

    /usr/bin/python3 bench/wasm_profile.py [--build build-wasm] [--steps 3000]

The page's module is linked again from build-wasm's objects (scripts/wasm.sh builds them) with
--profiling-funcs, which keeps the functions' names, into a temporary folder: the same code, with
names. node runs V8, Chromium's engine. The profile covers the timed steps only (not the
module's compilation, the model's set-up or the 200 untimed steps first). Shares, not times,
are what this measures: a profile taken beside other work still splits the step the same way.
"""
import argparse
import collections
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# The parts a function's self time is counted in, by its name, first match wins.
PARTS = [
    ("Highway kernels", re.compile(r"attograd::kernels::|hwy::")),
    ("malloc, memset, memcpy", re.compile(r"^(memset|__memcpy|memcpy|memmove|malloc|free|dlmalloc|dlfree|"
                                          r"operator new|operator delete)")),
    ("the engine around them (graph, ops, nn, trainer)", re.compile(r"::")),
    ("node itself (idle, program, GC)", re.compile(r"^\(")),
]
OTHER = "JavaScript glue (exceptions' invoke_ trampolines, wrappers)"


def relink(build, out):
    """Links attograd_module.{js,wasm} from build's objects with --profiling-funcs into out."""
    commands = subprocess.run(["ninja", "-C", str(build), "-t", "commands", "attograd_web"],
                              capture_output=True, text=True, check=True).stdout.strip().splitlines()
    link = commands[-1].removeprefix(": && ").removesuffix(" && :")
    if "-o page/attograd_module.js" not in link:
        sys.exit(f"wasm_profile.py: unexpected link command for attograd_web: {link[:200]}")
    link = link.replace("-o page/attograd_module.js", f"--profiling-funcs -o {out}/attograd_module.js")
    env = dict(os.environ, NODE_PATH="/usr/share/nodejs")
    subprocess.run(link, shell=True, cwd=build, env=env, check=True)
    shutil.copy(build / "page" / "attograd.js", out)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default=str(ROOT / "build-wasm"), help="the WebAssembly build (scripts/wasm.sh)")
    ap.add_argument("--steps", type=int, default=3000, help="training steps profiled (default 3000)")
    ap.add_argument("--top", type=int, default=12, help="functions listed (default 12)")
    args = ap.parse_args()
    if args.steps < 100:
        sys.exit("wasm_profile.py: --steps must be at least 100 (a profile of fewer is mostly noise)")
    for tool in ("node", "ninja"):
        if shutil.which(tool) is None:
            sys.exit(f"wasm_profile.py: {tool} not found (bash scripts/install-deps.sh --wasm installs it)")
    build = Path(args.build).resolve()
    if not (build / "build.ninja").exists():
        sys.exit(f"wasm_profile.py: {build}/build.ninja not found: build the page first "
                 "(bash scripts/wasm.sh --no-test)")
    text = build / "page" / "genesis.txt"
    if not text.exists():
        sys.exit(f"wasm_profile.py: {text} not found: build the page first (bash scripts/wasm.sh --no-test)")
    with tempfile.TemporaryDirectory() as tmp:
        relink(build, tmp)
        run = subprocess.run(["node", "--no-experimental-fetch", str(ROOT / "bench" / "wasm_profile.js"),
                              tmp, str(text), str(args.steps), f"{tmp}/profile.json"],
                             capture_output=True, text=True)
        if run.returncode != 0:
            sys.exit(f"wasm_profile.py: node failed ({run.returncode}):\n{run.stderr.strip()}")
        print(run.stdout.strip())
        with open(f"{tmp}/profile.json") as f:
            profile = json.load(f)
    names = {n["id"]: n["callFrame"]["functionName"] for n in profile["nodes"]}
    self_time = collections.Counter()
    for node, delta in zip(profile["samples"], profile["timeDeltas"]):
        self_time[names[node]] += delta
    total = sum(self_time.values())
    if total == 0:
        sys.exit("wasm_profile.py: the profile holds no samples")
    parts = collections.Counter()
    for name, t in self_time.items():
        parts[next((part for part, pattern in PARTS if pattern.search(name)), OTHER)] += t
    print("self time of the step, by part:")
    for part, t in parts.most_common():
        print(f"  {100 * t / total:5.1f}%  {part}")
    print("top functions:")
    for name, t in self_time.most_common(args.top):
        print(f"  {100 * t / total:5.1f}%  {name[:140]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
