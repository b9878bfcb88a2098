#!/bin/bash
# Fifteenth session, call 9: racecheck on the SiLU·mul linear tests with every hazard printed (call 7 displayed 100 of
# 125); bench_kernels' k_linear_wgmma rows; flashkernel-server at 64 clients (128/128 and 1,024/256) with the wgmma
# linear and without it (FK_WGMMA_LINEAR_MAX_M=0), alternated, and bench-engine at 64 beside it.
set -u
T0=$(date +%s)
S=$OUT/summary9.txt; L=$OUT/l9; mkdir -p $L
note() { echo "[$(( $(date +%s) - T0 ))s] $*" | tee -a $S; }
note "device: $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader); tree $(cat .peers/commit)"
deploy/offline-deps.sh unpack .deps /tmp/fk-deps >/dev/null
export LD_LIBRARY_PATH=/tmp/fk-deps/usr/lib/x86_64-linux-gnu
setsid sh -c "python3 .peers/make_bench_model.py /tmp/bench-1b tests/fixtures/tokenizers/gpt2/tokenizer.json >/tmp/mk1.log 2>&1 && python3 .peers/make_bench_model_ascii.py /tmp/bench-1b /tmp/bench-1b-ascii >/tmp/mk2.log 2>&1; echo \$? >/tmp/mk-done" </dev/null >/dev/null 2>&1 &
meson setup /tmp/fk-native -Ddep_prefix=/tmp/fk-deps -Dcuda=enabled -Dcuda-arch=sm_90a >/dev/null 2>&1
ninja -C /tmp/fk-native tools/flashkernel server/flashkernel-server loadtest/flashkernel-loadtest tests/gpu/test_gpu_ops \
  kernels/bench/bench_kernels >$L/build.log 2>&1
note "built: $(tail -1 $L/build.log)"
FK_TEST_FILTER="test_linear_silu_mul" FK_TEST_UNDER_SANITIZER=1 timeout 200 compute-sanitizer --tool racecheck --print-limit 100000 \
  --error-exitcode 9 /tmp/fk-native/tests/gpu/test_gpu_ops >$L/race-silu.txt 2>&1
note "racecheck test_linear_silu_mul: exit $? $(grep -E 'PASSED|FAILED|RACECHECK SUMMARY' $L/race-silu.txt | tr '\n' ' ')"
grep -E 'Race reported' -A1 $L/race-silu.txt | grep -oE 'at [A-Za-z_0-9]+' | sed -E 's/^at //; s/^nvjet.*/nvjet_* (cuBLAS)/' | sort | uniq -c | tee -a $S
timeout 60 /tmp/fk-native/kernels/bench/bench_kernels --only k_linear_wgmma >$L/bench-kernels.txt 2>&1
note "bench_kernels --only k_linear_wgmma: rc $?"; grep -E 'llama1b|llama-1b|gate_up|lm_head' $L/bench-kernels.txt | head -12 | tee -a $S
for i in $(seq 1 120); do [ -f /tmp/mk-done ] && break; sleep 2; done
note "models: $(cat /tmp/mk-done 2>/dev/null)"
srv() { # label env...
  local label=$1; shift
  env "$@" FK_SERVERS=flashkernel FK_STEPS=closed FK_CONCURRENCY="64" FK_LONG_CONCURRENCY="64" FK_ROUNDS=4 timeout 150 \
    loadtest/run-peer-benchmark.sh /tmp/fk-native/server/flashkernel-server /tmp/fk-native/loadtest/flashkernel-loadtest \
    /bin/false /tmp/bench-1b-ascii /dev/null $L/serving-$label >$L/serving-$label.log 2>&1
  note "server $label: rc $?"; grep -E "^ +64 " $L/serving-$label/benchmark.txt | tee -a $S
}
eng() { # label env...
  local label=$1; shift
  env "$@" timeout 120 /tmp/fk-native/tools/flashkernel bench-engine --model /tmp/bench-1b-ascii --device cuda --requests 64 --warmup 64 \
    --prompt-len 128 --max-tokens 128 --max-model-len 4096 >$L/engine-$label.log 2>&1
  note "bench-engine 64 (bench-1b-ascii) $label: $(grep -E 'output tokens/s' $L/engine-$label.log | tail -1)"
}
srv wgmma X=1; srv cublas FK_WGMMA_LINEAR_MAX_M=0; srv wgmma2 X=1
eng wgmma X=1; eng cublas FK_WGMMA_LINEAR_MAX_M=0
head -30 $L/serving-wgmma/benchmark.txt > $L/benchmark-head.txt
tar czf $OUT/l9.tgz -C $OUT l9 && rm -rf $L
note done
