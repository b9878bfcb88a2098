#!/bin/bash
# Session 4, call 5: bench_kernels rows of k_rope_store_kv, k_add_rms_norm and k_attention_decode, 105a114's files
# (old) against HEAD (new): each kernel alone (L2 flushed, 1,000 calls, no PDL overlap), every model and token count.
set -u
cd "$(dirname "$0")/.."
T0=$(date +%s)
S=$OUT/summary5.txt; L=/tmp/l5; rm -rf $L; mkdir -p $L
note() { echo "[$(( $(date +%s) - T0 ))s] $*" | tee -a $S; }
note "device: $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader); commit $(cat .peers/commit)"
deploy/offline-deps.sh unpack .deps /tmp/fk-deps >/dev/null || { note "unpack failed"; exit 1; }
export LD_LIBRARY_PATH=/tmp/fk-deps/usr/lib/x86_64-linux-gnu
rm -rf /tmp/src-old; mkdir /tmp/src-old; tar cf - --exclude=./.deps --exclude=./.peers --exclude=./.git . | tar xf - -C /tmp/src-old
cp .peers/old/* /tmp/src-old/kernels/
bld() { local v=$1 src=$2; shift 2
  meson setup /tmp/fk-$v $src -Ddep_prefix=/tmp/fk-deps -Dcuda=enabled -Dcuda-arch=sm_90a >$L/setup-$v.log 2>&1
  ninja -C /tmp/fk-$v -j8 kernels/bench/bench_kernels >$L/build-$v.log 2>&1 || { echo "BUILD FAILED $v" | tee -a $S; tail -20 $L/build-$v.log; }; }
bld old /tmp/src-old & bld new . & wait; note "built"
for k in k_rope_store_kv k_add_rms_norm k_attention_decode; do for v in old new; do
  timeout 100 /tmp/fk-$v/kernels/bench/bench_kernels --only $k --iters 300 --warmup 30 >$L/$v-$k.log 2>&1; note "$v $k rc=$?"
done; done
for k in k_rope_store_kv k_add_rms_norm k_attention_decode; do echo "== $k: old | new" | tee -a $S
  paste -d'|' <(grep -E "^\| *$k" $L/old-$k.log | cut -c1-110) <(grep -E "^\| *$k" $L/new-$k.log | awk -F'|' '{print $5 "|" $6}') | tee -a $S; done
tar czf $OUT/l5.tgz -C $L .
