#!/bin/bash
# Eighth session, call 10, at HEAD: the step profile with programmatic dependent launch off (FK_PDL=0), where the
# marks cut between ops that do not overlap; and traced INT4 and INT8 batch-1 steps of the kept code.
set -u
cd "$(dirname "$0")/.."
T0=$(date +%s)
S=$OUT/summary10.txt; L=$OUT/l10; mkdir -p $L
note() { echo "[$(( $(date +%s) - T0 ))s] $*" | tee -a $S; }
note "device: $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader); tree = $(cat .peers/commit)"
deploy/offline-deps.sh unpack .deps /tmp/fk-deps >/dev/null || { note "unpack failed"; exit 1; }
export LD_LIBRARY_PATH=/tmp/fk-deps/usr/lib/x86_64-linux-gnu
python3 .peers/make_bench_model.py /tmp/bench-1b tests/fixtures/tokenizers/gpt2/tokenizer.json >$L/mk1b.log 2>&1 &
b() { local dir=$1; shift; ( meson setup $dir . -Ddep_prefix=/tmp/fk-deps -Dcuda=enabled -Dcuda-arch=sm_90a "$@" >$dir.setup.log 2>&1 &&
  ninja -C $dir -j8 tools/flashkernel >$dir.build.log 2>&1 ) || note "BUILD FAILED $dir"; }
b /tmp/fk-native & b /tmp/fk-trace -Dcuda_args=-DFK_TRACE &
wait
run() { local bin=$1 lab=$2; shift 2
  timeout 90 /tmp/fk-$bin/tools/flashkernel bench-engine --model /tmp/bench-1b --device cuda --max-tokens 128 \
    --max-model-len 4096 --prompt-len 128 "$@" >$L/$lab.log 2>&1
  note "$lab: $(grep -E 'output tokens/s' $L/$lab.log)"; }
for n in 1 64; do
  w=""; [ $n -ge 64 ] && w="--warmup $n"
  FK_PDL=0 run native profile-nopdl-b$n --requests $n $w --profile; cp $L/profile-nopdl-b$n.log $OUT/profile-nopdl-b$n.txt
  FK_PDL=0 run native nopdl-b$n --requests $n $w
done
for q in int4 int8; do
  FK_TRACE_FILE=$L/trace.txt run trace trace-$q --requests 1 --quantization $q
  python3 kernels/bench/trace_report.py $L/trace.txt >$OUT/trace-$q-b1.txt 2>&1; rm -f $L/trace.txt
  note "trace $q: $(head -1 $OUT/trace-$q-b1.txt)"
done
tar czf $OUT/l10.tgz -C $OUT l10
for n in 1 64; do grep -A8 "profile: decode" $OUT/profile-nopdl-b$n.txt; done
for q in int4 int8; do tail -11 $OUT/trace-$q-b1.txt; done
