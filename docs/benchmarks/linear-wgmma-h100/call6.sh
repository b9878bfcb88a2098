#!/bin/bash
# Fifteenth session, call 6: the gpu suite natively and as compute_75 PTX (tests/gpu/run-on-device.sh test), then
# racecheck on the wgmma linear's op tests (SiLU·mul, every mode) and on bench_linear with line-buffered output.
set -u
T0=$(date +%s)
S=$OUT/summary6.txt; L=$OUT/l6; mkdir -p $L
note() { echo "[$(( $(date +%s) - T0 ))s] $*" | tee -a $S; }
note "device: $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader); tree $(cat .peers/commit)"
OUT=$L timeout 470 tests/gpu/run-on-device.sh test >$L/test.txt 2>&1
note "run-on-device test rc $?"
tail -25 $L/test.txt | tee -a $S
export LD_LIBRARY_PATH=/tmp/fk-deps/usr/lib/x86_64-linux-gnu
left=$(( 575 - ($(date +%s) - T0) ))
if [ $left -gt 30 ]; then
  FK_BENCH_ONLY="llama-3.2-1b o" FK_BENCH_M=24 timeout $left stdbuf -oL compute-sanitizer --tool racecheck --error-exitcode 9 /tmp/fk-native/kernels/bench/bench_linear >$L/race-bench.txt 2>&1
  note "racecheck bench_linear o m=24: exit $?"; grep -vE '^(RESULT|llama)' $L/race-bench.txt | head -12 | tee -a $S
fi
tar czf $OUT/l6.tgz -C $OUT l6 && rm -rf $L
note done
