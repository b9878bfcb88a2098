#!/bin/sh
# run-on-device.sh — the GPU suite and benchmarks on a GPU host with no package access (nvcc, cuBLAS, meson and
# ninja there; Debian .deb files carried in .deps by `deploy/offline-deps.sh download .deps`, and ../shared/peers
# copied to .peers for the peer steps).
#   tests/gpu/run-on-device.sh [test] [sanitize] [bench] [quant] [profile] [server] [serving] [llamacpp-start]
#                              [llamacpp] [serving-peers] [sched-sweep] [kernels] [kernels-ncu] [kernels-peers]
#                              [kernels-compile] [bench-8b-prep] [serving-8b]
#                              (default: test sanitize bench server)
#   test:     build natively (sm_90a) and as compute_75 PTX only (the T4 path, JIT-compiled by the driver) and run
#             the gpu suite on both (FK_TEST_BUILDS="native:sm_90a" or "ptx75:compute_75": one of them, for a
#             call too short for both)
#   sanitize: compute-sanitizer memcheck (leak check), racecheck, initcheck and synccheck on the op tests
#   bench:    kernels/bench (ours vs cuBLAS and the measured device ceilings; decode-kernel variants), PyTorch SDPA
#             peers, and batch-1 greedy decode of bench-1b (.peers/make_bench_model.py: Llama-3.2-1B dims, GPT-2
#             vocabulary) against transformers generate() and, when built, llama.cpp's llama-bench tg128
#   quant:    the quantized linears: bench_linear's int8/int4 table (unless bench ran) and its build-time variants
#             (qw16, qdeep, qshallow: one line each, their speed against the default's), bench_linear_quant
#             (the tiled kernel, dequantize + cuBLAS and passes of the small kernel against fp16 cuBLAS at
#             m = 32 .. 2048), batch-1 greedy decode of bench-1b with --quantization none, int8, int4 (and int4 with
#             the head), and
#             server_check.py with int8 and int4 on the demo model and the 1B-shaped model
#   profile:  flashkernel bench-engine --profile on bench-1b at batch 1, 16, 64 and 256, with this issue's kernels
#             (default) and without them (FK_SMALL_LINEAR_MAX_M=0 FK_WGMMA_LINEAR_MAX_M=0 FK_PDL=0
#             FK_PREFILL_HOPPER=0)
#   server:   flashkernel-server --device cuda serving the demo model and the 1B-shaped model (server_check.py)
#   serving:  the end-to-end serving benchmark (loadtest/run-benchmark.sh) and its transformers baseline
#             (loadtest/hf_baseline.py); results in $OUT/serving
#   llamacpp-start: start building llama.cpp (.peers/build-llama-cpp.sh, ~9 min) in its own session, so it goes on
#             after this command returns (the next command must come within the machine's idle time)
#   llamacpp: wait for that build, convert bench-1b to GGUF (f16, Q8_0, Q4_0) and run llama-bench tg128 on each
#   serving-peers: wait for that build too; bench-1b-ascii (.peers/make_bench_model_ascii.py) served by
#             flashkernel-server and llama-server in turn, the same load tester for both (loadtest/run-peer-benchmark.sh:
#             closed loop 1-256 clients, 1,024/256 at 64, a --rate sweep, llama-server's raw answers); $OUT/serving-peers.
#             FK_STEPS / FK_SERVERS narrow it (see the script)
#   bench-8b-prep: bench-8b (loadtest/make_bench_8b.py: Llama-3-8B dims, GPT-2 vocabulary, ASCII-only head) and its
#             f16 GGUF (needs llama.cpp's source unpacked: llamacpp-start first); serving-8b: both servers on it
#             (run-peer-benchmark.sh closed loop: 1-256 clients at 128/128, 1-64 at 1,024/256, one request per client,
#             llama-server's /v1/completions only); $OUT/serving-8b.{tgz,txt,png}
#   sched-sweep: flashkernel-server on bench-1b at --max-num-batched-tokens 512 .. 8192 (loadtest/run-sched-sweep.sh:
#             closed loop, 256 and 64 clients at 128/128, 64 at 1,024/256; FK_SWEEP_TOKENS / FK_SWEEP_SHAPES change
#             them): output tokens/s, TTFT and ITL per value, to choose the default (issue 14). The table in the
#             summary and $OUT/sched-sweep.txt, the JSONs and server logs in $OUT/sched-sweep.tgz. No llama.cpp
#   kernels:  docs/kernels.md's suite: bench_kernels (every launcher, every configuration; ours.json) and the tables
#             and rooflines (report.py) in $OUT/kernels; kernels-ncu: Nsight Compute on each launcher's main
#             configurations (profiles/*.csv, summary.md), then the report again (each expected to take a few
#             minutes on an H100, the build aside; not yet timed)
#   kernels-peers: the PyTorch peers of ours.json (eager, cuBLAS, SDPA) into peers.json, then the report again;
#             kernels-compile: the torch.compile(mode="max-autotune") peer on the main rows, likewise. Each stops
#             starting rows after FK_PEERS_BUDGET seconds (default 400, so that one call fits in 10 minutes) and
#             the next call of the same step resumes there: repeat it until it reports 0 rows left.
#             The kernel steps work in FK_KERNELS_DIR (default /tmp/fk-kernels, kept while the machine stays up, so
#             `kernels`, `kernels-ncu`, `kernels-peers` and `kernels-compile` can be separate calls) and copy it to
#             $OUT/kernels
#   soak, overload, faults: docs/RELIABILITY.md's runs on the GPU with the Llama-3.2-1B-shaped model
#             (tests/soak/*.py): 8 minutes (FK_SOAK_SECONDS) at 256 clients, max_model_len 4096; the burst and 2,000
#             connections; the injected faults, engine death included; results in $OUT/soak, overload, faults
# Logs go to $OUT/logs.tar.gz (or /tmp/fk-out); failing tests' output and a summary table are printed last.
set -u
cd "$(dirname "$0")/../.."
steps=${*:-test sanitize bench server}
bench1b=/tmp/bench-1b # bench-1b, made once per machine
dest=${OUT:-/tmp/fk-out}
out=/tmp/fk-logs
rm -rf "$out"
mkdir -p "$out" "$dest"
prefix=/tmp/fk-deps
summary=$dest/summary.txt # written as it goes: a run cut short still reports what finished
: >"$summary"
note() { echo "$*" | tee -a "$summary"; }

