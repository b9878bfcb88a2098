#!/bin/sh
# run-on-device.sh — the GPU suite and benchmarks on a GPU host with no package access (nvcc, cuBLAS, meson and
# ninja there; Debian .deb files carried in .deps by `deploy/offline-deps.sh download .deps` here).
#   tests/gpu/run-on-device.sh [test] [sanitize] [bench] [server] [serving]   (default: all but serving)
#   test:     build natively (sm_90) and as compute_75 PTX only (the T4 path, JIT-compiled by the driver) and run
#             the gpu suite on both
#   sanitize: compute-sanitizer memcheck (leak check), racecheck, initcheck and synccheck on the op tests
#   bench:    kernels/bench (ours vs the measured device ceilings), PyTorch SDPA peers, and batch-1 greedy decode
#             of a Llama-3.2-1B-shaped model against Hugging Face transformers generate()
#   server:   flashkernel-server --device cuda serving the demo model and the 1B-shaped model (server_check.py)
#   serving:  the end-to-end serving benchmark (loadtest/run-benchmark.sh) and its transformers baseline
#             (loadtest/hf_baseline.py); results in $OUT/serving
#   soak, overload, faults: docs/RELIABILITY.md's runs on the GPU with the Llama-3.2-1B-shaped model
#             (tests/soak/*.py): 8 minutes (FK_SOAK_SECONDS) at 256 clients, max_model_len 4096; the burst and 2,000
#             connections; the injected faults, engine death included; results in $OUT/soak, overload, faults
# Logs go to $OUT/logs.tar.gz (or /tmp/fk-out); failing tests' output and a summary table are printed last.
set -u
cd "$(dirname "$0")/../.."
steps=${*:-test sanitize bench server}
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

build() { # name arch
    meson setup "/tmp/fk-$1" -Ddep_prefix=$prefix -Dcuda=enabled "-Dcuda-arch=$2" >"$out/setup-$1.log" 2>&1 &&
        ninja -C "/tmp/fk-$1" >"$out/build-$1.log" 2>&1 || { note "BUILD $1 ($2): FAILED (see build-$1.log)"; tail -20 "$out/build-$1.log"; return 1; }
}

case " $steps " in *" test "*)
    for v in native:sm_90 ptx75:compute_75; do
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
    [ -x /tmp/fk-native/tests/gpu/test_gpu_ops ] || build native sm_90
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

case " $steps " in *" bench "*)
    [ -x /tmp/fk-native/tools/flashkernel ] || build native sm_90
    /tmp/fk-native/kernels/bench/bench_attention >"$out/bench-attention.log" 2>&1
    grep -E "device|RESULT" "$out/bench-attention.log" | tee -a "$summary"
    python3 kernels/bench/peers.py attention 2>&1 | grep PEER | tee -a "$summary"
    /tmp/fk-native/kernels/bench/bench_linear_gelu >"$out/bench-linear-gelu.log" 2>&1 || note "bench_linear_gelu: FAILED"
    grep -vE "^RESULT" "$out/bench-linear-gelu.log" | tee -a "$summary"
    python3 kernels/bench/peers.py linear_gelu 2>&1 | grep -E "PEER|Error" | tee -a "$summary"
    /tmp/fk-native/tools/flashkernel make-model --arch gpt2 --preset gpt2-124m --dtype f16 --out /tmp/gpt2-124m >"$out/make-gpt2.log" 2>&1 || note "make-model gpt2: FAILED"
    for mode in kernel cublaslt; do # the epilogue choice end to end: 16 requests, 128 prompt + 128 new tokens
        FK_GELU_EPILOGUE=$mode /tmp/fk-native/tools/flashkernel bench-engine --model /tmp/gpt2-124m --device cuda --requests 16 --prompt-len 128 --max-tokens 128 >"$out/bench-gpt2-$mode.log" 2>&1
        note "flashkernel gpt2-124m, 16 requests, epilogue $mode: $(grep -E 'output tokens/s' "$out/bench-gpt2-$mode.log")"
    done
    /tmp/fk-native/tools/flashkernel make-model --arch llama --preset llama-3.2-1b --dtype f16 --out /tmp/llama-1b >"$out/make-model.log" 2>&1 || note "make-model: FAILED"
    /tmp/fk-native/tools/flashkernel bench-engine --model /tmp/llama-1b --device cuda --requests 1 --prompt-len 128 --max-tokens 128 --max-model-len 4096 >"$out/bench-1b.log" 2>&1
    note "flashkernel batch-1 greedy, llama-3.2-1b shape: $(grep -E 'output tokens/s' "$out/bench-1b.log") ($(grep -E 'elapsed' "$out/bench-1b.log"))"
    python3 kernels/bench/peers.py generate /tmp/llama-1b 2>&1 | grep -E "PEER|Error" | tee -a "$summary" ;;
esac
case " $steps " in *" server "*)
    [ -x /tmp/fk-native/server/flashkernel-server ] || build native sm_90
    [ -d /tmp/llama-1b ] || /tmp/fk-native/tools/flashkernel make-model --arch llama --preset llama-3.2-1b --dtype f16 --out /tmp/llama-1b >"$out/make-model.log" 2>&1 || note "make-model: FAILED"
    for model in deploy/demo-model /tmp/llama-1b; do
        python3 tests/gpu/server_check.py /tmp/fk-native/server/flashkernel-server /tmp/fk-native/tools/flashkernel $model >"$out/server-$(basename $model).log" 2>&1
        note "$(grep -E '^(FAIL|server --device)' "$out/server-$(basename $model).log" || echo "server_check $model: no result")"
        grep -q "^FAIL" "$out/server-$(basename $model).log" && tail -40 "$out/server-$(basename $model).log"
    done ;;
esac
case " $steps " in *" serving "*)
    [ -x /tmp/fk-native/loadtest/flashkernel-loadtest ] || build native sm_90
    mkdir -p "$dest/serving"
    loadtest/run-benchmark.sh /tmp/fk-native/server/flashkernel-server /tmp/fk-native/loadtest/flashkernel-loadtest \
        /tmp/fk-native/tools/flashkernel /tmp/fk-serving >"$out/serving.log" 2>&1 || note "run-benchmark.sh: FAILED"
    cp /tmp/fk-serving/*.json /tmp/fk-serving/*.txt /tmp/fk-serving/*.log "$dest/serving/" 2>/dev/null
    grep -E "^#|^ *[0-9]+ " /tmp/fk-serving/benchmark.txt | tee -a "$summary"
    python3 loadtest/hf_baseline.py /tmp/fk-serving/models/llama-3.2-1b /tmp/fk-serving/models/gpt2-124m 2>&1 |
        grep -E "^#|BASELINE|Error" | tee -a "$summary" ;;
esac
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
        --max-num-seqs 256 --max-queue 256 --connections 2000 --prompt-len 128 --max-tokens 64 ;;
esac
case " $steps " in *" faults "*)
    reliability faults faults.py --cli /tmp/fk-native/tools/flashkernel --model /tmp/llama-1b --big-model /tmp/llama-1b ;;
esac
tar czf "$dest/logs.tar.gz" -C "$out" .
echo "==== summary"; cat "$summary"
