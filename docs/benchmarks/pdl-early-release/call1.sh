#!/bin/bash
# Eighteenth session, call 1: early release (FK_PDL_EARLY bits: 1 o, 2 norm2, 4 q|k|v, 8 norm1): those ops let the
# next kernel become resident before their own PDL wait, so that gate|up (after norm2) streams its first weights
# during attention and o. One binary, the mask by environment (0 = HEAD's behaviour).
set -u
T0=$(date +%s)
S=$OUT/summary1.txt; L=$OUT/l1; mkdir -p $L
note() { echo "[$(( $(date +%s) - T0 ))s] $*" | tee -a $S; }
note "device: $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader); tree $(cat .peers/commit) + working tree"
deploy/offline-deps.sh unpack .deps /tmp/fk-deps >/dev/null
export LD_LIBRARY_PATH=/tmp/fk-deps/usr/lib/x86_64-linux-gnu
[ -d /tmp/bench-1b ] || setsid sh -c "python3 .peers/make_bench_model.py /tmp/bench-1b tests/fixtures/tokenizers/gpt2/tokenizer.json >/tmp/mk1.log 2>&1; echo \$? >/tmp/mk-done" </dev/null >/dev/null 2>&1 &
bld() { # dir arch targets... (extra cuda args in CA)
  local d=$1 arch=$2; shift 2
  rm -rf $d; meson setup $d -Ddep_prefix=/tmp/fk-deps -Dcuda=enabled -Dcuda-arch=$arch ${CA:+"-Dcuda_args=$CA"} >/dev/null 2>&1 &&
  ninja -C $d -j7 "$@" >$L/build-$(basename $d).log 2>&1; echo "$(basename $d): $(tail -1 $L/build-$(basename $d).log)"
}
bld /tmp/fk-native sm_90a tools/flashkernel > $L/b1.txt &
CA=-DFK_TRACE bld /tmp/fk-trace sm_90a tools/flashkernel > $L/b2.txt &
wait
note "builds: $(cat $L/b?.txt | tr '\n' ' ')"
for i in $(seq 1 90); do [ -f /tmp/mk-done ] && break; sleep 2; done
note "model: $(cat /tmp/mk-done 2>/dev/null)"
eng() { # build label requests prompt extra-args... ; env in E
  local b=$1 label=$2 n=$3 p=$4; shift 4
  env ${E:-X=1} timeout 120 /tmp/$b/tools/flashkernel bench-engine --model /tmp/bench-1b --device cuda --requests $n --prompt-len $p \
    --max-tokens 128 --max-model-len 4096 "$@" >$L/engine-$b-$label.log 2>&1
  note "bench-engine $b $label: $(grep -E 'output tokens/s' $L/engine-$b-$label.log | tail -1)"
}
for r in 1 2; do for k in 0 2 3 7 1; do E=FK_PDL_EARLY=$k eng fk-native fp16-b1-e$k-r$r 1 128; done; done
for k in 0 3 2; do E=FK_PDL_EARLY=$k eng fk-native int8-b1-e$k 1 128 --quantization int8; E=FK_PDL_EARLY=$k eng fk-native int4-b1-e$k 1 128 --quantization int4; done
for k in 0 3; do for n in 4 16; do E=FK_PDL_EARLY=$k eng fk-native fp16-$n-e$k $n 128; done; E=FK_PDL_EARLY=$k eng fk-native fp16-b1-p2000-e$k 1 2000; done
for k in 3 0; do
  E="FK_PDL_EARLY=$k FK_TRACE_FILE=$L/trace-e$k-b1.txt" eng fk-trace fp16-b1-trace-e$k 1 128
  python3 kernels/bench/trace_report.py $L/trace-e$k-b1.txt > $L/trace-e$k-b1-report.txt 2>&1; gzip $L/trace-e$k-b1.txt
  note "trace e$k fp16 b1: $(head -1 $L/trace-e$k-b1-report.txt)"; sed -n '/by shape/,$p' $L/trace-e$k-b1-report.txt | tee -a $S
done
tar czf $OUT/l1.tgz -C $OUT l1 && rm -rf $L
note done
