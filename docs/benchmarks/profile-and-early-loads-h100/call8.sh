#!/bin/bash
# Ninth session, call 8: the quantized small linear's compile-time shape retuned now that its early loads really come
# before the PDL wait (they were tuned while ptxas had moved them after it). Variants built with -Dcuda_args, INT8
# and INT4 batch 1 twice each and INT4 at 16 requests once, interleaved; then, for the best variant if it beats the
# default by 2 % on both batch-1 rates, test_gpu_ops' and test_gpu_model's quantized tests on it natively and as
# compute_75 PTX.
set -u
cd "$(dirname "$0")/.."
T0=$(date +%s)
S=$OUT/summary8.txt; L=$OUT/l8; mkdir -p $L
note() { echo "[$(( $(date +%s) - T0 ))s] $*" | tee -a $S; }
note "device: $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader); tree = $(cat .peers/commit)"
deploy/offline-deps.sh unpack .deps /tmp/fk-deps >/dev/null || { note "unpack failed"; exit 1; }
export LD_LIBRARY_PATH=/tmp/fk-deps/usr/lib/x86_64-linux-gnu
python3 .peers/make_bench_model.py /tmp/bench-1b tests/fixtures/tokenizers/gpt2/tokenizer.json >$L/mk1b.log 2>&1 &
declare -A ARGS=([v0]="" [w16]="-DFK_QLINEAR_MAX_WARPS=16" [deep]="-DFK_QLINEAR_BATCH_INT8=8 -DFK_QLINEAR_BATCH_INT4=4"
  [shallow]="-DFK_QLINEAR_BATCH_INT8=2 -DFK_QLINEAR_BATCH_INT4=1" [sm16]="-DFK_QLINEAR_WARPS_PER_SM=16" [sm4]="-DFK_QLINEAR_WARPS_PER_SM=4")
VARS="v0 w16 deep shallow sm16 sm4"
b() { local v=$1 arch=$2 dir=/tmp/fk-$1-$2; shift 2
  ( meson setup $dir . -Ddep_prefix=/tmp/fk-deps -Dcuda=enabled -Dcuda-arch=$arch "-Dcuda_args=${ARGS[$v]}" >$dir.setup.log 2>&1 &&
    ninja -C $dir -j5 "$@" >$dir.build.log 2>&1 ) || note "BUILD FAILED $v $arch"; }
for v in $VARS; do b $v sm_90a tools/flashkernel & done
wait
note "built"
run() { local v=$1 lab=$2; shift 2
  timeout 90 /tmp/fk-$v-sm_90a/tools/flashkernel bench-engine --model /tmp/bench-1b --device cuda --max-tokens 128 \
    --max-model-len 4096 --prompt-len 128 "$@" >$L/$v-$lab.log 2>&1
  echo "$v $lab $(grep -E 'output tokens/s' $L/$v-$lab.log | awk '{print $NF}')" | tee -a $L/rates.txt >>$S; }
for r in 1 2; do for v in $VARS; do
  run $v int8-b1-$r --requests 1 --quantization int8; run $v int4-b1-$r --requests 1 --quantization int4
done; done
for v in $VARS; do run $v int4-r16 --requests 16 --quantization int4; done
note "rates done"
python3 - $L/rates.txt >$L/table.txt <<'PY'
import sys,collections
r=collections.defaultdict(dict)
for l in open(sys.argv[1]):
    v,lab,x=l.split(); r[v][lab]=float(x) if x else 0
print("variant   int8 b1 (2 runs)     int4 b1 (2 runs)     int4 16 req")
for v,d in r.items():
    print(f"{v:8s} {d.get('int8-b1-1',0):8.1f} {d.get('int8-b1-2',0):8.1f}   {d.get('int4-b1-1',0):8.1f} {d.get('int4-b1-2',0):8.1f}   {d.get('int4-r16',0):9.1f}")
m=lambda d,q: (d.get(q+'-b1-1',0)+d.get(q+'-b1-2',0))/2
base=r['v0']; best=None
for v,d in r.items():
    if v!='v0' and m(d,'int8')>1.02*m(base,'int8') and m(d,'int4')>1.02*m(base,'int4'):
        if best is None or m(d,'int8')+m(d,'int4')>m(r[best],'int8')+m(r[best],'int4'): best=v
print("best:", best or "none")
PY
cat $L/table.txt | tee -a $S
best=$(awk '/^best:/{print $2}' $L/table.txt)
if [ "$best" != "none" ] && [ -n "$best" ]; then
  b $best compute_75 tests/gpu/test_gpu_ops tests/gpu/test_gpu_model tools/flashkernel &
  ninja -C /tmp/fk-$best-sm_90a -j10 tests/gpu/test_gpu_ops tests/gpu/test_gpu_model >>/tmp/fk-$best-sm_90a.build.log 2>&1 || note "BUILD FAILED tests $best"
  wait
  for arch in sm_90a compute_75; do
    for t in gpu_ops gpu_model; do
      (cd /tmp/fk-$best-$arch && FK_TEST_FILTER='test_quant*' timeout 300 meson test --no-rebuild $t --print-errorlogs >$L/test-$best-$arch-$t.log 2>&1)
      note "$best $arch $t (test_quant*): rc=$? $(grep -E '^(Ok|Fail|Skipped):' $L/test-$best-$arch-$t.log | tr -s ' ' | tr '\n' ' ')"
    done
  done
fi
tar czf $OUT/l8.tgz -C $OUT l8
