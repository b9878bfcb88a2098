#!/bin/bash
# Twelfth session, call 12: fk_engine_stats.decode_graph_bytes. The engine tests on the GPU (both step modes) and
# gpu_model, natively; flashkernel-server's start-up line on tiny-llama3 both ways and on bench-1b by default, beside
# nvidia-smi's memory.used.
set -u
T0=$(date +%s)
S=$OUT/summary12.txt; L=/tmp/l12; mkdir -p $L
note() { echo "[$(( $(date +%s) - T0 ))s] $*" | tee -a $S; }
note "device: $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader); commit $(cat .peers/commit)"
deploy/offline-deps.sh unpack .deps /tmp/fk-deps >/dev/null || { note "unpack failed"; exit 1; }
export LD_LIBRARY_PATH=/tmp/fk-deps/usr/lib/x86_64-linux-gnu
python3 .peers/make_bench_model.py /tmp/bench-1b tests/fixtures/tokenizers/gpt2/tokenizer.json >$L/mk1b.log 2>&1 &
MK=$!
( meson setup --wipe /tmp/fk-new . -Ddep_prefix=/tmp/fk-deps -Dcuda=enabled -Dcuda-arch=sm_90a >$L/setup.log 2>&1 &&
  ninja -C /tmp/fk-new -j14 >$L/build.log 2>&1 ) || { note "BUILD FAILED"; tail -20 $L/build.log; }
note built
( cd /tmp/fk-new && timeout 400 meson test engine_cuda engine_cuda_sync gpu_model --print-errorlogs >$L/suite.log 2>&1; echo "rc $?" >>$L/suite.log )
note "engine_cuda, engine_cuda_sync, gpu_model: $(grep -E '^(Ok|Fail|Skipped):' $L/suite.log | tr -s ' ' | tr '\n' ' ') $(tail -1 $L/suite.log)"
grep -hE "decode graphs:|profile" /tmp/fk-new/meson-logs/testlog.txt | head -8 | tee -a $S
grep -E "FAIL|LINE" /tmp/fk-new/meson-logs/testlog.txt | head -10 | tee -a $S
for mode in first-use default; do
  a=""; [ $mode = first-use ] && a="--decode-graphs first-use"
  /tmp/fk-new/server/flashkernel-server --device cuda --model tests/fixtures/models/tiny-llama3 --port 8123 $a >$L/srv-$mode.log 2>&1 &
  P=$!; for _ in $(seq 1 300); do grep -q 'ready$' $L/srv-$mode.log && break; sleep 0.1; done
  note "server $mode: $(grep -o '[0-9]* decode graphs recorded.*' $L/srv-$mode.log)"
  kill -TERM $P; wait $P
done
wait $MK
/tmp/fk-new/server/flashkernel-server --device cuda --model /tmp/bench-1b --port 8123 --max-model-len 4096 >$L/srv-1b.log 2>&1 &
P=$!; for _ in $(seq 1 600); do grep -q 'ready$' $L/srv-1b.log && break; sleep 0.1; done; sleep 1
note "server bench-1b: $(grep -o '[0-9]* decode graphs recorded.*' $L/srv-1b.log); nvidia-smi memory.used $(nvidia-smi --query-gpu=memory.used --format=csv,noheader)"
kill -TERM $P; wait $P
note done
