#!/bin/bash
# Eighth session, call 2: where add_rms_norm lets the next kernel launch (FK_NORM_TRIGGER 0 after its wait, 1 once
# its row is loaded, 2 at its end), on the working tree (split rule now only where tiles < SMs), against HEAD.
set -u
cd "$(dirname "$0")/.."
T0=$(date +%s)
S=$OUT/summary2.txt; L=$OUT/l2; mkdir -p $L
note() { echo "[$(( $(date +%s) - T0 ))s] $*" | tee -a $S; }
note "device: $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader); old = $(cat .peers/commit) (HEAD), new = working tree"
deploy/offline-deps.sh unpack .deps /tmp/fk-deps >/dev/null || { note "unpack failed"; exit 1; }
export LD_LIBRARY_PATH=/tmp/fk-deps/usr/lib/x86_64-linux-gnu
[ -f /tmp/bench-1b/config.json ] || python3 .peers/make_bench_model.py /tmp/bench-1b tests/fixtures/tokenizers/gpt2/tokenizer.json >$L/mk1b.log 2>&1 &
rm -rf /tmp/src-old; mkdir /tmp/src-old; tar cf - --exclude=./.deps --exclude=./.peers --exclude=./.git . | tar xf - -C /tmp/src-old
cp -r .peers/old/. /tmp/src-old/
b() { local dir=$1 src=$2; shift 2; rm -rf $dir; ( meson setup $dir $src -Ddep_prefix=/tmp/fk-deps -Dcuda=enabled -Dcuda-arch=sm_90a "$@" >$dir.setup.log 2>&1 &&
  ninja -C $dir -j4 tools/flashkernel kernels/bench/bench_linear >$dir.build.log 2>&1 ) || note "BUILD FAILED $dir"; }
b /tmp/fk-old /tmp/src-old & b /tmp/fk-new . & b /tmp/fk-nt1 . -Dcuda_args=-DFK_NORM_TRIGGER=1 & b /tmp/fk-nt2 . -Dcuda_args=-DFK_NORM_TRIGGER=2 &
b /tmp/fk-tr1 . -Dcuda_args="-DFK_TRACE -DFK_NORM_TRIGGER=1" &
wait
note "all built"
run() { local v=$1 lab=$2; shift 2
  timeout 90 /tmp/fk-$v/tools/flashkernel bench-engine --model /tmp/bench-1b --device cuda --max-tokens 128 \
    --max-model-len 4096 "$@" >$L/$v-$lab.log 2>&1
  note "$v $lab: $(grep -E 'output tokens/s' $L/$v-$lab.log)"; }
VS="old new nt1 nt2"
for r in 1 2; do for v in $VS; do
  run $v none-b1-$r --prompt-len 128 --requests 1
  run $v int4-b1-$r --prompt-len 128 --requests 1 --quantization int4
done; done
for v in $VS; do
  run $v int8-b1 --prompt-len 128 --requests 1 --quantization int8
  run $v none-b16 --prompt-len 128 --requests 16
done
FK_BENCH_ONLY="llama-3-8b qkv" timeout 60 /tmp/fk-new/kernels/bench/bench_linear >$OUT/bench-linear-8bqkv-new.txt 2>&1; note "bench_linear 8b qkv: exit $?"
FK_TRACE_FILE=$L/trace.txt timeout 90 /tmp/fk-tr1/tools/flashkernel bench-engine --model /tmp/bench-1b --device cuda --max-tokens 128 \
    --max-model-len 4096 --prompt-len 128 --requests 1 >$L/trace.log 2>&1
python3 kernels/bench/trace_report.py $L/trace.txt >$OUT/trace-fp16-b1-nt1.txt 2>&1; rm -f $L/trace.txt
note "trace nt1 fp16: $(grep -E 'output tokens/s' $L/trace.log); $(head -1 $OUT/trace-fp16-b1-nt1.txt)"
tar czf $OUT/l2.tgz -C $OUT l2
echo; echo "label: $VS"
for lab in none-b1-1 none-b1-2 int4-b1-1 int4-b1-2 int8-b1 none-b16; do
  printf "%-14s" $lab; for v in $VS; do printf " %10s" "$(grep "] $v $lab:" $S | awk '{print $NF}')"; done; echo; done
grep -E " (12|16) \|" $OUT/bench-linear-8bqkv-new.txt | grep -v int
sed -n 1,20p $OUT/trace-fp16-b1-nt1.txt; tail -11 $OUT/trace-fp16-b1-nt1.txt
