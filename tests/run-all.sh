#!/bin/sh
# run-all.sh — sets up, builds and runs the whole test suite: the README's test command and what CI runs.
# 1. release build: every unit test;  2. the same under AddressSanitizer + UndefinedBehaviorSanitizer.
set -eu
cd "$(dirname "$0")/.."

deploy/build.sh build
meson test -C build --print-errorlogs

export ASAN_OPTIONS=detect_leaks=1:abort_on_error=0
export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
deploy/build.sh build-sanitize -Dbuildtype=debugoptimized -Db_sanitize=address,undefined -Dcuda=disabled
meson test -C build-sanitize --print-errorlogs --timeout-multiplier 4
echo "run-all: all tests passed"