deploy/offline-deps.sh unpack .deps $prefix >/dev/null || exit 1
export LD_LIBRARY_PATH=$prefix/usr/lib/x86_64-linux-gnu
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | sed 's/^/device: /' | tee -a "$summary"
gpu_name=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1 | sed 's/^NVIDIA //') # for the plots' titles

build() { # name arch
    meson setup "/tmp/fk-$1" -Ddep_prefix=$prefix -Dcuda=enabled "-Dcuda-arch=$2" >"$out/setup-$1.log" 2>&1 &&
        ninja -C "/tmp/fk-$1" >"$out/build-$1.log" 2>&1 || { note "BUILD $1 ($2): FAILED (see build-$1.log)"; tail -20 "$out/build-$1.log"; return 1; }
}

case " $steps " in *" test "*)
    for v in ${FK_TEST_BUILDS:-native:sm_90a ptx75:compute_75}; do
        n=${v%%:*}; a=${v#*:}
        build "$n" "$a" || continue
        if meson test -C "/tmp/fk-$n" --suite gpu --print-errorlogs >"$out/test-$n.log" 2>&1; then r=passed; else r=FAILED; fi
        note "gpu suite, $n ($a): $r — $(grep -E '^(Ok|Fail|Skipped):' "$out/test-$n.log" | tr -s ' ' | tr '\n' ' ')"
        cp "/tmp/fk-$n/meson-logs/testlog.txt" "$out/testlog-$n.txt"
        [ $r = passed ] || grep -E "FAILED|LINE|error|Error|expected|differ" "$out/testlog-$n.txt" | head -30
        grep -hE "worst logit error|greedy equal" /tmp/fk-$n/meson-logs/testlog.txt | sed "s/^/  [$n] /" | tee -a "$summary"
    done ;;
esac

case " $steps " in *" sanitize "*)
    [ -x /tmp/fk-native/tests/gpu/test_gpu_ops ] || build native sm_90a
    # Every gpu test under memcheck (with leaks) and racecheck; the op tests also under initcheck and synccheck.
    # FK_TEST_UNDER_SANITIZER skips only the engine's fault-injection test, whose illegal write is deliberate.
    # FK_SANITIZE_RUNS (tool:test ...) and FK_SANITIZE_TIMEOUT (seconds per run, default 240) narrow or lengthen it;
    # FK_SANITIZE_ARGS adds options. Two limits seen on an H100 (compute-sanitizer of CUDA 13): racecheck slows the
    # engine tests so much that the batch-invariance and stop-string tests do not finish in 560 s (run the others
    # one per process with FK_TEST_FILTER); and racecheck with any kernel left out (--kernel-name,
    # --kernel-name-exclude) faults inside the uninstrumented cuBLAS GEMMs ("Internal Sanitizer Error: failed to
    # handle a hardware exception") where plain, memcheck and filtered memcheck runs of the same seed are clean.
    runs=${FK_SANITIZE_RUNS:-memcheck:gpu_ops racecheck:gpu_ops initcheck:gpu_ops synccheck:gpu_ops memcheck:gpu_model \
        racecheck:gpu_model memcheck:engine_cuda racecheck:engine_cuda}
    for run in $runs; do
        tool=${run%%:*}; t=${run#*:}; extra=""
        [ $tool = memcheck ] && extra="--leak-check full"
        extra="$extra ${FK_SANITIZE_ARGS:-}"
        FK_TEST_UNDER_SANITIZER=1 FK_TEST_DEVICE=cuda OMP_WAIT_POLICY=passive timeout ${FK_SANITIZE_TIMEOUT:-240} compute-sanitizer --tool $tool $extra --error-exitcode 9 \
            /tmp/fk-native/tests/gpu/test_$t >"$out/sanitize-$tool-$t.log" 2>&1
        note "compute-sanitizer $tool on test_$t: exit $? — $(grep -E 'PASSED|FAILED' "$out/sanitize-$tool-$t.log" | head -1) $(grep -E 'ERROR SUMMARY|LEAK SUMMARY|RACECHECK SUMMARY' "$out/sanitize-$tool-$t.log" | tr '\n' ' ')"
    done ;;
esac

make_bench1b() { # the peers' bench-1b model (torch on the GPU), with GPT-2's tokenizer
    [ -f $bench1b/model.safetensors ] || python3 .peers/make_bench_model.py $bench1b \
        tests/fixtures/tokenizers/gpt2/tokenizer.json >"$out/make-bench-1b.log" 2>&1 || note "make bench-1b: FAILED"
}

case " $steps " in *" llamacpp-start "*)
    [ -f /tmp/llama.cpp/done ] || setsid sh -c ".peers/build-llama-cpp.sh /tmp/llama.cpp >/tmp/llama-build.log 2>&1" \
        </dev/null >/dev/null 2>&1 &
    note "llama.cpp build started in the background (/tmp/llama.cpp)" ;;
