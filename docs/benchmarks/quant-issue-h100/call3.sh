#!/bin/bash
# Seventh session, call 3: the staged kernel with a leaner unit loop (8 warps x 2 steps, and 16 warps x 1 step), two
# MMA chains per INT4 step (both kernels), against HEAD; SASS instruction mix of the register-streamed INT4 gate|up.
set -u
cd "$(dirname "$0")/.."
T0=$(date +%s)
S=$OUT/summary3.txt; L=$OUT/l3; mkdir -p $L
note() { echo "[$(( $(date +%s) - T0 ))s] $*" | tee -a $S; }
note "device: $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader); old = $(cat .peers/commit) (HEAD), new = working tree"
deploy/offline-deps.sh unpack .deps /tmp/fk-deps >/dev/null || { note "unpack failed"; exit 1; }
export LD_LIBRARY_PATH=/tmp/fk-deps/usr/lib/x86_64-linux-gnu
python3 .peers/make_bench_model.py /tmp/bench-1b tests/fixtures/tokenizers/gpt2/tokenizer.json >$L/mk1b.log 2>&1 &
rm -rf /tmp/src-old; mkdir /tmp/src-old; tar cf - --exclude=./.deps --exclude=./.peers --exclude=./.git . | tar xf - -C /tmp/src-old
cp -r .peers/old/. /tmp/src-old/
( meson setup /tmp/fk-old /tmp/src-old -Ddep_prefix=/tmp/fk-deps -Dcuda=enabled -Dcuda-arch=sm_90a >$L/setup-old.log 2>&1 &&
  ninja -C /tmp/fk-old -j5 tools/flashkernel kernels/bench/bench_kernels >$L/build-old.log 2>&1 ) || note "BUILD FAILED old" &
( meson setup /tmp/fk-w16 . -Ddep_prefix=/tmp/fk-deps -Dcuda=enabled -Dcuda-arch=sm_90a "-Dcuda_args=-DFK_QSTAGED_WARPS=16 -DFK_QSTAGED_SPW=1" >$L/setup-w16.log 2>&1 &&
  ninja -C /tmp/fk-w16 -j5 tools/flashkernel kernels/bench/bench_kernels >$L/build-w16.log 2>&1 ) || note "BUILD FAILED w16" &
( meson setup /tmp/fk-native . -Ddep_prefix=/tmp/fk-deps -Dcuda=enabled -Dcuda-arch=sm_90a >$L/setup-n.log 2>&1 &&
  ninja -C /tmp/fk-native -j6 tools/flashkernel tests/gpu/test_gpu_ops kernels/bench/bench_kernels >$L/build-n.log 2>&1 ) || note "BUILD FAILED native"
wait
note "all built"
for v in old native; do
  o=$(find /tmp/fk-$v -name "linear_quant.cu.o" | head -1)
  cuobjdump -sass -fun '_ZN55_GLOBAL__N__' $o >/dev/null 2>&1
  cuobjdump -sass $o > $L/sass-$v-linear_quant.txt 2>&1
  python3 - $L/sass-$v-linear_quant.txt > $OUT/sass-mix-$v.txt <<'PY'
import re,sys,collections
txt=open(sys.argv[1]).read()
for fn in re.split(r'\n\s*Function : ',txt)[1:]:
    name=fn.split('\n')[0]
    if 'linear_quant_kernelILi2ELi8ELi1ELi2E' not in name and 'linear_quant_kernelILi2ELi8ELi1ELi0E' not in name: continue
    ops=collections.Counter()
    for l in fn.split('\n'):
        m=re.match(r'\s*/\*[0-9a-f]+\*/\s+(@!?U?P\w+\s+)?([A-Z][A-Z0-9_.]*)',l)
        if m: ops[m.group(2).split('.')[0]]+=1
    print(name, sum(ops.values())); print(ops.most_common(25))
PY
done
FK_TEST_FILTER=test_quant_linear_silu_mul timeout 150 /tmp/fk-native/tests/gpu/test_gpu_ops >$L/op-silu.log 2>&1; note "op silu_mul: exit $?"
run() { local v=$1 lab=$2; shift 2
  timeout 90 /tmp/fk-$v/tools/flashkernel bench-engine --model /tmp/bench-1b --device cuda --max-tokens 128 \
    --max-model-len 4096 "$@" >$L/$v-$lab.log 2>&1
  note "$v $lab: $(grep -E 'output tokens/s' $L/$v-$lab.log)"; }
for r in 1 2; do for q in int4 int8; do
  run old $q-b1-$r --prompt-len 128 --requests 1 --quantization $q
  FK_QUANT_STAGED_KB=0 run native $q-b1-kb0-$r --prompt-len 128 --requests 1 --quantization $q
  FK_QUANT_STAGED_KB=96 run native $q-b1-kb96-$r --prompt-len 128 --requests 1 --quantization $q
  FK_QUANT_STAGED_KB=200 run native $q-b1-kb200-$r --prompt-len 128 --requests 1 --quantization $q
  FK_QUANT_STAGED_KB=96 run w16 $q-b1-kb96-$r --prompt-len 128 --requests 1 --quantization $q
  FK_QUANT_STAGED_KB=200 run w16 $q-b1-kb200-$r --prompt-len 128 --requests 1 --quantization $q
done; done
for v in old native w16; do
  timeout 60 ncu --clock-control none --profile-from-start off --section SpeedOfLight --section SchedulerStats --section LaunchStats \
    --metrics smsp__inst_executed.sum,sm__cycles_active.avg \
    /tmp/fk-$v/kernels/bench/bench_kernels --ncu --only "int4" --main > $L/ncu-$v.txt 2>&1; note "ncu $v: exit $?"
  grep -E "^  [a-z_ ]*void.*linear_quant|Duration  |inst_executed|Issued Warp|cycles_active" $L/ncu-$v.txt | grep -v "^ *$" | cut -c1-150 | grep -B1 -A4 "linear_quant" | head -30 > $OUT/ncu-main-$v.txt
done
tar czf $OUT/l3.tgz -C $OUT l3
cat $OUT/sass-mix-*.txt
echo; echo "label: old native-kb0 native-kb96 native-kb200 w16-kb96 w16-kb200"
for q in int4 int8; do for r in 1 2; do printf "%-10s" $q-$r
  for c in "old $q-b1-$r" "native $q-b1-kb0-$r" "native $q-b1-kb96-$r" "native $q-b1-kb200-$r" "w16 $q-b1-kb96-$r" "w16 $q-b1-kb200-$r"; do
    printf " %9s" "$(grep "] $c:" $S | awk '{print $NF}')"; done; echo; done; done
cat $OUT/ncu-main-*.txt
