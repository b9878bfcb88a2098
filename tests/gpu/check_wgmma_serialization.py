#!/usr/bin/env python3
"""check_wgmma_serialization.py NVCC... -- KERNELS_DIR SOURCE... — ptxas does not serialize our wgmmas.

When a non-wgmma instruction defines a wgmma's input registers inside its pipeline stage, ptxas makes every wgmma of
the function wait for the one before (info C7510-C7519, "wgmma.mma_async instructions are serialized"). It is an
info line, not a warning, so -Werror=all-warnings lets it through: the thirty-second session's first two-register-
set form of linear_quant_wgmma was serialized this way and slower on every shape. This compiles each SOURCE for
sm_90a with -Xptxas -v (as kernels/meson.build does, whatever -Dcuda-arch the build uses) and fails on any C751x.
It needs no GPU.
"""
import concurrent.futures
import os
import re
import subprocess
import sys
import tempfile

SERIALIZED = re.compile(r"\(C751\d\)")


def check(nvcc, kernels_dir, source, tmp):
    obj = os.path.join(tmp, os.path.basename(source) + ".o")
    cmd = nvcc + ["-gencode=arch=compute_90a,code=sm_90a", "-std=c++17", "-O3", "-Xptxas", "-v", "-I" + kernels_dir,
                  "-c", source, "-o", obj]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        return source, [f"nvcc failed ({r.returncode}): {r.stderr[-2000:]}"]
    return source, [line for line in (r.stdout + r.stderr).splitlines() if SERIALIZED.search(line)]


def main():
    if "--" not in sys.argv:
        sys.exit("usage: check_wgmma_serialization.py NVCC... -- KERNELS_DIR SOURCE...")
    sep = sys.argv.index("--")
    nvcc, kernels_dir, sources = sys.argv[1:sep], sys.argv[sep + 1], sys.argv[sep + 2:]
    failed = 0
    with tempfile.TemporaryDirectory() as tmp, concurrent.futures.ThreadPoolExecutor(os.cpu_count() or 2) as pool:
        for source, bad in pool.map(lambda s: check(nvcc, kernels_dir, s, tmp), sources):
            print(f"{os.path.basename(source)}: {len(bad)} serialization messages")
            for line in bad[:5]:
                print("  " + line)
            failed += bool(bad)
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