esac

case " $steps " in *" bench "*)
    [ -x /tmp/fk-native/tools/flashkernel ] || build native sm_90a
    b=/tmp/fk-native/kernels/bench
    $b/bench_linear >"$out/bench-linear.log" 2>&1 || note "bench_linear: FAILED"
    grep -vE "^RESULT" "$out/bench-linear.log" | tee -a "$summary"
    for v in $b/bench_linear_w8 $b/bench_linear_sm8; do
        $v " (variant ${v##*_})" >"$out/bench-linear-${v##*_}.log" 2>&1 || note "$v: FAILED"
    done
    $b/bench_attention >"$out/bench-attention.log" 2>&1 || note "bench_attention: FAILED"
    grep -E "device|RESULT|SWEEP" "$out/bench-attention.log" | tee -a "$summary"
    for v in $b/bench_attention_decode_s*; do
        case $v in *.p) continue ;; esac
        $v " (variant ${v##*_})" 2>&1 | grep -E "RESULT|SWEEP" | tee -a "$summary"
    done
    python3 kernels/bench/peers.py attention 2>&1 | grep -E "PEER|Error" | tee -a "$summary"
    $b/bench_linear_gelu >"$out/bench-linear-gelu.log" 2>&1 || note "bench_linear_gelu: FAILED"
    grep -vE "^RESULT" "$out/bench-linear-gelu.log" | tee -a "$summary"
    python3 kernels/bench/peers.py linear_gelu 2>&1 | grep -E "PEER|Error" | tee -a "$summary"
    make_bench1b
    /tmp/fk-native/tools/flashkernel bench-engine --model $bench1b --device cuda --requests 1 --prompt-len 128 \
        --max-tokens 128 --max-model-len 4096 >"$out/bench-1b.log" 2>&1
    note "flashkernel batch-1 greedy, bench-1b: $(grep -E 'output tokens/s' "$out/bench-1b.log") ($(grep -E 'elapsed' "$out/bench-1b.log"))"
    python3 kernels/bench/peers.py generate $bench1b 2>&1 | grep -E "PEER|Error" | tee -a "$summary" ;;
esac

