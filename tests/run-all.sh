#!/bin/sh
# run-all.sh — sets up, builds and runs the whole test suite: the README's test command and what CI runs.
# 1. release build: the unit, smoke and deploy suites (the smoke tests start real servers; the deploy tests check
#    deploy/ and run the Dockerfile's build steps and nginx here);
# 2. the same under AddressSanitizer + UndefinedBehaviorSanitizer (+ LeakSanitizer, servers included);
# 3. every libFuzzer harness (clang, ASan + UBSan) for 30 s from its seeds, so that they keep building and passing
#    (the long runs are in docs/FUZZING.md).
set -eu
cd "$(dirname "$0")/.."

deploy/build.sh build
meson test -C build --print-errorlogs

export ASAN_OPTIONS=detect_leaks=1:abort_on_error=0
export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
deploy/build.sh build-sanitize -Dbuildtype=debugoptimized -Db_sanitize=address,undefined -Dcuda=disabled
meson test -C build-sanitize --print-errorlogs --timeout-multiplier 4

if [ ! -f build-fuzz/build.ninja ]; then
    CC=clang meson setup build-fuzz -Dfuzz=true -Db_sanitize=address,undefined -Dbuildtype=debugoptimized \
        -Dcuda=disabled
fi
ninja -C build-fuzz
for seeds in tests/fuzz/seeds/*/; do # one folder of seeds per harness, named as it is (a dictionary beside it)
    name=$(basename "$seeds")
    corpus=$(mktemp -d)
    log=build-fuzz/fuzz_$name.log
    dict=""
    [ -f "tests/fuzz/$name.dict" ] && dict="-dict=tests/fuzz/$name.dict"
    if ! build-fuzz/tests/fuzz/fuzz_"$name" -max_total_time=30 -max_len=65536 -timeout=25 -print_final_stats=1 \
        $dict -artifact_prefix=build-fuzz/ "$corpus" "$seeds" >"$log" 2>&1; then
        tail -n 40 "$log"
        echo "run-all: fuzz_$name failed: the input is in build-fuzz/, the log in $log"
        exit 1
    fi
    echo "run-all: fuzz_$name: $(grep -E '^#[0-9]+[[:space:]]+DONE' "$log")"
    rm -rf "$corpus"
done
echo "run-all: all tests passed"
