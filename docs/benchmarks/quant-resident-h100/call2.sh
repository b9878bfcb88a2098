#!/bin/bash
# Call 2: the resident kernel in 2-warp blocks of <= 64 registers (fk-w2), so that a block fits beside INT4 gate|up's
# two 8-warp blocks (2 x 30,720 registers), and one carveout for every kernel (FK_CARVEOUT) so that the SMs need no
# reconfiguration between kernels; base = FK_QUANT_RESIDENT=0 on the same build.
set -u
T0=$(date +%s)
S=$OUT/summary2.txt; L=$OUT/l2; mkdir -p $L
note() { echo "[$(( $(date +%s) - T0 ))s] $*" | tee -a $S; }
note "device: $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader); tree $(cat .peers/commit) + working tree"
deploy/offline-deps.sh unpack .deps /tmp/fk-deps >/dev/null
export LD_LIBRARY_PATH=/tmp/fk-deps/usr/lib/x86_64-linux-gnu
[ -d /tmp/bench-1b ] || setsid sh -c "python3 .peers/make_bench_model.py /tmp/bench-1b tests/fixtures/tokenizers/gpt2/tokenizer.json >/tmp/mk1.log 2>&1; echo \$? >/tmp/mk-done" </dev/null >/dev/null 2>&1 &
bld() { # dir arch src cuda_args targets...
  local d=$1 arch=$2 src=$3 ca=$4; shift 4
  rm -rf $d; (cd $src && meson setup $d -Ddep_prefix=/tmp/fk-deps -Dcuda=enabled -Dcuda-arch=$arch "-Dcuda_args=$ca" >/dev/null 2>&1) &&
  ninja -C $d -j6 "$@" >$L/build-$(basename $d).log 2>&1; echo "$(basename $d): $(tail -1 $L/build-$(basename $d).log)"
}
W2="-DFK_QRESIDENT_WARPS=2 -DFK_QRESIDENT_MIN_BLOCKS=16"
bld /tmp/fk-new sm_90a . "" tools/flashkernel > $L/b1.txt &
bld /tmp/fk-w2 sm_90a . "$W2" tools/flashkernel tests/gpu/test_gpu_ops > $L/b2.txt &
bld /tmp/fk-trw2 sm_90a . "-DFK_TRACE $W2" tools/flashkernel > $L/b3.txt &
wait
note "builds: $(cat $L/b?.txt | tr '\n' ' ')"
FK_TEST_FILTER='test_quant_linear' timeout 100 /tmp/fk-w2/tests/gpu/test_gpu_ops > $L/test-quant.log 2>&1; echo "rc $?" >> $L/test-quant.log
note "w2 quant op test (plain): $(grep -E 'PASSED|FAILED|^rc' $L/test-quant.log | tr '\n' ' ')"
for i in $(seq 1 90); do [ -f /tmp/mk-done ] && break; sleep 2; done
eng() { # build label requests prompt extra-args... ; env in E
  local b=$1 label=$2 n=$3 p=$4; shift 4
  env ${E:-X=1} timeout 120 /tmp/$b/tools/flashkernel bench-engine --model /tmp/bench-1b --device cuda --requests $n --prompt-len $p \
    --max-tokens 128 --max-model-len 4096 "$@" >$L/engine-$b-$label.log 2>&1
  note "bench-engine $b $label [${E:-}]: $(grep -E 'output tokens/s' $L/engine-$b-$label.log | tail -1)"
}
for r in 1 2; do
  for q in int4 int8; do
    cv=50; [ $q = int8 ] && cv=75
    E="FK_QUANT_RESIDENT=0" eng fk-new $q-r$r-base 1 128 --quantization $q
    E="FK_QUANT_RESIDENT=0 FK_CARVEOUT=$cv" eng fk-new $q-r$r-cv 1 128 --quantization $q
    E="FK_QUANT_RESIDENT=1" eng fk-w2 $q-r$r-res1 1 128 --quantization $q
    E="FK_QUANT_RESIDENT=1 FK_CARVEOUT=$cv" eng fk-w2 $q-r$r-res1-cv 1 128 --quantization $q
    E="FK_QUANT_RESIDENT=2 FK_CARVEOUT=$cv" eng fk-w2 $q-r$r-res2-cv 1 128 --quantization $q
    E="FK_QUANT_RESIDENT=2" eng fk-new $q-r$r-res2-w4 1 128 --quantization $q
  done
  E="FK_QUANT_RESIDENT=0" eng fk-new fp16-r$r-base 1 128
  E="FK_CARVEOUT=50" eng fk-new fp16-r$r-cv 1 128
done
for q in int4 int8; do
  cv=50; [ $q = int8 ] && cv=75
  t=$L/trace-$q-res1-cv.txt
  E="FK_QUANT_RESIDENT=1 FK_CARVEOUT=$cv FK_TRACE_FILE=$t" eng fk-trw2 $q-trace 1 128 --quantization $q
  python3 kernels/bench/trace_report.py $t > $t.report 2>&1
  note "trace $q res1 cv$cv: $(head -1 $t.report)"; sed -n '/by shape/,$p' $t.report | tee -a $S
  gzip $t
done
tar czf $OUT/l2.tgz -C $OUT l2 && rm -rf $L
note done
