#!/bin/bash
# Session 5, call 8 (commit in .peers/commit): k_sample against its PyTorch peer (bench_kernels + peers.py kernels,
# same run); the kernel timeline (-DFK_TRACE) of decode steps at 1, 16 and 64 requests, fp16 and int4.
set -u
cd "$(dirname "$0")/.."
T0=$(date +%s)
S=$OUT/summary8.txt; L=$OUT/l8; mkdir -p $L
note() { echo "[$(( $(date +%s) - T0 ))s] $*" | tee -a $S; }
note "device: $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader); commit $(cat .peers/commit)"
deploy/offline-deps.sh unpack .deps /tmp/fk-deps >/dev/null || { note "unpack failed"; exit 1; }
export LD_LIBRARY_PATH=/tmp/fk-deps/usr/lib/x86_64-linux-gnu
[ -f /tmp/bench-1b/model.safetensors ] || python3 .peers/make_bench_model.py /tmp/bench-1b tests/fixtures/tokenizers/gpt2/tokenizer.json >$L/mk1b.log 2>&1 &
bld() { local v=$1 src=$2 args=$3; shift 3
  meson setup /tmp/fk-$v $src -Ddep_prefix=/tmp/fk-deps -Dcuda=enabled -Dcuda-arch=sm_90a "-Dcuda_args=$args" >$L/setup-$v.log 2>&1
  ninja -C /tmp/fk-$v -j8 "$@" >$L/build-$v.log 2>&1 || { echo "BUILD FAILED $v" | tee -a $S; tail -20 $L/build-$v.log; }; }
rm -rf /tmp/fk-native /tmp/fk-trace
bld native . "" tools/flashkernel kernels/bench/bench_kernels &
bld trace . "-DFK_TRACE" tools/flashkernel &
wait; wait; note "built"
/tmp/fk-native/kernels/bench/bench_kernels --only k_sample --iters 1000 --warmup 100 --json $L/ours.json >$L/kernels.txt 2>&1
timeout 200 python3 kernels/bench/peers.py kernels --ours $L/ours.json --json $L/peers.json --only k_sample --compile none >$L/peers.log 2>&1; note "peers: exit $?"
python3 kernels/bench/report.py --ours $L/ours.json --peers $L/peers.json --out $L/report >$L/report.log 2>&1; note "report.py: exit $?"
grep -E "k_sample" $L/report/kernels-tables.md | head -20 | tee -a $S
for q in none int4; do for n in 1 16 64; do
  w=""; [ $n = 64 ] && w="--warmup 64"
  FK_TRACE_FILE=$L/trace-$q-b$n.txt timeout 90 /tmp/fk-trace/tools/flashkernel bench-engine --model /tmp/bench-1b --device cuda --prompt-len 128 --max-tokens 128 --max-model-len 4096 --requests $n $w --quantization $q >$L/trace-$q-b$n.log 2>&1
  note "trace $q b$n: $(grep -E 'output tokens/s' $L/trace-$q-b$n.log)"
  python3 kernels/bench/trace_report.py $L/trace-$q-b$n.txt > $L/report-$q-b$n.txt 2>&1; note "report $q b$n: $(head -1 $L/report-$q-b$n.txt)"
  sed -n '/by shape/,$p' $L/report-$q-b$n.txt | tee -a $S
done; done
gzip $L/trace-*.txt
tar czf $OUT/l8.tgz -C $OUT l8 && rm -rf $L
