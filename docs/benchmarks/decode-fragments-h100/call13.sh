#!/bin/bash
# Eleventh session, call 13 (call 12's machine, its /tmp/fk-new build of 73f87fc + the silu_mul and sample changes):
# "old" = the working tree with .peers/old's kernels/silu_mul.cu and kernels/sample.cu (73f87fc's), built here; then
# bench-engine fp16 at 256/128/64/1 requests, old and new alternated, and bench_kernels --only k_s of old.
export LD_LIBRARY_PATH=/tmp/fk-deps/usr/lib/x86_64-linux-gnu; L=$OUT/l13; mkdir -p $L
rm -rf /tmp/src-old; mkdir -p /tmp/src-old; git ls-files -co --exclude-standard | tar cf - -T - | tar xf - -C /tmp/src-old
cp -r .peers/old/. /tmp/src-old/
(meson setup --wipe /tmp/fk-old /tmp/src-old -Ddep_prefix=/tmp/fk-deps -Dcuda=enabled -Dcuda-arch=sm_90a >/tmp/o.setup 2>&1 &&
  ninja -C /tmp/fk-old -j16 tools/flashkernel kernels/bench/bench_kernels >/tmp/o.build 2>&1) || { tail -20 /tmp/o.build; exit 3; }
run() { bin=$1; lab=$2; shift 2; timeout 60 /tmp/fk-$bin/tools/flashkernel bench-engine --model /tmp/bench-1b --device cuda \
  --max-tokens 128 --max-model-len 4096 --prompt-len 128 "$@" >$L/$lab.log 2>&1; echo "$lab: $(grep -E 'output tokens/s' $L/$lab.log)"; }
for r in 256 128 64; do run old r$r-old --requests $r --warmup $r; run new r$r-new --requests $r --warmup $r; done
run old b1-old --requests 1; run new b1-new --requests 1
/tmp/fk-old/kernels/bench/bench_kernels --only k_s > $L/bk-old.txt 2>&1
