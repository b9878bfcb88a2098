#!/bin/bash
# Call 1 (twenty-eighth session): the L2 prefetch-size hint on the streamed 16-byte weight loads (common.cuh's
# load_stream16 / load_early16: ld's L2::128B / L2::256B, FK_STREAM_PREFETCH), which the small fp16 and quantized
# linears and the fragments decode kernel use. A warp's load there covers 64 bytes of each of 16 rows of W; decode
# attention gained 1.5-2 points of copy from cp.async's version of the hint. Three builds of this tree (0, 128, 256:
# -Dcuda_args=-DFK_STREAM_PREFETCH=P), alternated twice: bench-engine on bench-1b at batch 1 (fp16, INT8, INT4) and
# 16 and 64 requests (fp16); then bench_linear's one-token rows (fp16 small and quantized, with cuBLAS beside them).
set -u
T0=$(date +%s)
S=$OUT/summary.txt; L=$OUT/lab; mkdir -p $L
note() { echo "[$(( $(date +%s) - T0 ))s] $*" | tee -a $S; }
note "device: $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader); commit $(cat .peers/commit)"
deploy/offline-deps.sh unpack .deps /tmp/fk-deps >/dev/null
export LD_LIBRARY_PATH=/tmp/fk-deps/usr/lib/x86_64-linux-gnu
[ -f /tmp/bench-1b/model.safetensors ] || setsid sh -c "python3 .peers/make_bench_model.py /tmp/bench-1b tests/fixtures/tokenizers/gpt2/tokenizer.json >/tmp/mk1.log 2>&1" </dev/null >/dev/null 2>&1 &
P="0 128 256"
for p in $P; do
  ( rm -rf /tmp/fk-p$p; meson setup /tmp/fk-p$p -Ddep_prefix=/tmp/fk-deps -Dcuda=enabled -Dcuda-arch=sm_90a \
      -Dcuda_args=-DFK_STREAM_PREFETCH=$p >$L/setup-p$p.log 2>&1 &&
    ninja -C /tmp/fk-p$p -j6 tools/flashkernel kernels/bench/bench_linear >$L/build-p$p.log 2>&1; echo "p$p: $(tail -1 $L/build-p$p.log)" >$L/b-p$p.txt ) &
done
wait
note "builds: $(cat $L/b-p*.txt | tr '\n' ' ')"
for i in $(seq 1 150); do [ -f /tmp/bench-1b/model.safetensors ] && ! pgrep -f make_bench_model >/dev/null && break; sleep 2; done
eng() { local b=$1 q=$2 n=$3 r=$4
  timeout 90 /tmp/fk-$b/tools/flashkernel bench-engine --model /tmp/bench-1b --device cuda --requests $n --warmup $n \
    --prompt-len 128 --max-tokens 128 --max-model-len 4096 --quantization $q >$L/engine-$b-$q-$n-r$r.log 2>&1
  note "$b $q n=$n r$r: $(grep -E 'output tokens/s' $L/engine-$b-$q-$n-r$r.log | tail -1)"; }
for r in 1 2; do for b in p0 p128 p256; do
  eng $b int8 1 $r; eng $b none 1 $r; eng $b int4 1 $r; eng $b none 16 $r; eng $b none 64 $r
done; done
for b in p0 p128 p256; do
  timeout 100 /tmp/fk-$b/kernels/bench/bench_linear " ($b)" >$L/bench-linear-$b.log 2>&1; note "bench_linear $b rc $?"
  grep -E "RESULT linear_(small|quant)" $L/bench-linear-$b.log | grep -E " m=(1|8|16):" >>$S
done
tar czf $OUT/lab.tgz -C $OUT lab && rm -rf $L
note done