case " $steps " in *" quant "*)
    [ -x /tmp/fk-native/tools/flashkernel ] || build native sm_90a
    b=/tmp/fk-native/kernels/bench
    case " $steps " in *" bench "*) ;; *)
        $b/bench_linear >"$out/bench-linear.log" 2>&1 || note "bench_linear: FAILED"
        sed -n '/fmt/,$p' "$out/bench-linear.log" | grep -vE "^RESULT" | tee -a "$summary" ;;
    esac
    for v in qw16 qdeep qshallow; do # the geometric mean of default / variant time over the rows both have
        $b/bench_linear_$v " (variant $v)" >"$out/bench-linear-$v.log" 2>&1 || note "bench_linear_$v: FAILED"
        awk -v v=$v 'function key(l) { sub(/^RESULT linear_quant( \(variant [a-z0-9]*\))? /, "", l); return l }
            function us(l) { sub(/^[^:]*: /, "", l); return l + 0 }
            /^RESULT linear_quant / { k = key($0); sub(/:.*/, "", k); if (FNR == NR) d[k] = us($0); else if (k in d) { s += log(d[k] / us($0)); n++ } }
            END { if (n) printf "bench_linear variant %s: %.3fx the default quantized kernel'"'"'s speed (geometric mean of %d rows)\n", v, exp(s / n), n }' \
            "$out/bench-linear.log" "$out/bench-linear-$v.log" | tee -a "$summary"
    done
    $b/bench_linear_quant >"$out/bench-linear-quant.log" 2>&1 || note "bench_linear_quant: FAILED"
    grep -vE "^RESULT" "$out/bench-linear-quant.log" | tee -a "$summary"
    make_bench1b
    for q in none int8 int4 "int4 --quantize-lm-head"; do
        f=$(echo "$q" | tr ' ' '_')
        # shellcheck disable=SC2086 # $q is the format and maybe a flag
        /tmp/fk-native/tools/flashkernel bench-engine --model $bench1b --device cuda --quantization $q --requests 1 \
            --prompt-len 128 --max-tokens 128 --max-model-len 4096 >"$out/bench-1b-$f.log" 2>&1
        note "flashkernel batch-1 greedy, bench-1b, $q: $(grep -E 'output tokens/s' "$out/bench-1b-$f.log") ($(grep -E '^(elapsed|weights)' "$out/bench-1b-$f.log" | tr -s ' ' | tr '\n' ' '))"
    done
    [ -d /tmp/llama-1b ] || /tmp/fk-native/tools/flashkernel make-model --arch llama --preset llama-3.2-1b --dtype f16 --out /tmp/llama-1b >"$out/make-model.log" 2>&1 || note "make-model: FAILED"
    for model in deploy/demo-model /tmp/llama-1b; do
        for q in int8 int4; do
            l="$out/server-$(basename $model)-$q.log"
            python3 tests/gpu/server_check.py /tmp/fk-native/server/flashkernel-server /tmp/fk-native/tools/flashkernel $model cuda --quantization $q >"$l" 2>&1
            note "$(grep -E '^(FAIL|server --device)' "$l" || echo "server_check $model $q: no result")"
            grep -q "^FAIL" "$l" && tail -40 "$l"
        done
    done ;;
esac

case " $steps " in *" profile "*)
    [ -x /tmp/fk-native/tools/flashkernel ] || build native sm_90a
    make_bench1b
    for n in 1 16 64 256; do
        for mode in after before; do
            env=""
            [ $mode = before ] && env="FK_SMALL_LINEAR_MAX_M=0 FK_WGMMA_LINEAR_MAX_M=0 FK_PDL=0 FK_PREFILL_HOPPER=0"
            env $env /tmp/fk-native/tools/flashkernel bench-engine --model $bench1b --device cuda --requests $n \
                --prompt-len 128 --max-tokens 128 --max-model-len 4096 --profile >"$out/profile-$mode-$n.log" 2>&1
            echo "== profile $mode, batch $n" | tee -a "$summary"
            grep -E "output tokens/s|^profile|^  " "$out/profile-$mode-$n.log" | tee -a "$summary"
        done
    done ;;
esac

