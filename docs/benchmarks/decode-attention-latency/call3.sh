#!/bin/bash
# Nineteenth session, call 3: marks inside decode attention (FK_TRACE_MARK: 1 after the wait, 2 the query in shared
# memory, 3 the chunks done, 4 the warps merged, 5 the end) in a trace build; fp16 batch 1 with the merge kernel (c0)
# and in clusters (c128), INT4 batch 1 with c0.
set -u
T0=$(date +%s)
S=$OUT/summary3.txt; L=$OUT/l3; mkdir -p $L
note() { echo "[$(( $(date +%s) - T0 ))s] $*" | tee -a $S; }
note "device: $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader); tree $(cat .peers/commit) + working tree"
deploy/offline-deps.sh unpack .deps /tmp/fk-deps >/dev/null
export LD_LIBRARY_PATH=/tmp/fk-deps/usr/lib/x86_64-linux-gnu
[ -d /tmp/bench-1b ] || setsid sh -c "python3 .peers/make_bench_model.py /tmp/bench-1b tests/fixtures/tokenizers/gpt2/tokenizer.json >/tmp/mk1.log 2>&1; echo \$? >/tmp/mk-done" </dev/null >/dev/null 2>&1 &
rm -rf /tmp/fk-tr; meson setup /tmp/fk-tr -Ddep_prefix=/tmp/fk-deps -Dcuda=enabled -Dcuda-arch=sm_90a -Dcuda_args=-DFK_TRACE >/dev/null 2>&1 && ninja -C /tmp/fk-tr -j14 tools/flashkernel > $L/build.log 2>&1
note "build: $(tail -1 $L/build.log)"
for i in $(seq 1 90); do [ -f /tmp/mk-done ] && break; sleep 2; done
eng() { # build label requests prompt extra-args... ; env in E
  local b=$1 label=$2 n=$3 p=$4; shift 4
  env ${E:-X=1} timeout 120 /tmp/$b/tools/flashkernel bench-engine --model /tmp/bench-1b --device cuda --requests $n --prompt-len $p \
    --max-tokens 128 --max-model-len 4096 "$@" >$L/engine-$b-$label.log 2>&1
  note "bench-engine $b $label: $(grep -E 'output tokens/s' $L/engine-$b-$label.log | tail -1)"
}
for x in none-0 none-128 int4-0 none-0-p2000; do
  q=${x%%-*}; r=${x#*-}; c=${r%%-*}; p=128; [ "${x##*-}" = p2000 ] && p=2000
  t=$L/trace-$x.txt
  E="FK_DECODE_CLUSTER_MIN_SPLIT=$c FK_TRACE_FILE=$t" eng fk-tr $x 1 $p --quantization $q
  python3 kernels/bench/trace_report.py $t > $t.report 2>&1; gzip $t
  note "trace $x: $(head -1 $t.report)"; sed -n '/by shape/,$p' $t.report | tee -a $S
done
tar czf $OUT/l3.tgz -C $OUT l3 && rm -rf $L
note done
