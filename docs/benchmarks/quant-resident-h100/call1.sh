#!/bin/bash
# Twenty-second session, call 1: k_linear_quant_resident (W slice in shared memory, bulk copies before the PDL wait)
# for the down projection (FK_QUANT_RESIDENT=1) or every one-token-tile linear it fits (2), with gate|up's carveout
# (FK_QUANT_CARVEOUT) so that its blocks fit beside gate|up's. One build (env switches); quant op tests first.
set -u
T0=$(date +%s)
S=$OUT/summary1.txt; L=$OUT/l1; mkdir -p $L
note() { echo "[$(( $(date +%s) - T0 ))s] $*" | tee -a $S; }
note "device: $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader); tree $(cat .peers/commit) + working tree"
deploy/offline-deps.sh unpack .deps /tmp/fk-deps >/dev/null
export LD_LIBRARY_PATH=/tmp/fk-deps/usr/lib/x86_64-linux-gnu
[ -d /tmp/bench-1b ] || setsid sh -c "python3 .peers/make_bench_model.py /tmp/bench-1b tests/fixtures/tokenizers/gpt2/tokenizer.json >/tmp/mk1.log 2>&1; echo \$? >/tmp/mk-done" </dev/null >/dev/null 2>&1 &
bld() { # dir arch src cuda_args targets...
  local d=$1 arch=$2 src=$3 ca=$4; shift 4
  rm -rf $d; (cd $src && meson setup $d -Ddep_prefix=/tmp/fk-deps -Dcuda=enabled -Dcuda-arch=$arch "-Dcuda_args=$ca" >/dev/null 2>&1) &&
  ninja -C $d -j8 "$@" >$L/build-$(basename $d).log 2>&1; echo "$(basename $d): $(tail -1 $L/build-$(basename $d).log)"
}
bld /tmp/fk-new sm_90a . "" tools/flashkernel tests/gpu/test_gpu_ops > $L/b1.txt &
bld /tmp/fk-trnew sm_90a . "-DFK_TRACE" tools/flashkernel > $L/b2.txt &
wait
note "builds: $(cat $L/b?.txt | tr '\n' ' ')"
FK_TEST_FILTER='test_quant_linear*' timeout 200 /tmp/fk-new/tests/gpu/test_gpu_ops > $L/test-quant.log 2>&1; echo "rc $?" >> $L/test-quant.log
note "quant op tests: $(grep -E 'PASSED|FAILED|^rc' $L/test-quant.log | tr '\n' ' ')"
grep -iE "fail|error|differ" $L/test-quant.log | head -10 | tee -a $S
for i in $(seq 1 90); do [ -f /tmp/mk-done ] && break; sleep 2; done
eng() { # build label requests prompt extra-args... ; env in E
  local b=$1 label=$2 n=$3 p=$4; shift 4
  env ${E:-X=1} timeout 120 /tmp/$b/tools/flashkernel bench-engine --model /tmp/bench-1b --device cuda --requests $n --prompt-len $p \
    --max-tokens 128 --max-model-len 4096 "$@" >$L/engine-$b-$label.log 2>&1
  note "bench-engine $b $label [${E:-}]: $(grep -E 'output tokens/s' $L/engine-$b-$label.log | tail -1)"
}
for r in 1 2; do
  for q in int4 int8; do
    for cfg in "FK_QUANT_RESIDENT=0" "FK_QUANT_RESIDENT=1" "FK_QUANT_RESIDENT=1 FK_QUANT_CARVEOUT=50" "FK_QUANT_RESIDENT=1 FK_QUANT_CARVEOUT=100" "FK_QUANT_RESIDENT=2 FK_QUANT_CARVEOUT=100"; do
      E="$cfg" eng fk-new $q-r$r-$(echo $cfg | tr -dc '0-9') 1 128 --quantization $q
    done
  done
done
for cfg in "FK_QUANT_RESIDENT=0" "FK_QUANT_RESIDENT=1 FK_QUANT_CARVEOUT=100"; do
  t=$L/trace-int4-$(echo $cfg | tr -dc '0-9').txt
  E="$cfg FK_TRACE_FILE=$t" eng fk-trnew int4-trace-$(echo $cfg | tr -dc '0-9') 1 128 --quantization int4
  python3 kernels/bench/trace_report.py $t > $t.report 2>&1
  note "trace $cfg: $(head -1 $t.report)"; sed -n '/by shape/,$p' $t.report | tee -a $S
  gzip $t
done
tar czf $OUT/l1.tgz -C $OUT l1 && rm -rf $L
note done
