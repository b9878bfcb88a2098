#!/usr/bin/env python3
"""registers.py — what ptxas gives each kernel of a build: registers, spill bytes, stack and shared memory a thread
or block, one line per entry function (every template instantiation), for the kernels library's .cu files.

Why: a change to a kernel template can move other instantiations' registers without a line of theirs changing (a
second __launch_bounds__ argument of 1 gave every quantized linear 30-50 % more registers in the twenty-fourth
session, slowing the A/B's baseline arm unnoticed). Compare before and after on this machine, no GPU needed:

    kernels/bench/registers.py BUILD [FILE.cu ...] --save /tmp/before.tsv   # on the tree before the change
    kernels/bench/registers.py BUILD [FILE.cu ...] --compare /tmp/before.tsv # after it: changed lines only

BUILD is a configured meson build directory with CUDA enabled (its compile_commands.json gives each file's nvcc
command, which is rerun with -Xptxas=-v into a temporary object; the build's own objects are not touched). Without
FILE arguments every kernels/*.cu of the library is compiled (a few minutes). Exits 1 where --compare finds a
kernel with more registers or spills than before, 0 otherwise.
"""
import argparse
import json
import os
import re
import shlex
import subprocess
import sys
import tempfile

ENTRY = re.compile(r"Compiling entry function '(\S+)' for '(\S+)'")
SPILL = re.compile(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads")
USED = re.compile(r"Used (\d+) registers(?:.*?(\d+) bytes smem)?")


def library_commands(build):
    """{source path: (directory, argv)} for the kernels library's CUDA files."""
    with open(os.path.join(build, "compile_commands.json")) as f:
        entries = json.load(f)
    out = {}
    for e in entries:
        if e["file"].endswith(".cu") and "libfk_kernels.a.p" in e["command"]:
            out[os.path.normpath(os.path.join(e["directory"], e["file"]))] = (e["directory"], shlex.split(e["command"]))
    return out


def demangle(names):
    try:
        r = subprocess.run(["c++filt"], input="\n".join(names), capture_output=True, text=True, check=True)
        return r.stdout.splitlines()
    except (OSError, subprocess.CalledProcessError):
        return names


def ptxas_report(directory, argv):
    """[(mangled kernel, arch, registers, spill stores, spill loads, stack, smem)] of one file."""
    with tempfile.TemporaryDirectory() as tmp:
        cmd = list(argv)
        cmd[cmd.index("-o") + 1] = os.path.join(tmp, "k.o")
        cmd.insert(1, "-Xptxas=-v")
        r = subprocess.run(cmd, cwd=directory, capture_output=True, text=True)
    if r.returncode:
        sys.exit(f"registers.py: nvcc failed:\n{r.stderr[-4000:]}")
    rows, name, arch, spill = [], None, None, (0, 0, 0)
    for line in r.stderr.splitlines():
        m = ENTRY.search(line)
        if m:
            name, arch, spill = m.group(1), m.group(2), (0, 0, 0)
            continue
        m = SPILL.search(line)
        if m and name:
            spill = (int(m.group(2)), int(m.group(3)), int(m.group(1)))
        m = USED.search(line)
        if m and name:
            rows.append((name, arch, int(m.group(1)), spill[0], spill[1], spill[2], int(m.group(2) or 0)))
            name = None
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("build", help="a configured meson build directory with CUDA enabled")
    ap.add_argument("files", nargs="*", help="kernels/*.cu files (default: every one of the library)")
    ap.add_argument("--save", help="write the table here (tab-separated) as well")
    ap.add_argument("--compare", help="a table saved before: print only the kernels that differ from it")
    a = ap.parse_args()
    commands = library_commands(a.build)
    if not commands:
        sys.exit(f"registers.py: no CUDA files of the kernels library in {a.build}/compile_commands.json")
    wanted = [os.path.realpath(f) for f in a.files]
    chosen = {p: c for p, c in commands.items() if not wanted or os.path.realpath(p) in wanted}
    if wanted and len(chosen) != len(wanted):
        sys.exit("registers.py: not in the kernels library: " +
                 ", ".join(f for f in a.files if os.path.realpath(f) not in map(os.path.realpath, chosen)))
    rows = []
    for path in sorted(chosen):
        for r in ptxas_report(*chosen[path]):
            rows.append((os.path.basename(path),) + r)
    names = demangle([r[1] for r in rows])
    table = {(r[0], n, r[2]): r[3:] for r, n in zip(rows, names)}
    lines = [f"{f}\t{arch}\t{n}\t{v[0]}\t{v[1]}\t{v[2]}\t{v[3]}\t{v[4]}" for (f, n, arch), v in sorted(table.items())]
    if a.save:
        with open(a.save, "w") as out:
            out.write("file\tarch\tkernel\tregisters\tspill_stores\tspill_loads\tstack\tsmem\n")
            out.write("\n".join(lines) + "\n")
    if not a.compare:
        print("registers spill-stores spill-loads stack smem  file  arch  kernel")
        for (f, n, arch), v in sorted(table.items()):
            print(f"{v[0]:4d} {v[1]:6d} {v[2]:6d} {v[3]:6d} {v[4]:6d}  {f}  {arch}  {n}")
        return 0
    before = {}
    with open(a.compare) as f:
        next(f)
        for line in f:
            p = line.rstrip("\n").split("\t")
            before[(p[0], p[2], p[1])] = tuple(int(x) for x in p[3:8])
    worse = False
    files = {k[0] for k in table}
    for key in sorted(set(before) | set(table)):
        if key[0] not in files:
            continue  # a file not compiled this time
        old, new = before.get(key), table.get(key)
        if old == new:
            continue
        if old and new and (new[0] > old[0] or new[1] > old[1] or new[2] > old[2]):
            worse = True
        fmt = lambda v: "-" if v is None else f"{v[0]} regs, {v[1]}/{v[2]} spill"
        print(f"{key[0]}  {key[2]}  {key[1]}: {fmt(old)} -> {fmt(new)}")
    return 1 if worse else 0


if __name__ == "__main__":
    sys.exit(main())
