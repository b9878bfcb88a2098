#!/usr/bin/env python3
"""check_wait_order.py LIB VENV — the small-batch linears' early weight loads really come before their PDL wait.

linear_small_kernel and linear_quant_kernel load their first batch of weights, then call pdl_wait()
(griddepcontrol.wait, SASS ACQBULK), so that the weights stream while the previous kernel finishes. ptxas may move
weak loads below the wait (it is legal); linear_quant's kernels once had the wait first and every load after it,
which cost bench-1b INT8 batch-1 decode 9 %. common.cuh's load_early16 keeps them ahead. This reads the SASS of
LIB (the built libfk_kernels.a) with cuobjdump and fails if any sm_90 instance of those kernels issues fewer
than two global loads (the least a first batch holds: one k-step of rows g and g + 8) before its wait.

It needs no GPU. cuobjdump is the CUDA toolkit's where it has one (on PATH or in $CUDA_HOME/bin); else NVIDIA's
wheels from PyPI (nvidia-cuda-cuobjdump and the nvdisasm it runs), installed into the virtual environment VENV on
first use, as the smoke tests install theirs. Exit 77 (skipped) where LIB holds no sm_90 code (a compute_75 PTX build).
"""
import os
import re
import shutil
import subprocess
import sys

FAMILIES = ("linear_small_kernel", "linear_quant_kernel")
MIN_EARLY_LOADS = 2


# cuobjdump -sass runs nvdisasm, a wheel of its own
WHEELS = ["nvidia-cuda-cuobjdump==13.5.37", "nvidia-cuda-nvdisasm==13.5.37"]


def wheel_cuobjdump(venv):
    """cuobjdump from the PyPI wheels in venv, installed there first if need be; None if that fails."""
    def find():
        for root, _, files in os.walk(venv):
            if "cuobjdump" in files and "nvdisasm" in files:
                return os.path.join(root, "cuobjdump")
        return None
    if not find():
        print(f"check_wait_order: installing {' '.join(WHEELS)} into {venv}")
        pip = os.path.join(venv, "bin", "pip")
        for cmd in ([sys.executable, "-m", "venv", venv],
                    [pip, "install", "--quiet", "--disable-pip-version-check", "--retries", "5", "--timeout", "60"] +
                    WHEELS):
            if subprocess.run(cmd).returncode != 0:
                print("check_wait_order: " + " ".join(cmd) + " failed (the check needs PyPI where the CUDA toolkit"
                      " has no cuobjdump)")
                return None
    return find()


def cuobjdump(venv):
    for path in (shutil.which("cuobjdump"), os.path.join(os.environ.get("CUDA_HOME", "/usr/local/cuda"), "bin",
                                                           "cuobjdump")):
        if path and os.access(path, os.X_OK):
            return path
    return wheel_cuobjdump(venv)


def objects(lib):
    """The object files of lib: meson's static libraries are thin archives (members named by path, relative to the
    archive), which cuobjdump cannot read whole."""
    with open(lib, "rb") as f:
        if f.read(8) != b"!<thin>\n":
            return [lib]
    members = subprocess.run(["ar", "t", lib], capture_output=True, text=True, check=True).stdout.split()
    # GNU ar prints them relative to the current directory; others as stored, relative to the archive
    return [m if os.path.exists(m) else os.path.join(os.path.dirname(lib), m) for m in members]


def functions(sass):
    """{(arch, mangled name): [instruction lines]} from cuobjdump -sass output."""
    out, arch, name = {}, None, None
    for line in sass.splitlines():
        m = re.search(r"arch = (sm_\w+)", line)
        if m:
            arch = m.group(1)
        m = re.search(r"Function : (\S+)", line)
        if m:
            name = (arch, m.group(1))
            out[name] = []
        elif name and re.search(r"/\*[0-9a-f]{4}\*/", line):
            out[name].append(line)
    return out


def main():
    if len(sys.argv) != 3:
        print(__doc__)
        return 2
    tool = cuobjdump(sys.argv[2])
    if not tool:
        return 1
    sass = ""
    for obj in objects(sys.argv[1]):
        # nvdisasm is looked for on PATH: the one beside this cuobjdump first
        env = dict(os.environ, PATH=os.path.dirname(tool) + os.pathsep + os.environ.get("PATH", ""))
        run = subprocess.run([tool, "-sass", obj], capture_output=True, text=True, env=env)
        if run.returncode != 0:
            print(f"check_wait_order: {tool} -sass {obj} failed:\n{run.stdout[-2000:]}{run.stderr}")
            return 1
        sass += run.stdout
    checked, bad = 0, []
    for (arch, name), lines in functions(sass).items():
        if not arch or not arch.startswith("sm_9") or not any(f in name for f in FAMILIES):
            continue
        waits = [i for i, line in enumerate(lines) if "ACQBULK" in line]
        if not waits:
            bad.append(f"{arch} {name}: no griddepcontrol.wait (ACQBULK) at all")
            continue
        early = sum(1 for line in lines[:waits[0]] if re.search(r"\bLDG\.", line))
        checked += 1
        if early < MIN_EARLY_LOADS:
            bad.append(f"{arch} {name}: {early} global loads before the wait (instruction {waits[0]})")
    if not checked and not bad:
        print("check_wait_order: skipped, no sm_90 instances of " + ", ".join(FAMILIES) + " in " + sys.argv[1])
        return 77
    for b in bad:
        print("check_wait_order: " + b)
    print(f"check_wait_order: {checked} kernels checked, {len(bad)} with their weight loads after the wait")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
