#!/bin/bash
# Eighteenth session, call 2: early release per format. The default (fp16: the MLP norm; quantized: o and the MLP
# norm) against FK_PDL_EARLY=0 (HEAD's behaviour) and other masks (bits: 1 o, 2 MLP norm, 4 q|k|v, 8 attention norm),
# one binary, at 1, 4 and 16 requests and a 2,000-token prompt.
set -u
T0=$(date +%s)
S=$OUT/summary2.txt; L=$OUT/l2; mkdir -p $L
note() { echo "[$(( $(date +%s) - T0 ))s] $*" | tee -a $S; }
note "device: $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader); tree $(cat .peers/commit) + working tree"
deploy/offline-deps.sh unpack .deps /tmp/fk-deps >/dev/null
export LD_LIBRARY_PATH=/tmp/fk-deps/usr/lib/x86_64-linux-gnu
[ -d /tmp/bench-1b ] || setsid sh -c "python3 .peers/make_bench_model.py /tmp/bench-1b tests/fixtures/tokenizers/gpt2/tokenizer.json >/tmp/mk1.log 2>&1; echo \$? >/tmp/mk-done" </dev/null >/dev/null 2>&1 &
bld() { # dir arch targets... (extra cuda args in CA)
  local d=$1 arch=$2; shift 2
  rm -rf $d; meson setup $d -Ddep_prefix=/tmp/fk-deps -Dcuda=enabled -Dcuda-arch=$arch ${CA:+"-Dcuda_args=$CA"} >/dev/null 2>&1 &&
  ninja -C $d -j14 "$@" >$L/build-$(basename $d).log 2>&1; echo "$(basename $d): $(tail -1 $L/build-$(basename $d).log)"
}
bld /tmp/fk-native sm_90a tools/flashkernel > $L/b1.txt
note "builds: $(cat $L/b?.txt | tr '\n' ' ')"
for i in $(seq 1 90); do [ -f /tmp/mk-done ] && break; sleep 2; done
note "model: $(cat /tmp/mk-done 2>/dev/null)"
eng() { # build label requests prompt extra-args... ; env in E
  local b=$1 label=$2 n=$3 p=$4; shift 4
  env ${E:-X=1} timeout 120 /tmp/$b/tools/flashkernel bench-engine --model /tmp/bench-1b --device cuda --requests $n --prompt-len $p \
    --max-tokens 128 --max-model-len 4096 "$@" >$L/engine-$b-$label.log 2>&1
  note "bench-engine $b $label: $(grep -E 'output tokens/s' $L/engine-$b-$label.log | tail -1)"
}
for r in 1 2; do for k in 0 2; do E=FK_PDL_EARLY=$k eng fk-native fp16-b1-e$k-r$r 1 128; done; done
for k in 0 2; do for n in 4 16; do E=FK_PDL_EARLY=$k eng fk-native fp16-$n-e$k $n 128; done; E=FK_PDL_EARLY=$k eng fk-native fp16-b1-p2000-e$k 1 2000; done
for q in int8 int4; do
  for r in 1 2; do for k in 0 3 2 11; do E=FK_PDL_EARLY=$k eng fk-native $q-b1-e$k-r$r 1 128 --quantization $q; done; done
  for k in 0 3; do for n in 4 16; do E=FK_PDL_EARLY=$k eng fk-native $q-$n-e$k $n 128 --quantization $q; done
    E=FK_PDL_EARLY=$k eng fk-native $q-b1-p2000-e$k 1 2000 --quantization $q; done
done
eng fk-native fp16-b1-default 1 128; eng fk-native int8-b1-default 1 128 --quantization int8
tar czf $OUT/l2.tgz -C $OUT l2 && rm -rf $L
note done
