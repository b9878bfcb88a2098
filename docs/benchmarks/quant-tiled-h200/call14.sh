#!/bin/bash
# Call 14 (final check): gpu suite native + compute_75 PTX, then racecheck / memcheck / synccheck / initcheck on the
# quantized-linear tests (the tiled kernel's cp.async pipeline and split-K sum), then int8/int4 at 64 requests.
set -u
cd "$(dirname "$0")/.."
T0=$(date +%s)
echo "commit $(cat .peers/commit)"
[ -f /tmp/bench-1b/model.safetensors ] || python3 .peers/make_bench_model.py /tmp/bench-1b tests/fixtures/tokenizers/gpt2/tokenizer.json >/tmp/mk1b.log 2>&1 &
mk=$!
rm -rf /tmp/fk-native /tmp/fk-ptx75
timeout 330 sh tests/gpu/run-on-device.sh test
echo "[$(( $(date +%s) - T0 ))s] test step done"
export LD_LIBRARY_PATH=/tmp/fk-deps/usr/lib/x86_64-linux-gnu
wait $mk
for q in int8 int4; do
  /tmp/fk-native/tools/flashkernel bench-engine --model /tmp/bench-1b --device cuda --prompt-len 128 --max-tokens 128 --max-model-len 4096 --requests 64 --quantization $q > /tmp/e-$q.log 2>&1
  echo "[$(( $(date +%s) - T0 ))s] $q 64 requests: $(grep -E 'output tokens/s' /tmp/e-$q.log)"
done