case " $steps " in *" llamacpp "*)
    make_bench1b
    for i in $(seq 1 110); do [ -f /tmp/llama.cpp/done ] && break; sleep 5; done
    if [ "$(cat /tmp/llama.cpp/done 2>/dev/null)" = 0 ]; then
        l=/tmp/llama.cpp
        PYTHONPATH=$l/gguf-py python3 $l/convert_hf_to_gguf.py $bench1b --outtype f16 --outfile /tmp/b1b-f16.gguf \
            >"$out/convert.log" 2>&1 || note "convert_hf_to_gguf: FAILED"
        for q in Q8_0 Q4_0; do
            $l/build/bin/llama-quantize /tmp/b1b-f16.gguf /tmp/b1b-$q.gguf $q >"$out/quantize-$q.log" 2>&1 ||
                note "llama-quantize $q: FAILED"
        done
        for q in f16 Q8_0 Q4_0; do
            $l/build/bin/llama-bench -m /tmp/b1b-$q.gguf -p 0 -n 128 -ngl 99 -fa 1 -r 5 >"$out/llama-bench-$q.log" 2>&1
            note "llama-bench bench-1b $q tg128: $(grep -E 'tg128' "$out/llama-bench-$q.log" | tr -s ' ')"
        done
    else
        note "llama.cpp: build not finished or failed ($(cat /tmp/llama.cpp/done 2>/dev/null); $(tail -3 /tmp/llama-build.log 2>/dev/null | tr '\n' ' '))"
    fi ;;
esac

case " $steps " in *" serving-peers "*)
    [ -x /tmp/fk-native/loadtest/flashkernel-loadtest ] || build native sm_90a
    make_bench1b
    [ -f /tmp/bench-1b-ascii/model.safetensors ] || python3 .peers/make_bench_model_ascii.py $bench1b /tmp/bench-1b-ascii \
        >"$out/make-ascii.log" 2>&1 || note "make bench-1b-ascii: FAILED"
    for i in $(seq 1 110); do [ -f /tmp/llama.cpp/done ] && break; sleep 5; done
    l=/tmp/llama.cpp
    if [ "$(cat $l/done 2>/dev/null)" = 0 ]; then
        [ -f /tmp/b1b-ascii-f16.gguf ] || PYTHONPATH=$l/gguf-py python3 $l/convert_hf_to_gguf.py /tmp/bench-1b-ascii \
            --outtype f16 --outfile /tmp/b1b-ascii-f16.gguf >"$out/convert-ascii.log" 2>&1 || note "convert_hf_to_gguf: FAILED"
        mkdir -p "$dest/serving-peers"
        loadtest/run-peer-benchmark.sh /tmp/fk-native/server/flashkernel-server /tmp/fk-native/loadtest/flashkernel-loadtest \
            $l/build/bin/llama-server /tmp/bench-1b-ascii /tmp/b1b-ascii-f16.gguf "$dest/serving-peers" \
            >"$out/serving-peers.log" 2>&1 || note "run-peer-benchmark.sh: FAILED ($(tail -3 "$out/serving-peers.log" | tr '\n' ' '))"
        grep -E "^\\$|^ *[0-9]+ " "$dest/serving-peers/benchmark.txt" | tee -a "$summary"
        for n in 64 256; do # the engine's own rate, without HTTP: what the server should keep >= 90 % of
            /tmp/fk-native/tools/flashkernel bench-engine --model /tmp/bench-1b-ascii --device cuda --requests $n --warmup $n \
                --prompt-len 128 --max-tokens 128 --max-model-len 4096 >"$out/bench-engine-$n.log" 2>&1
            note "flashkernel bench-engine, bench-1b-ascii, $n requests 128/128: $(grep -E 'output tokens/s' "$out/bench-engine-$n.log")"
        done
        d=$dest/serving-peers
        set -- ; labels=""
        for f in $d/flashkernel-completions-p128-o128.json $d/llama-completions-p128-o128-c*.json $d/llama-llama-p128-o128-c*.json; do
            [ -f "$f" ] || continue # an endpoint or server that FK_SERVERS / LLAMA_ENDPOINTS left out
            case $f in
                */flashkernel-*) l="flashkernel-server /v1/completions" ;;
                */llama-completions-*) l="llama-server /v1/completions" ;;
                *) l="llama-server /completion" ;;
            esac
            set -- "$@" "$f"; labels="$labels${labels:+,}$l"
        done
        python3 loadtest/plot.py "$@" --labels "$labels" --out $d/serving-peers.png \
            --title "bench-1b-ascii on an $gpu_name, 128/128 streamed, closed loop (llama-server: -np = clients)" >>"$out/plot.log" 2>&1 || note "plot: FAILED"
        [ -f $d/flashkernel-completions-p128-o128-rates.json ] && [ -f $d/llama-completions-p128-o128-rates.json ] &&
            { python3 loadtest/plot.py $d/flashkernel-completions-p128-o128-rates.json $d/llama-completions-p128-o128-rates.json \
            --labels "flashkernel-server,llama-server -np 256" --x throughput --out $d/serving-peers-rates.png \
            --title "bench-1b-ascii on an $gpu_name, 128/128 streamed, Poisson arrivals (at most 256 in flight)" >>"$out/plot.log" 2>&1 || note "plot (rates): FAILED"; }
        # few files come back from the device: the results in one archive, the pictures and the log beside it
        (cd $d && tar czf ../serving-peers.tgz --exclude='server-*.log' . && mv serving-peers*.png benchmark.txt .. && cd .. && rm -rf serving-peers)
    else
        note "llama.cpp: build not finished or failed ($(cat $l/done 2>/dev/null); $(tail -3 /tmp/llama-build.log 2>/dev/null | tr '\n' ' '))"
    fi ;;
