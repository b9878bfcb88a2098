#!/bin/bash
# Run in the twenty-fifth session, as part of docs/benchmarks/sample-in-graph-h100/call1.sh: the fold −2.6 %.
# Written after the twenty-fourth session's device time ran out: the one-call A/B that decides design 2. Two builds
# side by side: HEAD, and HEAD with norm-fold-v2.patch (the launch bounds fixed: every kernel but the consumer keeps
# HEAD's registers). bench-1b INT8 batch 1, 3 rounds alternated: HEAD, patched with FK_NORM_FOLD=0 (must equal HEAD:
# checks the fix), patched with the fold (its default: INT8 at one token, no early release); then INT8 at 2 requests
# (FK_NORM_FOLD_MAX_M=2) and INT4 at one token (FK_NORM_FOLD=2) once each; the fold's op test.
# Run from the repository root on the GPU host with .deps, .peers/commit and .peers/make_bench_model.py carried.
set -u
T0=$(date +%s)
S=$OUT/summary-ab.txt; L=$OUT/lab; mkdir -p $L
note() { echo "[$(( $(date +%s) - T0 ))s] $*" | tee -a $S; }
note "device: $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader); tree $(git rev-parse --short HEAD 2>/dev/null || cat .peers/commit)"
deploy/offline-deps.sh unpack .deps /tmp/fk-deps >/dev/null
export LD_LIBRARY_PATH=/tmp/fk-deps/usr/lib/x86_64-linux-gnu
[ -d /tmp/bench-1b ] || setsid sh -c "python3 .peers/make_bench_model.py /tmp/bench-1b tests/fixtures/tokenizers/gpt2/tokenizer.json >/tmp/mk1.log 2>&1; echo \$? >/tmp/mk-done" </dev/null >/dev/null 2>&1 &
rm -rf /tmp/fold-src && mkdir /tmp/fold-src && git ls-files -z | xargs -0 cp -d --parents -t /tmp/fold-src &&
  (cd /tmp/fold-src && patch -p1 -s < docs/benchmarks/norm-fold/norm-fold-v2.patch) || { note "patch failed"; exit 1; }
bld() { # name src targets...
  local n=$1 src=$2; shift 2
  rm -rf /tmp/fk-$n; (cd $src && meson setup /tmp/fk-$n -Ddep_prefix=/tmp/fk-deps -Dcuda=enabled -Dcuda-arch=sm_90a >/dev/null 2>&1) &&
  ninja -C /tmp/fk-$n -j8 "$@" >$L/build-$n.log 2>&1; echo "$n: $(tail -1 $L/build-$n.log)"
}
bld head . tools/flashkernel > $L/b1.txt & bld fold /tmp/fold-src tools/flashkernel tests/gpu/test_gpu_ops > $L/b2.txt & wait
note "builds: $(cat $L/b?.txt | tr '\n' ' ')"
for i in $(seq 1 90); do [ -f /tmp/mk-done ] && break; sleep 2; done
eng() { # label build quant requests env...
  local label=$1 b=$2 q=$3 n=$4; shift 4
  env "$@" timeout 120 /tmp/fk-$b/tools/flashkernel bench-engine --model /tmp/bench-1b --device cuda --requests $n \
    --prompt-len 128 --max-tokens 128 --max-model-len 4096 --quantization $q >$L/engine-$label.log 2>&1
  note "bench-engine $b $q n=$n [$*]: $(grep -E 'output tokens/s' $L/engine-$label.log | tail -1)"
}
for r in 1 2 3; do
  eng head-r$r head int8 1 X=1; eng off-r$r fold int8 1 FK_NORM_FOLD=0; eng on-r$r fold int8 1 X=1
done
eng n2-off fold int8 2 FK_NORM_FOLD=0; eng n2-on fold int8 2 FK_NORM_FOLD_MAX_M=2
eng i4-off fold int4 1 FK_NORM_FOLD=0; eng i4-on fold int4 1 FK_NORM_FOLD=2
FK_TEST_DEVICE=cuda FK_TEST_FILTER=test_norm_fold timeout 120 /tmp/fk-fold/tests/gpu/test_gpu_ops > $L/test-fold.log 2>&1
note "test_norm_fold: $(grep -E 'PASSED|FAILED' $L/test-fold.log | tr '\n' ' ')"
tar czf $OUT/lab.tgz -C $OUT lab && rm -rf $L
note done
