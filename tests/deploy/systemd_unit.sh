#!/bin/bash
# systemd_unit.sh — deploy/flashkernel.service with what Debian has, no running systemd needed: `systemd-analyze
# verify` accepts it, `systemd-analyze security` rates its sandbox at most 3.0 ("OK"; the unit scores 1.8 today),
# and its ExecStart and Environment, with the installed paths mapped to this build, serve the demo model, exit 0
# on SIGTERM within TimeoutStopSec (so Restart=on-failure leaves a stopped server stopped) and non-zero after a
# device failure (so Restart=on-failure starts it again).
# shellcheck source-path=SCRIPTDIR
. "$(dirname "$0")/lib.sh"

UNIT=$FK_SOURCE_ROOT/deploy/flashkernel.service
PREFIX=/opt/flashkernel
command -v systemd-analyze >/dev/null || fail "systemd-analyze is missing (deploy/install-deps.sh installs systemd)"

# The unit with its installed paths mapped: the binary to this build's, the demo model to the source tree's.
mapped() {
    sed -e "s#$PREFIX/bin/flashkernel-server#$FK_SERVER#g" \
        -e "s#$PREFIX/share/flashkernel/demo-model#$FK_SOURCE_ROOT/deploy/demo-model#g" "$UNIT"
}
grep -q "^ExecStart=$PREFIX/bin/flashkernel-server " "$UNIT" || fail "ExecStart is not $PREFIX/bin/flashkernel-server"
mapped >"$WORK/flashkernel.service"

note "systemd-analyze verify"
systemd-analyze verify "$WORK/flashkernel.service" >"$WORK/verify.log" 2>&1 || {
    cat "$WORK/verify.log" >&2
    fail "systemd-analyze verify rejects the unit"
}
if grep -q "flashkernel.service" "$WORK/verify.log"; then
    cat "$WORK/verify.log" >&2
    fail "systemd-analyze verify warns about the unit"
fi

note "systemd-analyze security"
# --threshold counts on a scale of 0 to 100: 30 is the 3.0 it prints.
systemd-analyze security --offline=true --threshold=30 "$WORK/flashkernel.service" >"$WORK/security.log" 2>&1 || {
    grep "✗" "$WORK/security.log" >&2 || true
    tail -n 1 "$WORK/security.log" >&2
    fail "the unit's exposure level is above 3.0"
}
tail -n 1 "$WORK/security.log"

note "ExecStart with the unit's Environment: serves, then SIGTERM → exit 0"
read -r -a start < <(sed -n 's/^ExecStart=//p' "$WORK/flashkernel.service")
envs=()
while read -r line; do
    envs+=("$line")
done < <(sed -n 's/^Environment=//p' "$WORK/flashkernel.service")
stop=$(sed -n 's/^TimeoutStopSec=\([0-9]*\)s\{0,1\}$/\1/p' "$UNIT")
[ -n "$stop" ] || fail "TimeoutStopSec is not a number of seconds"
# Only the address changes: a free port of 127.0.0.1 (later flags win); the CUDA cache in the test's directory.
run_unit() {
    LOG=$WORK/$1.log
    shift
    env "${envs[@]}" "CUDA_CACHE_PATH=$WORK/cache" "$@" "${start[@]}" --host 127.0.0.1 --port 0 --threads 2 \
        >"$LOG" 2>&1 &
    SERVER_PID=$!
    wait_listening
    wait_healthy 60
}
run_unit unit
expect_generation "a request to the unit's server"
kill -TERM "$SERVER_PID"
wait_exit "$stop"
[ "$EXIT_CODE" = 0 ] || fail "exit status $EXIT_CODE after SIGTERM: Restart=on-failure would restart a stopped server"

note "a device failure → non-zero exit, which Restart=on-failure restarts"
run_unit fault FLASHKERNEL_FAULT_AFTER_STEPS=2
http /generate -d '{"prompt": "ROMEO:", "max_tokens": 8}'
[ "$STATUS" = 503 ] || fail "a request during a device failure: status $STATUS"
wait_exit 10
[ "$EXIT_CODE" = 1 ] || fail "exit status $EXIT_CODE after a device failure, not 1 (which Restart=on-failure restarts)"
note "ok"
