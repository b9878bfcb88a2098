#!/bin/sh
# run-all.sh — sets up, builds and runs the whole test suite: the README's test command and what CI runs.
# 1. release build: the unit, smoke and deploy suites (the smoke tests start real servers; the deploy tests check
#    deploy/ and run the Dockerfile's build steps and nginx here);
# 2. the same under AddressSanitizer + UndefinedBehaviorSanitizer (+ LeakSanitizer, servers included);
# 3. the libFuzzer harnesses (clang, ASan + UBSan), the tokenizer's for 45 s and the chat template's for 30 s, so that
#    they keep building and passing (the long runs are in docs/FUZZING.md).
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
ninja -C build-fuzz tests/fuzz/fuzz_tokenizer tests/fuzz/fuzz_chat_template
corpus=$(mktemp -d)
build-fuzz/tests/fuzz/fuzz_tokenizer -max_total_time=45 -max_len=4096 -print_final_stats=1 \
    -artifact_prefix=build-fuzz/ "$corpus" tests/fuzz/seeds
rm -rf "$corpus"
corpus=$(mktemp -d)
build-fuzz/tests/fuzz/fuzz_chat_template -max_total_time=30 -max_len=8192 -dict=tests/fuzz/chat_template.dict \
    -print_final_stats=1 -artifact_prefix=build-fuzz/ "$corpus" tests/fuzz/seeds-chat-template
rm -rf "$corpus"
echo "run-all: all tests passed"
