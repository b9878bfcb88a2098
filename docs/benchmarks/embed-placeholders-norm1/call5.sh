#!/bin/bash
# Twenty-first session, call 5: start llama.cpp's build (the same-run peer, ~9 min) in its own session, make
# bench-1b meanwhile, then wait for the build (call 6 follows within the machine's idle time and builds ours: the
# tree, the deps and llama.cpp's source together exceed what one call carries).
set -u
T0=$(date +%s)
S=$OUT/summary5.txt; L=$OUT/l5; mkdir -p $L
note() { echo "[$(( $(date +%s) - T0 ))s] $*" | tee -a $S; }
note "device: $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader); tree $(cat .peers/commit) + working tree"
[ -f /tmp/llama.cpp/done ] || setsid sh -c ".peers/llama/build-llama-cpp.sh /tmp/llama.cpp >/tmp/llama-build.log 2>&1" </dev/null >/dev/null 2>&1 &
[ -d /tmp/bench-1b ] || python3 .peers/make_bench_model.py /tmp/bench-1b tests/fixtures/tokenizers/gpt2/tokenizer.json >$L/mk.log 2>&1
note "bench-1b: $(ls /tmp/bench-1b | tr '\n' ' ')"
for i in $(seq 1 110); do [ -f /tmp/llama.cpp/done ] && break; [ $(( $(date +%s) - T0 )) -gt 560 ] && break; sleep 5; done
note "llama.cpp build: done=$(cat /tmp/llama.cpp/done 2>/dev/null) $(tail -1 /tmp/llama.cpp/build.log 2>/dev/null)"
tar czf $OUT/l5.tgz -C $OUT l5 && rm -rf $L
