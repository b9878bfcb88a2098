#!/bin/bash
# Seventh session, call 4: the register-streamed quantized kernel with its pointers set up once and the batches past
# a split's end skipped (working tree) against HEAD: instruction counts (ncu), op tests, A/B decode.
set -u
cd "$(dirname "$0")/.."
T0=$(date +%s)
S=$OUT/summary4.txt; L=$OUT/l4; mkdir -p $L
note() { echo "[$(( $(date +%s) - T0 ))s] $*" | tee -a $S; }
note "device: $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader); old = $(cat .peers/commit) (HEAD), new = working tree"
deploy/offline-deps.sh unpack .deps /tmp/fk-deps >/dev/null || { note "unpack failed"; exit 1; }
export LD_LIBRARY_PATH=/tmp/fk-deps/usr/lib/x86_64-linux-gnu
python3 .peers/make_bench_model.py /tmp/bench-1b tests/fixtures/tokenizers/gpt2/tokenizer.json >$L/mk1b.log 2>&1 &
rm -rf /tmp/src-old; mkdir /tmp/src-old; tar cf - --exclude=./.deps --exclude=./.peers --exclude=./.git . | tar xf - -C /tmp/src-old
cp -r .peers/old/. /tmp/src-old/
( meson setup /tmp/fk-old /tmp/src-old -Ddep_prefix=/tmp/fk-deps -Dcuda=enabled -Dcuda-arch=sm_90a >$L/setup-old.log 2>&1 &&
  ninja -C /tmp/fk-old -j7 tools/flashkernel kernels/bench/bench_kernels >$L/build-old.log 2>&1 ) || note "BUILD FAILED old" &
( meson setup /tmp/fk-native . -Ddep_prefix=/tmp/fk-deps -Dcuda=enabled -Dcuda-arch=sm_90a >$L/setup-n.log 2>&1 &&
  ninja -C /tmp/fk-native -j8 tools/flashkernel tests/gpu/test_gpu_ops kernels/bench/bench_kernels >$L/build-n.log 2>&1 ) || note "BUILD FAILED native"
wait
note "all built"
for t in test_quant_linear test_quant_linear_silu_mul test_quant_linear_gelu test_quant_layout; do
  FK_TEST_FILTER=$t timeout 150 /tmp/fk-native/tests/gpu/test_gpu_ops >$L/op-$t.log 2>&1
  note "op $t: exit $? — $(grep -E 'PASSED|FAILED' $L/op-$t.log | head -2 | tr '\n' ' ')"
done
for v in old native; do
  timeout 100 ncu --clock-control none --profile-from-start off --metrics smsp__inst_executed.sum,sm__cycles_active.avg,gpu__time_duration.sum,smsp__issue_active.avg.per_cycle_active \
    /tmp/fk-$v/kernels/bench/bench_kernels --ncu --only "k_linear_quant int" > $L/ncu-$v.txt 2>&1; note "ncu $v: exit $?"
done
run() { local v=$1 lab=$2; shift 2
  timeout 90 /tmp/fk-$v/tools/flashkernel bench-engine --model /tmp/bench-1b --device cuda --max-tokens 128 \
    --max-model-len 4096 "$@" >$L/$v-$lab.log 2>&1
  note "$v $lab: $(grep -E 'output tokens/s' $L/$v-$lab.log)"; }
for r in 1 2; do for v in old native; do
  run $v int4-b1-$r --prompt-len 128 --requests 1 --quantization int4
  run $v int8-b1-$r --prompt-len 128 --requests 1 --quantization int8
done; done
for v in old native; do
  run $v int4-b4 --prompt-len 128 --requests 4 --quantization int4
  run $v int4-b16 --prompt-len 128 --requests 16 --quantization int4
  run $v int8-b16 --prompt-len 128 --requests 16 --quantization int8
  run $v int4-b1-p2000 --prompt-len 2000 --requests 1 --quantization int4
done
python3 - $L/ncu-old.txt $L/ncu-native.txt > $OUT/ncu-quant-old-new.txt <<'PY'
import re,sys
def parse(f):
    rows=[];cur=None
    for l in open(f):
        m=re.match(r'\s+void <unnamed>::linear_quant_kernel<(\d), (\d+), (\d), (\d)>.*\((\d+), (\d+), 1\)x\((\d+)',l)
        if m: cur={'k':'fmt%s w%s nt%s epi%s grid %sx%s'%(m.group(1),m.group(2),m.group(3),m.group(4),m.group(5),m.group(6))}; rows.append(cur); continue
        m=re.match(r'\s+(\S+)\s+\S+\s+([\d,.]+)\s*$',l)
        if m and cur is not None: cur[m.group(1)]=float(m.group(2).replace(',',''))
    return rows
a=parse(sys.argv[1]); b=parse(sys.argv[2])
print('kernel | old inst, ns, issue | new inst, ns, issue')
for x,y in zip(a,b):
    print('%-34s | %9.0f %7.0f %.2f | %9.0f %7.0f %.2f'%(x['k'],x.get('smsp__inst_executed.sum',0),x.get('gpu__time_duration.sum',0),x.get('smsp__issue_active.avg.per_cycle_active',0),y.get('smsp__inst_executed.sum',0),y.get('gpu__time_duration.sum',0),y.get('smsp__issue_active.avg.per_cycle_active',0)))
PY
tar czf $OUT/l4.tgz -C $OUT l4
echo; echo "label: old new"
for lab in int4-b1-1 int4-b1-2 int8-b1-1 int8-b1-2 int4-b4 int4-b16 int8-b16 int4-b1-p2000; do
  printf "%-14s" $lab; for v in old native; do printf " %10s" "$(grep "] $v $lab:" $S | awk '{print $NF}')"; done; echo; done
head -50 $OUT/ncu-quant-old-new.txt
