#!/bin/bash
# Eighteenth session, call 7 (call 6's machine): bench-8b at batch 1: the default, FK_PDL_EARLY=0, and a build with
# -DFK_LINEAR_ONE_WAVE=2 (the one-wave rule for SiLU·mul only); then racecheck on the linear op tests (time-guarded).
set -u
T0=$(date +%s)
S=$OUT/summary7.txt; L=$OUT/l7; mkdir -p $L
note() { echo "[$(( $(date +%s) - T0 ))s] $*" | tee -a $S; }
note "device: $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader); tree $(cat .peers/commit)"
deploy/offline-deps.sh unpack .deps /tmp/fk-deps >/dev/null
export LD_LIBRARY_PATH=/tmp/fk-deps/usr/lib/x86_64-linux-gnu
setsid sh -c "python3 loadtest/make_bench_8b.py /tmp/bench-8b tests/fixtures/tokenizers/gpt2/tokenizer.json >/tmp/mk8.log 2>&1; echo \$? >/tmp/mk8-done" </dev/null >/dev/null 2>&1 &
rm -rf /tmp/fk-ow2; meson setup /tmp/fk-ow2 -Ddep_prefix=/tmp/fk-deps -Dcuda=enabled -Dcuda-arch=sm_90a -Dcuda_args=-DFK_LINEAR_ONE_WAVE=2 >/dev/null 2>&1 && ninja -C /tmp/fk-ow2 -j8 tools/flashkernel > $L/build-ow2.log 2>&1
note "build ow2: $(tail -1 $L/build-ow2.log); native: $(ls /tmp/fk-native/tools/flashkernel)"
for i in $(seq 1 120); do [ -f /tmp/mk8-done ] && break; sleep 2; done
note "bench-8b: $(cat /tmp/mk8-done 2>/dev/null) $(tail -1 /tmp/mk8.log)"
e8() { # build label ; env in E
  local b=$1 label=$2
  env ${E:-X=1} timeout 100 /tmp/$b/tools/flashkernel bench-engine --model /tmp/bench-8b --device cuda --requests 1 --prompt-len 128 \
    --max-tokens 128 --max-model-len 4096 >$L/engine8-$b-$label.log 2>&1
  note "bench-8b $b $label: $(grep -E 'output tokens/s' $L/engine8-$b-$label.log | tail -1)"
}
e8 fk-native default; E=FK_PDL_EARLY=0 e8 fk-native e0; e8 fk-ow2 default
left=$(( 560 - ($(date +%s) - T0) ))
note "racecheck, $left s left"
FK_TEST_FILTER=test_linear_silu_mul timeout $left compute-sanitizer --tool racecheck /tmp/fk-native/tests/gpu/test_gpu_ops > $L/racecheck.txt 2>&1; echo "rc $?" >> $L/racecheck.txt
note "racecheck: $(tail -4 $L/racecheck.txt | tr '\n' ' ')"
tar czf $OUT/l7.tgz -C $OUT l7 && rm -rf $L
note done