esac

case " $steps " in *" bench-8b-prep "*|*" serving-8b "*)
    # bench-8b (loadtest/make_bench_8b.py, ~16 GB) and its GGUF; the converter needs only llama.cpp's unpacked source
    [ -f /tmp/bench-8b/model.safetensors.index.json ] || python3 loadtest/make_bench_8b.py /tmp/bench-8b \
        tests/fixtures/tokenizers/gpt2/tokenizer.json >"$out/make-bench-8b.log" 2>&1 || note "make bench-8b: FAILED"
    for i in $(seq 1 60); do [ -f /tmp/llama.cpp/convert_hf_to_gguf.py ] && break; sleep 2; done
    [ -f /tmp/b8b-f16.gguf ] || PYTHONPATH=/tmp/llama.cpp/gguf-py python3 /tmp/llama.cpp/convert_hf_to_gguf.py \
        /tmp/bench-8b --outtype f16 --outfile /tmp/b8b-f16.gguf >"$out/convert-8b.log" 2>&1 || note "convert bench-8b: FAILED"
    note "bench-8b: $(tail -1 "$out/make-bench-8b.log" 2>/dev/null); gguf $(du -h /tmp/b8b-f16.gguf 2>/dev/null | cut -f1)" ;;
esac

case " $steps " in *" serving-8b "*)
    [ -x /tmp/fk-native/loadtest/flashkernel-loadtest ] || build native sm_90a
    for i in $(seq 1 110); do [ -f /tmp/llama.cpp/done ] && break; sleep 5; done
    l=/tmp/llama.cpp d=$dest/serving-8b
    if [ "$(cat $l/done 2>/dev/null)" = 0 ]; then
        mkdir -p "$d"
        FK_STEPS=${FK_STEPS:-closed} FK_CONCURRENCY="1 16 64 256" FK_LONG_CONCURRENCY="1 16 64" FK_ROUNDS=1 \
            LLAMA_ENDPOINTS=completions loadtest/run-peer-benchmark.sh /tmp/fk-native/server/flashkernel-server \
            /tmp/fk-native/loadtest/flashkernel-loadtest $l/build/bin/llama-server /tmp/bench-8b /tmp/b8b-f16.gguf "$d" \
            >"$out/serving-8b.log" 2>&1 || note "run-peer-benchmark.sh (8b): FAILED ($(tail -3 "$out/serving-8b.log" | tr '\n' ' '))"
        grep -E "^\\$|^ *[0-9]+ " "$d/benchmark.txt" | tee -a "$summary"
        labels="flashkernel-server /v1/completions"
        for f in "$d"/llama-completions-p128-o128-c*.json; do labels="$labels,llama-server /v1/completions"; done
        python3 loadtest/plot.py "$d/flashkernel-completions-p128-o128.json" "$d"/llama-completions-p128-o128-c*.json \
            --labels "$labels" --out "$d/serving-8b.png" \
            --title "bench-8b on an $gpu_name, 128/128 streamed, closed loop (llama-server: -np = clients)" >>"$out/plot.log" 2>&1 || note "plot (8b): FAILED"
        (cd "$d" && tar czf ../serving-8b.tgz --exclude='server-*.log' . && mv serving-8b.png ../ && cp benchmark.txt ../serving-8b.txt && cd .. && rm -rf serving-8b)
    else
        note "llama.cpp: build not finished or failed ($(cat $l/done 2>/dev/null); $(tail -3 /tmp/llama-build.log 2>/dev/null | tr '\n' ' '))"
    fi ;;
esac

