#!/bin/bash
# Ninth session, call 1: (a) the profile's marks inside a decode graph against the same marks launched eagerly
# (FK_PROFILE_EAGER=1, experiment), every interval dumped (FK_PROFILE_DUMP); (b) INT8 batch 1, traced build against
# untraced, interleaved.
set -u
cd "$(dirname "$0")/.."
T0=$(date +%s)
S=$OUT/summary1.txt; L=$OUT/l1; mkdir -p $L
note() { echo "[$(( $(date +%s) - T0 ))s] $*" | tee -a $S; }
note "device: $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader); tree = $(cat .peers/commit) + profile experiment"
deploy/offline-deps.sh unpack .deps /tmp/fk-deps >/dev/null || { note "unpack failed"; exit 1; }
export LD_LIBRARY_PATH=/tmp/fk-deps/usr/lib/x86_64-linux-gnu
python3 .peers/make_bench_model.py /tmp/bench-1b tests/fixtures/tokenizers/gpt2/tokenizer.json >$L/mk1b.log 2>&1 &
b() { local dir=$1; shift; ( meson setup $dir . -Ddep_prefix=/tmp/fk-deps -Dcuda=enabled -Dcuda-arch=sm_90a "$@" >$dir.setup.log 2>&1 &&
  ninja -C $dir -j8 tools/flashkernel >$dir.build.log 2>&1 ) || note "BUILD FAILED $dir"; }
b /tmp/fk-native & b /tmp/fk-trace -Dcuda_args=-DFK_TRACE &
wait
note "built"
run() { local bin=$1 lab=$2; shift 2
  timeout 90 /tmp/fk-$bin/tools/flashkernel bench-engine --model /tmp/bench-1b --device cuda --max-tokens 128 \
    --max-model-len 4096 --prompt-len 128 "$@" >$L/$lab.log 2>&1
  note "$lab: $(grep -E 'output tokens/s' $L/$lab.log)"; }
run native int8-a1 --requests 1 --quantization int8
FK_TRACE_FILE=$L/t.txt run trace int8-tracefile-1 --requests 1 --quantization int8; rm -f $L/t.txt
run trace int8-tracebuild-nofile-1 --requests 1 --quantization int8
run native int8-a2 --requests 1 --quantization int8
FK_TRACE_FILE=$L/t.txt run trace int8-tracefile-2 --requests 1 --quantization int8; rm -f $L/t.txt
run trace int8-tracebuild-nofile-2 --requests 1 --quantization int8
run native fp16-b1 --requests 1
for n in 1 64; do
  w=""; [ $n -ge 64 ] && w="--warmup $n"
  FK_PROFILE_DUMP=$OUT/dump-graph-b$n.txt run native prof-graph-b$n --requests $n $w --profile
  FK_PROFILE_EAGER=1 FK_PROFILE_DUMP=$OUT/dump-eager-b$n.txt run native prof-eager-b$n --requests $n $w --profile
  FK_PDL=0 FK_PROFILE_EAGER=1 FK_PROFILE_DUMP=$OUT/dump-eager-nopdl-b$n.txt run native prof-eager-nopdl-b$n --requests $n $w --profile
done
gzip $OUT/dump-*.txt
tar czf $OUT/l1.tgz -C $OUT l1
for f in $L/prof-*.log; do echo "== $f"; grep -A8 "profile: decode" $f; done
cat $S
