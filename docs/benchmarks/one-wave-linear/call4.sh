#!/bin/bash
# Seventeenth session, call 4: test_gpu_model on the compute_75 PTX build alone (call 3 ran the two suites side by
# side and this one found the GPU's memory taken by the other); compute-sanitizer memcheck and racecheck on every
# k_linear_small row of bench_kernels (the one-batch form and the one-wave warp counts, every model shape at 1, 4, 8,
# 16 tokens); bench-8b (Llama-3-8B shapes) at batch 1, old against new, where the one-wave rule takes 8-warp blocks.
set -u
T0=$(date +%s)
S=$OUT/summary4.txt; L=$OUT/l4; mkdir -p $L
note() { echo "[$(( $(date +%s) - T0 ))s] $*" | tee -a $S; }
note "device: $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader); tree $(cat .peers/commit) + working tree"
deploy/offline-deps.sh unpack .deps /tmp/fk-deps >/dev/null
export LD_LIBRARY_PATH=/tmp/fk-deps/usr/lib/x86_64-linux-gnu
bld() { # dir arch targets... (extra cuda args in CA)
  local d=$1 arch=$2; shift 2
  rm -rf $d; meson setup $d -Ddep_prefix=/tmp/fk-deps -Dcuda=enabled -Dcuda-arch=$arch ${CA:+"-Dcuda_args=$CA"} >/dev/null 2>&1 &&
  ninja -C $d -j5 "$@" >$L/build-$(basename $d).log 2>&1; echo "$(basename $d): $(tail -1 $L/build-$(basename $d).log)"
}
bld /tmp/fk-ptx75 compute_75 tests/gpu/test_gpu_model > $L/b1.txt &
bld /tmp/fk-native sm_90a tools/flashkernel kernels/bench/bench_kernels > $L/b2.txt &
CA="-DFK_LINEAR_ONE_BATCH=0 -DFK_LINEAR_ONE_WAVE=0" bld /tmp/fk-old sm_90a tools/flashkernel > $L/b3.txt &
wait
note "builds: $(cat $L/b?.txt | tr '\n' ' ')"
OMP_NUM_THREADS=4 timeout 120 /tmp/fk-ptx75/tests/gpu/test_gpu_model >$L/t75-model.txt 2>&1
note "ptx75 test_gpu_model alone: rc $? $(grep -E 'PASSED|FAILED' $L/t75-model.txt | tr '\n' ' ')"
setsid sh -c "python3 loadtest/make_bench_8b.py /tmp/bench-8b tests/fixtures/tokenizers/gpt2/tokenizer.json >/tmp/mk8.log 2>&1; echo \$? >/tmp/mk8-done" </dev/null >/dev/null 2>&1 &
for tool in memcheck racecheck; do
  extra=""; [ $tool = memcheck ] && extra="--leak-check full"
  timeout 150 compute-sanitizer --tool $tool $extra --error-exitcode 9 /tmp/fk-native/kernels/bench/bench_kernels --only k_linear_small --iters 1 --warmup 0 >$L/san-$tool.txt 2>&1
  note "compute-sanitizer $tool, bench_kernels --only k_linear_small: exit $? — rows $(grep -c 'k_linear_small' $L/san-$tool.txt) $(grep -E 'ERROR SUMMARY|LEAK SUMMARY|RACECHECK SUMMARY' $L/san-$tool.txt | tr '\n' ' ')"
done
for i in $(seq 1 120); do [ -f /tmp/mk8-done ] && break; sleep 2; done
note "bench-8b: $(cat /tmp/mk8-done 2>/dev/null) $(tail -1 /tmp/mk8.log)"
eng() { # build label requests prompt extra-args...
  local b=$1 label=$2 n=$3 p=$4; shift 4
  timeout 100 /tmp/$b/tools/flashkernel bench-engine --model /tmp/bench-8b --device cuda --requests $n --prompt-len $p \
    --max-tokens 128 --max-model-len 4096 "$@" >$L/engine-$b-$label.log 2>&1
  note "bench-engine bench-8b $b $label: $(grep -E 'output tokens/s' $L/engine-$b-$label.log | tail -1)"
}
for r in 1 2; do for b in fk-old fk-native; do [ $(( $(date +%s) - T0 )) -lt 500 ] && eng $b b1-r$r 1 128; done; done
tar czf $OUT/l4.tgz -C $OUT l4 && rm -rf $L
note done