case " $steps " in *" sched-sweep "*)
    [ -x /tmp/fk-native/loadtest/flashkernel-loadtest ] || build native sm_90a
    make_bench1b
    rm -rf "$dest/sched-sweep"
    loadtest/run-sched-sweep.sh /tmp/fk-native/server/flashkernel-server /tmp/fk-native/loadtest/flashkernel-loadtest \
        $bench1b "$dest/sched-sweep" >"$out/sched-sweep.log" 2>&1 ||
        note "run-sched-sweep.sh: FAILED ($(tail -3 "$out/sched-sweep.log" | tr '\n' ' '))"
    sed -n '/^# output tokens\/s/,$p' "$dest/sched-sweep/sweep.txt" | tee -a "$summary"
    # few files come back from the device: the JSONs and server logs in one archive, the table beside it
    [ -d "$dest/sched-sweep" ] && (cd "$dest/sched-sweep" && tar czf ../sched-sweep.tgz . && mv sweep.txt ../sched-sweep.txt &&
        cd .. && rm -rf sched-sweep) ;;
esac

case " $steps " in *" server "*)
    [ -x /tmp/fk-native/server/flashkernel-server ] || build native sm_90a
    [ -d /tmp/llama-1b ] || /tmp/fk-native/tools/flashkernel make-model --arch llama --preset llama-3.2-1b --dtype f16 --out /tmp/llama-1b >"$out/make-model.log" 2>&1 || note "make-model: FAILED"
    for model in deploy/demo-model /tmp/llama-1b; do
        python3 tests/gpu/server_check.py /tmp/fk-native/server/flashkernel-server /tmp/fk-native/tools/flashkernel $model >"$out/server-$(basename $model).log" 2>&1
        note "$(grep -E '^(FAIL|server --device)' "$out/server-$(basename $model).log" || echo "server_check $model: no result")"
        grep -q "^FAIL" "$out/server-$(basename $model).log" && tail -40 "$out/server-$(basename $model).log"
    done ;;
