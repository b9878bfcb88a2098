#!/bin/bash
# Fifteenth session, call 4: where the wgmma linear wins or loses inside the step. bench-engine fp16 at 32 / 48 / 64
# requests: cuBLAS (FK_WGMMA_LINEAR_MAX_M=0), wgmma on unsplit linears only (FK_WGMMA_LINEAR_SPLITS=0: gate|up, the
# head), wgmma everywhere (cluster split-K), alternated; then the -DFK_TRACE build's kernel timeline at 64 requests
# for each.
set -u
T0=$(date +%s)
S=$OUT/summary4.txt; L=$OUT/l4; mkdir -p $L
note() { echo "[$(( $(date +%s) - T0 ))s] $*" | tee -a $S; }
note "device: $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader); tree $(cat .peers/commit)"
deploy/offline-deps.sh unpack .deps /tmp/fk-deps >/dev/null
export LD_LIBRARY_PATH=/tmp/fk-deps/usr/lib/x86_64-linux-gnu
[ -d /tmp/bench-1b ] || setsid sh -c "python3 .peers/make_bench_model.py /tmp/bench-1b tests/fixtures/tokenizers/gpt2/tokenizer.json >/tmp/mk1.log 2>&1; echo \$? >/tmp/mk-done" </dev/null >/dev/null 2>&1 &
( meson setup /tmp/fk-native -Ddep_prefix=/tmp/fk-deps -Dcuda=enabled -Dcuda-arch=sm_90a >/dev/null 2>&1;
  ninja -C /tmp/fk-native -j8 tools/flashkernel >$L/build.log 2>&1 ) &
( meson setup /tmp/fk-trace -Ddep_prefix=/tmp/fk-deps -Dcuda=enabled -Dcuda-arch=sm_90a -Dcuda_args=-DFK_TRACE >/dev/null 2>&1;
  ninja -C /tmp/fk-trace -j8 tools/flashkernel >$L/build-trace.log 2>&1 ) &
wait
note "built: $(tail -1 $L/build.log) / $(tail -1 $L/build-trace.log)"
for i in $(seq 1 90); do [ -f /tmp/mk-done ] && break; sleep 2; done
note "model: $(cat /tmp/mk-done 2>/dev/null)"
eng() { # build label N env...
  local b=$1 label=$2 n=$3; shift 3
  env "$@" timeout 120 /tmp/$b/tools/flashkernel bench-engine --model /tmp/bench-1b --device cuda --requests $n --warmup $n --prompt-len 128 \
    --max-tokens 128 --max-model-len 4096 >$L/engine-$b-$label-$n.log 2>&1
  note "bench-engine $b $n requests $label: $(grep -E 'output tokens/s' $L/engine-$b-$label-$n.log | tail -1)"
}
for r in 1 2; do
  eng fk-native cublas 64 FK_WGMMA_LINEAR_MAX_M=0; eng fk-native unsplit 64 FK_WGMMA_LINEAR_SPLITS=0; eng fk-native all 64 X=1
done
for n in 32 48; do
  eng fk-native cublas $n FK_WGMMA_LINEAR_MAX_M=0; eng fk-native unsplit $n FK_WGMMA_LINEAR_SPLITS=0; eng fk-native all $n X=1
done
for v in "cublas FK_WGMMA_LINEAR_MAX_M=0" "unsplit FK_WGMMA_LINEAR_SPLITS=0" "all X=1"; do
  set -- $v
  eng fk-trace $1 64 $2 FK_TRACE_FILE=$L/trace-$1.txt
  python3 kernels/bench/trace_report.py $L/trace-$1.txt > $L/trace-$1-report.txt 2>&1
  note "trace $1: $(head -1 $L/trace-$1-report.txt)"
  sed -n '/by shape/,$p' $L/trace-$1-report.txt | head -14 | tee -a $S
  gzip $L/trace-$1.txt
done
tar czf $OUT/l4.tgz -C $OUT l4 && rm -rf $L
note done
