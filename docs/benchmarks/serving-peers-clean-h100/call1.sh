#!/bin/bash
# Thirteenth session, call 1: llama.cpp's build and bench-8b's making started in the background for later calls; the
# gpu suite natively and as compute_75 PTX on the shared online-softmax step; compute-sanitizer on the attention op
# tests; bench_kernels' attention rows, new against old (the three kernel files of the commit before), alternated.
set -u
T0=$(date +%s)
S=$OUT/summary1.txt; L=$OUT/l1; mkdir -p $L
note() { echo "[$(( $(date +%s) - T0 ))s] $*" | tee -a $S; }
note "device: $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader); commit $(cat .peers/commit)"
OUT=$L/start sh tests/gpu/run-on-device.sh llamacpp-start >$L/start.log 2>&1
note "llama.cpp build started"
# bench-8b for a later call: the model (torch on the GPU), then its GGUF once llama.cpp's source is unpacked
setsid sh -c "python3 loadtest/make_bench_8b.py /tmp/bench-8b tests/fixtures/tokenizers/gpt2/tokenizer.json >/tmp/make-8b.log 2>&1;
  for i in \$(seq 1 60); do [ -f /tmp/llama.cpp/convert_hf_to_gguf.py ] && break; sleep 2; done;
  PYTHONPATH=/tmp/llama.cpp/gguf-py python3 /tmp/llama.cpp/convert_hf_to_gguf.py /tmp/bench-8b --outtype f16 --outfile /tmp/b8b-f16.gguf >/tmp/convert-8b.log 2>&1;
  echo \$? > /tmp/b8b-done" </dev/null >/dev/null 2>&1 &
OUT=$L/suite sh tests/gpu/run-on-device.sh test >$L/suite.log 2>&1; note "suite rc $?"
grep -E "gpu suite|BUILD|FAIL" $L/suite/summary.txt | tee -a $S
export LD_LIBRARY_PATH=/tmp/fk-deps/usr/lib/x86_64-linux-gnu
for tool in memcheck racecheck; do
  extra=""; [ $tool = memcheck ] && extra="--leak-check full"
  FK_TEST_FILTER="test_attention*" FK_TEST_DEVICE=cuda FK_TEST_UNDER_SANITIZER=1 OMP_WAIT_POLICY=passive timeout 150 \
    compute-sanitizer --tool $tool $extra --error-exitcode 9 /tmp/fk-native/tests/gpu/test_gpu_ops >$L/$tool.log 2>&1
  note "$tool test_attention*: rc $? $(grep -cE '^\[       OK' $L/$tool.log) ok, $(grep -E 'FAILED' $L/$tool.log | head -1) $(grep -E 'ERROR SUMMARY|LEAK SUMMARY|RACECHECK SUMMARY' $L/$tool.log | tr '\n' ' ')"
done
# old: the same tree with the three attention files of the commit before
rm -rf /tmp/old-tree && mkdir /tmp/old-tree && cp -r $(ls -A | grep -vE '^(\.deps|\.peers|\.git)$') /tmp/old-tree/ &&
  cp .peers/s13/old/*.cu /tmp/old-tree/kernels/ && rm -f /tmp/old-tree/kernels/online_softmax.cuh
(cd /tmp/old-tree && meson setup /tmp/fk-old -Ddep_prefix=/tmp/fk-deps -Dcuda=enabled -Dcuda-arch=sm_90a >/dev/null 2>&1 &&
  ninja -C /tmp/fk-old kernels/bench/bench_kernels >$L/old-build.log 2>&1); note "old bench_kernels built: rc $?"
for r in 1 2; do
  [ $(( $(date +%s) - T0 )) -gt 480 ] && break
  for v in new old; do
    b=/tmp/fk-native/kernels/bench/bench_kernels; [ $v = old ] && b=/tmp/fk-old/kernels/bench/bench_kernels
    for k in k_attention_decode "k_attention_prefill mma_sync"; do
      timeout 60 $b --only "$k" --warmup 20 --iters 200 >>$L/bk-$v-$r.txt 2>&1
    done
    note "bench_kernels $v round $r: rc $?"
  done
done
note "llama.cpp: $(cat /tmp/llama.cpp/done 2>/dev/null || echo building); bench-8b: $(cat /tmp/b8b-done 2>/dev/null || echo making) $(tail -1 /tmp/make-8b.log 2>/dev/null)"
cp /tmp/make-8b.log /tmp/convert-8b.log $L/ 2>/dev/null