esac
case " $steps " in *" serving "*)
    [ -x /tmp/fk-native/loadtest/flashkernel-loadtest ] || build native sm_90a
    mkdir -p "$dest/serving"
    loadtest/run-benchmark.sh /tmp/fk-native/server/flashkernel-server /tmp/fk-native/loadtest/flashkernel-loadtest \
        /tmp/fk-native/tools/flashkernel /tmp/fk-serving >"$out/serving.log" 2>&1 || note "run-benchmark.sh: FAILED"
    cp /tmp/fk-serving/*.json /tmp/fk-serving/*.txt /tmp/fk-serving/*.log "$dest/serving/" 2>/dev/null
    grep -E "^#|^ *[0-9]+ " /tmp/fk-serving/benchmark.txt | tee -a "$summary"
    python3 loadtest/hf_baseline.py /tmp/fk-serving/models/llama-3.2-1b /tmp/fk-serving/models/gpt2-124m 2>&1 |
        grep -E "^#|BASELINE|Error" | tee -a "$summary" ;;
esac
kd=${FK_KERNELS_DIR:-/tmp/fk-kernels} # the kernel suite's results, across calls
kernels_report() { # the tables and rooflines from what $kd holds, copied to $dest/kernels; the main rows' table
    python3 kernels/bench/report.py --ours "$kd/ours.json" --peers "$kd/peers.json" --ncu "$kd/profiles/summary.json" \
        --out "$kd" >>"$out/kernels-report.log" 2>&1 || note "report.py: FAILED ($(tail -1 "$out/kernels-report.log"))"
    mkdir -p "$dest/kernels"
    cp -r "$kd/." "$dest/kernels/"
    sed -n '/^## Main configurations/,/^## Roofline/p' "$kd/kernels-tables.md" 2>/dev/null | grep '^|' | tee -a "$summary"
}
case " $steps " in *" kernels "*)
    rm -rf "$kd/ours.json" "$kd/profiles" # a new ours.json; its profiles come from kernels-ncu
    mkdir -p "$kd"
    if [ -d /tmp/fk-native ]; then
        ninja -C /tmp/fk-native >"$out/build-native.log" 2>&1 || note "BUILD native: FAILED (see build-native.log)"
    else
        build native sm_90a
    fi
    bk=/tmp/fk-native/kernels/bench/bench_kernels
    # The device's copy of the tree may carry a stale .git: the commit the caller wrote in .peers/commit comes first.
    commit=$(cat .peers/commit 2>/dev/null || git rev-parse --short HEAD 2>/dev/null || echo unknown)
    $bk --json "$kd/ours.json" --commit "$commit" >"$out/bench-kernels.log" 2>&1 || note "bench_kernels: FAILED (see bench-kernels.log)"
    if [ -f "$kd/ours.json" ]; then
        note "bench_kernels: $(python3 -c 'import json, sys; print(len(json.load(open(sys.argv[1]))["rows"]))' "$kd/ours.json") rows, commit $commit"
        kernels_report
    else
        tail -20 "$out/bench-kernels.log"
    fi ;;
esac
case " $steps " in *" kernels-ncu "*)
    bk=/tmp/fk-native/kernels/bench/bench_kernels
    if [ -f "$kd/ours.json" ] && [ -x $bk ]; then
        rm -rf "$kd/profiles"
        mkdir -p "$kd/profiles"
        ncu=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
        # One ncu process per launcher, profiling only the timed call of its main rows (bench_kernels --ncu brackets
        # it with cudaProfilerStart/Stop); the report is exported, then read back as the raw page's CSV.
        for k in $(python3 -c 'import json, sys; print(*sorted({r["kernel"] for r in json.load(open(sys.argv[1]))["rows"] if r.get("main")}))' "$kd/ours.json"); do
            if ! "$ncu" --clock-control none --profile-from-start off --section SpeedOfLight --section Occupancy \
                --section MemoryWorkloadAnalysis --section WarpStateStats --section LaunchStats -f -o "/tmp/fk-ncu-$k" \
                $bk --ncu --main --only "$k" >"$out/ncu-$k.log" 2>&1; then
                note "ncu $k: FAILED ($(grep -m1 -E 'ERR|rror' "$out/ncu-$k.log"))"
            elif ! "$ncu" --import "/tmp/fk-ncu-$k.ncu-rep" --csv --page raw >"$kd/profiles/$k.csv" 2>>"$out/ncu-$k.log"; then
                note "ncu --import $k: FAILED"
            fi
        done
        python3 kernels/bench/ncu_summary.py --ours "$kd/ours.json" --out "$kd/profiles/summary.md" \
            "$kd"/profiles/k_*.csv 2>&1 | tee -a "$summary"
        kernels_report
    else
        note "kernels-ncu: no $kd/ours.json or $bk (run the kernels step first on this machine)"
    fi ;;
esac
for step in kernels-peers kernels-compile; do
    case " $steps " in *" $step "*)
        mode=none
        [ $step = kernels-compile ] && mode=only
        [ -f "$kd/ours.json" ] || { note "$step: no $kd/ours.json (run the kernels step first on this machine)"; continue; }
        python3 kernels/bench/peers.py kernels --ours "$kd/ours.json" --json "$kd/peers.json" --compile $mode --resume \
            --budget "${FK_PEERS_BUDGET:-400}" >"$out/$step.log" 2>&1 || note "peers.py kernels --compile $mode: FAILED ($(tail -1 "$out/$step.log"))"
        note "$step: $(grep -c 'us p50' "$out/$step.log") peers measured, $(grep -c 'skipped (--budget' "$out/$step.log") rows left for the next call, $(grep -cE ': ((eager|compile|cublas|sdpa[a-z_]*) unavailable|cannot build)' "$out/$step.log") unavailable or not buildable"
        grep -E "compiled in" "$out/$step.log" | tee -a "$summary"
        kernels_report ;;
    esac
done
case " $steps " in *" soak "* | *" overload "* | *" faults "*)
    [ -x /tmp/fk-native/server/flashkernel-server ] || build native sm_90
    [ -d /tmp/llama-1b ] || /tmp/fk-native/tools/flashkernel make-model --arch llama --preset llama-3.2-1b --dtype f16 --out /tmp/llama-1b >"$out/make-model.log" 2>&1 || note "make-model: FAILED" ;;
esac
reliability() { # name script args...: one of tests/soak/*.py on the GPU, its last lines into the summary
    local name=$1 script=$2
    shift 2
    python3 "tests/soak/$script" --server /tmp/fk-native/server/flashkernel-server --device cuda --out "$dest/$name" \
        "$@" >"$out/$name.log" 2>&1
    note "$name: exit $? — $(tail -n 4 "$out/$name.log" | tr '\n' ' ')"
}
case " $steps " in *" soak "*)
    reliability soak soak.py --loadtest /tmp/fk-native/loadtest/flashkernel-loadtest --model /tmp/llama-1b \
        --duration "${FK_SOAK_SECONDS:-480}" --clients 256 -- --max-model-len 4096 ;;
esac
case " $steps " in *" overload "*)
    reliability overload overload.py --loadtest /tmp/fk-native/loadtest/flashkernel-loadtest --model /tmp/llama-1b \
        --max-num-seqs 256 --capacity 256 --connections 2000 --prompt-len 128 --max-tokens 64 ;;
esac
case " $steps " in *" faults "*)
    reliability faults faults.py --cli /tmp/fk-native/tools/flashkernel --model /tmp/llama-1b --big-model /tmp/llama-1b ;;
esac
tar czf "$dest/logs.tar.gz" -C "$out" .
echo "==== summary"; cat "$summary"
