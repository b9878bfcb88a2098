#!/bin/bash
# Call 1: upper bounds for the step boundary (probe: FK_PROBE=1 skips the sampling kernel, 2 lets the index upload
# skip its wait for the pass before, 3 both) and norm-fold design 2 (next-ab.sh's A/B), against HEAD, alternated.
# .peers/probe.patch is this folder's call1-probe.patch (timing probes only: they break the output).
set -u
T0=$(date +%s)
S=$OUT/summary.txt; L=$OUT/lab; mkdir -p $L
note() { echo "[$(( $(date +%s) - T0 ))s] $*" | tee -a $S; }
note "device: $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader); tree $(git rev-parse --short HEAD 2>/dev/null)"
deploy/offline-deps.sh unpack .deps /tmp/fk-deps >/dev/null
export LD_LIBRARY_PATH=/tmp/fk-deps/usr/lib/x86_64-linux-gnu
[ -d /tmp/bench-1b ] || setsid sh -c "python3 .peers/make_bench_model.py /tmp/bench-1b tests/fixtures/tokenizers/gpt2/tokenizer.json >/tmp/mk1.log 2>&1; echo \$? >/tmp/mk-done" </dev/null >/dev/null 2>&1 &
mk() { rm -rf /tmp/$1-src && mkdir /tmp/$1-src && git ls-files -z | xargs -0 cp -d --parents -t /tmp/$1-src && (cd /tmp/$1-src && patch -p1 -s < $2) || note "patch $1 failed"; }
mk fold $PWD/docs/benchmarks/norm-fold/norm-fold-v2.patch
mk probe $PWD/.peers/probe.patch
bld() { local n=$1 src=$2; shift 2
  rm -rf /tmp/fk-$n; (cd $src && meson setup /tmp/fk-$n -Ddep_prefix=/tmp/fk-deps -Dcuda=enabled -Dcuda-arch=sm_90a >/dev/null 2>&1) &&
  ninja -C /tmp/fk-$n -j6 "$@" >$L/build-$n.log 2>&1; echo "$n: $(tail -1 $L/build-$n.log)"; }
bld head . tools/flashkernel > $L/b1.txt & bld fold /tmp/fold-src tools/flashkernel > $L/b2.txt & bld probe /tmp/probe-src tools/flashkernel > $L/b3.txt & wait
note "builds: $(cat $L/b?.txt | tr '\n' ' ')"
for i in $(seq 1 90); do [ -f /tmp/mk-done ] && break; sleep 2; done
eng() { local label=$1 b=$2 q=$3 n=$4; shift 4
  env "$@" timeout 60 /tmp/fk-$b/tools/flashkernel bench-engine --model /tmp/bench-1b --device cuda --requests $n \
    --prompt-len 128 --max-tokens 128 --max-model-len 4096 --quantization $q >$L/engine-$label.log 2>&1
  note "$b $q n=$n [$*]: $(grep -E 'output tokens/s' $L/engine-$label.log | tail -1)"; }
for r in 1 2 3; do
  eng head-r$r head int8 1 X=1; eng p1-r$r probe int8 1 FK_PROBE=1; eng p2-r$r probe int8 1 FK_PROBE=2; eng p3-r$r probe int8 1 FK_PROBE=3
  eng foff-r$r fold int8 1 FK_NORM_FOLD=0; eng fon-r$r fold int8 1 X=1
done
for q in none int4; do eng h-$q head $q 1 X=1; eng p3-$q probe $q 1 FK_PROBE=3; eng p1-$q probe $q 1 FK_PROBE=1; done
eng n2-off fold int8 2 FK_NORM_FOLD=0; eng n2-on fold int8 2 FK_NORM_FOLD_MAX_M=2
tar czf $OUT/lab.tgz -C $OUT lab && rm -rf $L
note done
