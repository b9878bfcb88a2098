#!/bin/bash
# Thirteenth session, call 5 (call 4's machine): flashkernel-server alone (closed loop, the script's default levels)
# and bench-engine at 256 requests right after it, on one machine, for the server/engine ratio. The command as run:
export LD_LIBRARY_PATH=/tmp/fk-deps/usr/lib/x86_64-linux-gnu
ninja -C /tmp/fk-native server/flashkernel-server loadtest/flashkernel-loadtest > /dev/null 2>&1; echo built $?
mkdir -p $OUT/r
FK_SERVERS=flashkernel FK_STEPS=closed timeout 300 loadtest/run-peer-benchmark.sh /tmp/fk-native/server/flashkernel-server \
  /tmp/fk-native/loadtest/flashkernel-loadtest none /tmp/bench-1b-ascii none /tmp/r5 > $OUT/r/log.txt 2>&1; echo rc $?
cp /tmp/r5/benchmark.txt $OUT/r/; grep -E "^ +[0-9]+ " /tmp/r5/benchmark.txt
timeout 60 /tmp/fk-native/tools/flashkernel bench-engine --model /tmp/bench-1b-ascii --device cuda --requests 256 --warmup 256 \
  --prompt-len 128 --max-tokens 128 --max-model-len 4096 2>&1 | grep "output tokens/s"
