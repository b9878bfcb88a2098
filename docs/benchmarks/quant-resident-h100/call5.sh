#!/bin/bash
# Call 5: (a) the resident kernel again (patch on HEAD) with __launch_bounds__(128, 1), the 72-register code of calls
# 2-3 (call 4's committed __launch_bounds__(128) gave 51 registers and -5.5 %): FK_QUANT_RESIDENT 0 / 1 (INT4 at one
# token) / 2 alternated; a timeline of 1. (b) INT8 gate|up in 4-warp blocks (one wave; the seventh session's
# -DFK_QLINEAR_SILU_WARPS=4 patch) against HEAD's kernels (fk-res at FK_QUANT_RESIDENT=0).
set -u
T0=$(date +%s)
S=$OUT/summary5.txt; L=$OUT/l5; mkdir -p $L
note() { echo "[$(( $(date +%s) - T0 ))s] $*" | tee -a $S; }
note "device: $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader); tree $(cat .peers/commit) + patches"
deploy/offline-deps.sh unpack .deps /tmp/fk-deps >/dev/null
export LD_LIBRARY_PATH=/tmp/fk-deps/usr/lib/x86_64-linux-gnu
[ -d /tmp/bench-1b ] || setsid sh -c "python3 .peers/make_bench_model.py /tmp/bench-1b tests/fixtures/tokenizers/gpt2/tokenizer.json >/tmp/mk1.log 2>&1; echo \$? >/tmp/mk-done" </dev/null >/dev/null 2>&1 &
for v in res silu; do rm -rf /tmp/src-$v; mkdir /tmp/src-$v; tar cf - --exclude=./.deps --exclude=./.peers . | tar xf - -C /tmp/src-$v; done
(cd /tmp/src-res && patch -p1 -s < $OLDPWD/.peers/s22/linear_quant_resident.patch && sed -i 's/__launch_bounds__(THREADS)$/__launch_bounds__(THREADS, 1)/' kernels/linear_quant_resident.cu && grep -c "__launch_bounds__(THREADS, 1)" kernels/linear_quant_resident.cu) > $L/patch-res.txt 2>&1
(cd /tmp/src-silu && patch -p1 -s < $OLDPWD/.peers/s22/call6-silu-warps.patch) > $L/patch-silu.txt 2>&1
note "patches: res $(cat $L/patch-res.txt | tr '\n' ' ') silu $(cat $L/patch-silu.txt)"
bld() { # dir arch src cuda_args targets...
  local d=$1 arch=$2 src=$3 ca=$4; shift 4
  rm -rf $d; (cd $src && meson setup $d -Ddep_prefix=/tmp/fk-deps -Dcuda=enabled -Dcuda-arch=$arch "-Dcuda_args=$ca" >/dev/null 2>&1) &&
  ninja -C $d -j5 "$@" >$L/build-$(basename $d).log 2>&1; echo "$(basename $d): $(tail -1 $L/build-$(basename $d).log)"
}
bld /tmp/fk-res sm_90a /tmp/src-res "" tools/flashkernel > $L/b1.txt &
bld /tmp/fk-trres sm_90a /tmp/src-res "-DFK_TRACE" tools/flashkernel > $L/b2.txt &
bld /tmp/fk-silu sm_90a /tmp/src-silu "-DFK_QLINEAR_SILU_WARPS=4" tools/flashkernel > $L/b3.txt &
wait
note "builds: $(cat $L/b?.txt | tr '\n' ' ')"
for i in $(seq 1 90); do [ -f /tmp/mk-done ] && break; sleep 2; done
eng() { # build label requests prompt extra-args... ; env in E
  local b=$1 label=$2 n=$3 p=$4; shift 4
  env ${E:-X=1} timeout 120 /tmp/$b/tools/flashkernel bench-engine --model /tmp/bench-1b --device cuda --requests $n --prompt-len $p \
    --max-tokens 128 --max-model-len 4096 "$@" >$L/engine-$b-$label.log 2>&1
  note "bench-engine $b $label [${E:-}]: $(grep -E 'output tokens/s' $L/engine-$b-$label.log | tail -1)"
}
for r in 1 2 3; do for m in 0 1 2; do E="FK_QUANT_RESIDENT=$m" eng fk-res int4-b1-r$r-m$m 1 128 --quantization int4; done; done
for r in 1 2; do E="FK_QUANT_RESIDENT=0" eng fk-res int8-b1-r$r 1 128 --quantization int8; eng fk-silu int8-b1-r$r 1 128 --quantization int8; done
E="FK_QUANT_RESIDENT=0" eng fk-res int8-n16 16 128 --quantization int8; eng fk-silu int8-n16 16 128 --quantization int8
eng fk-silu int4-b1 1 128 --quantization int4
t=$L/trace-int4-m1.txt
E="FK_QUANT_RESIDENT=1 FK_TRACE_FILE=$t" eng fk-trres int4-trace-m1 1 128 --quantization int4
python3 kernels/bench/trace_report.py $t > $t.report 2>&1
note "trace int4 m1: $(head -1 $t.report)"; sed -n '/by shape/,$p' $t.report | tee -a $S; gzip $t
tar czf $OUT/l5.tgz -C $OUT l5 && rm -rf $L
note done
