#!/bin/bash
# Call 3: the resident kernel (4 warps, default carveout) for o-like shapes only (FK_QUANT_RESIDENT=3: k <= n), for
# all (2) and none (0) on one build; batch 1, 4 and 8; timelines of 0 and 3 at INT4 and INT8; the quant op tests.
set -u
T0=$(date +%s)
S=$OUT/summary3.txt; L=$OUT/l3; mkdir -p $L
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
bld /tmp/fk-trnew sm_90a . "-DFK_TRACE" tools/flashkernel > $L/b3.txt &
wait
note "builds: $(cat $L/b?.txt | tr '\n' ' ')"
for i in $(seq 1 90); do [ -f /tmp/mk-done ] && break; sleep 2; done
eng() { # build label requests prompt extra-args... ; env in E
  local b=$1 label=$2 n=$3 p=$4; shift 4
  env ${E:-X=1} timeout 120 /tmp/$b/tools/flashkernel bench-engine --model /tmp/bench-1b --device cuda --requests $n --prompt-len $p \
    --max-tokens 128 --max-model-len 4096 "$@" >$L/engine-$b-$label.log 2>&1
  note "bench-engine $b $label [${E:-}]: $(grep -E 'output tokens/s' $L/engine-$b-$label.log | tail -1)"
}
for r in 1 2; do
  for q in int4 int8; do
    for m in 0 3 2; do E="FK_QUANT_RESIDENT=$m" eng fk-new $q-r$r-m$m 1 128 --quantization $q; done
  done
done
for n in 4 8; do for q in int4 int8; do for m in 0 3; do
  E="FK_QUANT_RESIDENT=$m" eng fk-new $q-n$n-m$m $n 128 --quantization $q
done; done; done
for q in int4 int8; do for m in 0 3; do
  t=$L/trace-$q-m$m.txt
  E="FK_QUANT_RESIDENT=$m FK_TRACE_FILE=$t" eng fk-trnew $q-trace-m$m 1 128 --quantization $q
  python3 kernels/bench/trace_report.py $t > $t.report 2>&1
  note "trace $q m$m: $(head -1 $t.report)"; sed -n '/by shape/,$p' $t.report | tee -a $S
  gzip $t
done; done
FK_TEST_FILTER='test_quant_linear*' timeout 150 /tmp/fk-new/tests/gpu/test_gpu_ops > $L/test-quant.log 2>&1; echo "rc $?" >> $L/test-quant.log
note "quant op tests: $(grep -E 'PASSED|FAILED|^rc' $L/test-quant.log | tr '\n' ' ')"
tar czf $OUT/l3.tgz -C $OUT l3 && rm -rf $L
note done
