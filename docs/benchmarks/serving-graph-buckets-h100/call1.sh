#!/bin/bash
# Twelfth session, call 1 (diagnosis): flashkernel-server at HEAD on bench-1b-ascii, the 256-client level run three
# times in a row on one server (graphs met in an earlier run are recorded already), and once more on a -DFK_TRACE
# build whose kernel timeline shows the GPU's idle gaps between steps; bench-engine at 256 for the ratio.
set -u
T0=$(date +%s)
S=$OUT/summary1.txt; L=/tmp/l1; mkdir -p $L $OUT/s
note() { echo "[$(( $(date +%s) - T0 ))s] $*" | tee -a $S; }
note "device: $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader); commit $(cat .peers/commit)"
deploy/offline-deps.sh unpack .deps /tmp/fk-deps >/dev/null || { note "unpack failed"; exit 1; }
export LD_LIBRARY_PATH=/tmp/fk-deps/usr/lib/x86_64-linux-gnu
( [ -d /tmp/bench-1b ] || python3 .peers/make_bench_model.py /tmp/bench-1b tests/fixtures/tokenizers/gpt2/tokenizer.json >$L/mk1b.log 2>&1
  python3 .peers/make_bench_model_ascii.py /tmp/bench-1b /tmp/bench-1b-ascii >$L/mkascii.log 2>&1 ) &
b() { local dir=$1; shift; ( meson setup --wipe $dir . -Ddep_prefix=/tmp/fk-deps -Dcuda=enabled -Dcuda-arch=sm_90a "$@" >$dir.setup.log 2>&1 &&
  ninja -C $dir -j8 tools/flashkernel server/flashkernel-server loadtest/flashkernel-loadtest >$dir.build.log 2>&1 ) || { note "BUILD FAILED $dir"; tail -30 $dir.build.log; }; }
b /tmp/fk-new &
b /tmp/fk-trace -Dcuda_args=-DFK_TRACE &
wait
note "built; models: $(ls /tmp/bench-1b-ascii | tr '\n' ' ')"
srv() { local bin=$1 out=$2; shift 2
  env "$@" FK_SERVERS=flashkernel FK_STEPS=closed FK_CONCURRENCY="256 256 256" FK_LONG_CONCURRENCY="64" \
    timeout 200 loadtest/run-peer-benchmark.sh $bin/server/flashkernel-server /tmp/fk-new/loadtest/flashkernel-loadtest \
    /bin/false /tmp/bench-1b-ascii /dev/null $out >$out.log 2>&1
  note "serving $out: rc $?"; grep -E "^ +(64|128|256) |launches per step" $out/benchmark.txt | tee -a $S; cp $out/benchmark.txt $OUT/s/$(basename $out).txt; }
srv /tmp/fk-new $L/serving-a
srv /tmp/fk-trace $L/serving-trace FK_TRACE_FILE=$L/trace-server.txt
ls -la $L/trace-server.txt | tee -a $S
python3 .peers/s12/gaps.py $L/trace-server.txt 2>&1 | tee -a $S
gzip -c $L/trace-server.txt > $OUT/trace-server.txt.gz
timeout 120 /tmp/fk-new/tools/flashkernel bench-engine --model /tmp/bench-1b-ascii --device cuda --max-tokens 128 \
  --max-model-len 4096 --prompt-len 128 --requests 256 --warmup 256 >$L/engine-r256.log 2>&1
note "engine 256 requests (ascii): $(grep -E 'output tokens/s' $L/engine-r256.log)"
grep -i "graph\|record" $L/serving-a/server-*.log | head -20 | tee -a $S
note done
