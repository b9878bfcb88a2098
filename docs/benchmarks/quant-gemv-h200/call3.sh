#!/bin/bash
# Session 3, call 3: SASS with per-instruction executed counts (ncu source page) of the quantized small kernel,
# int4 and int8 1B gate_up m = 1.
set -u
cd "$(dirname "$0")/.."
T0=$(date +%s)
S=$OUT/summary.txt; L=$OUT/l3; mkdir -p $L
note() { echo "[$(( $(date +%s) - T0 ))s] $*" | tee -a $S; }
deploy/offline-deps.sh unpack .deps /tmp/fk-deps >/dev/null || { note "unpack failed"; exit 1; }
export LD_LIBRARY_PATH=/tmp/fk-deps/usr/lib/x86_64-linux-gnu
[ -d /tmp/fk-base ] || meson setup /tmp/fk-base -Ddep_prefix=/tmp/fk-deps -Dcuda=enabled -Dcuda-arch=sm_90a >$L/setup.log 2>&1
ninja -C /tmp/fk-base -j16 kernels/bench/bench_linear >$L/build.log 2>&1 || { note "BUILD FAILED"; exit 1; }
for f in 1 2; do
  FK_BENCH_ONLY="1b gate_up" timeout 100 ncu --clock-control none --kernel-name-base demangled -k "regex:linear_quant_kernel<.int.$f, .int.8, .int.1," -c 1 \
    --section SourceCounters --section WarpStateStats --import-source no -f -o /tmp/r$f /tmp/fk-base/kernels/bench/bench_linear > $L/ncu$f.log 2>&1
  note "ncu $f rc=$?"
  ncu --import /tmp/r$f.ncu-rep --page source --print-source sass --csv > $L/sass$f.csv 2>$L/sass$f.err
  note "source page $f rc=$? $(wc -l < $L/sass$f.csv) lines"
done
