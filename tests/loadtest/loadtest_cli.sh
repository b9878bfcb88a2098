#!/bin/bash
# loadtest_cli.sh — flashkernel-loadtest's command line: --help, and every kind of bad usage is exit status 2 with a
# message that names the problem, before anything is sent (the URL given is one where nothing listens, so a run that
# went on would fail differently). A --json OUT that cannot be written is exit status 3.
set -eu
: "${FK_LOADTEST:?}"
WORK=$(mktemp -d "${TMPDIR:-/tmp}/fk-loadtest-cli-XXXXXX")
trap 'rm -rf "$WORK"' EXIT
fail() {
    echo "FAIL: $*" >&2
    exit 1
}

# A port where nothing listens: bound, then released.
DEAD_PORT=$("${FK_PYTHON:-python3}" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
URL="http://127.0.0.1:$DEAD_PORT"

"$FK_LOADTEST" --help >"$WORK/help" || fail "--help exited with $?"
for want in "--url" "--concurrency" "--rate" "--requests" "--duration" "--prompt-len" "--prompts" "--max-tokens" \
    "--ignore-eos" "--stream" "--seed" "--timeout" "--vocab" "--json" "nearest-rank" "Exit status" "130"; do
    grep -q -- "$want" "$WORK/help" || fail "--help does not mention $want"
done

# usage ARGS... MESSAGE: exit status 2, MESSAGE (fixed string) on stderr, nothing on stdout.
n=0
usage() {
    local message=${*: -1} rc=0
    set -- "${@:1:$#-1}"
    "$FK_LOADTEST" "$@" >"$WORK/out" 2>"$WORK/err" || rc=$?
    [ "$rc" = 2 ] || fail "$*: exit status $rc, want 2 (stderr: $(cat "$WORK/err"))"
    grep -qF -- "$message" "$WORK/err" || fail "$*: stderr \"$(cat "$WORK/err")\" lacks \"$message\""
    [ ! -s "$WORK/out" ] || fail "$*: printed on stdout: $(cat "$WORK/out")"
    n=$((n + 1))
}
usage "--url is required"
usage --url "$URL" --frobnicate "unknown option --frobnicate"
usage --url "$URL" -x "unknown option -x"
usage --url "$URL" extra "unexpected argument \"extra\""
usage --url "$URL" --concurrency 0 "--concurrency values must be integers in [1, 4096], got \"0\""
usage --url "$URL" --concurrency 1,,4 "--concurrency must be a comma-separated list"
usage --url "$URL" --concurrency 4,-1 "got \"-1\""
usage --url "$URL" --concurrency 5000 "got \"5000\""
usage --url "$URL" --concurrency abc "got \"abc\""
usage --url "$URL" --requests 5 --duration 3 "--requests and --duration exclude each other"
usage --url "$URL" --prompt-len 8 --prompts "$WORK/help" "--prompt-len and --prompts exclude each other"
usage --url "$URL" --requests 0 "--requests values must be integers in [1, 1000000000], got \"0\""
usage --url "$URL" --concurrency 1,2,3 --requests 4,5 "--requests has 2 values for 3 --concurrency levels"
usage --url "$URL" --requests 2.5 "--requests values must be integers"
usage --url "$URL" --duration -1 "--duration must be a number of seconds"
usage --url "$URL" --rate 0 "--rate must be a number of requests per second"
usage --url "$URL" --rate nan "--rate must be"
usage --url "$URL" --rate 5,0 "--rate must be a number of requests per second in (0, 1e6], got \"0\""
usage --url "$URL" --rate 5,,6 "--rate must be a comma-separated list of requests per second"
usage --url "$URL" --rate 1,2,4 --concurrency 8,16 "--concurrency has 2 values and --rate 3"
usage --url "$URL" --rate 1,2,4 --requests 8,16 "--requests has 2 values for 3 --rate levels"
usage --url "$URL" --max-tokens 0 "--max-tokens must be an integer in [1, 1048576], got \"0\""
usage --url "$URL" --prompt-len 99999999 "--prompt-len must be an integer"
usage --url "$URL" --timeout 0 "--timeout must be a number of seconds"
usage --url "$URL" --seed -3 "--seed must be an integer in [0, 2^64)"
usage --url "$URL" --endpoint chat "--endpoint must be generate, completions or llama, got \"chat\""
usage --url "$URL" --max-tokens "--max-tokens needs a value"
usage --url "localhost:8080" "must start with http://"
usage --url "https://127.0.0.1:8080" "https is not supported"
usage --url "http://127.0.0.1:99999" "the port must be a number in [1, 65535]"
usage --url "http://:8080" "no host"
usage --url "http://127.0.0.1:8080/?x=1" "no query or fragment"
echo "== $n usage errors: exit status 2 with their messages"

# Setup failures: exit status 3, quickly (nothing listens at $URL).
rc=0
"$FK_LOADTEST" --url "$URL" --json /nonexistent-dir/out.json >"$WORK/out" 2>"$WORK/err" || rc=$?
[ "$rc" = 3 ] && grep -q "cannot write --json /nonexistent-dir/out.json" "$WORK/err" ||
    fail "unwritable --json: status $rc, stderr $(cat "$WORK/err")"
rc=0
echo '{"earlier": "results"}' >"$WORK/keep.json"
start=$(date +%s%N)
"$FK_LOADTEST" --url "$URL" --timeout 5 --json "$WORK/keep.json" >"$WORK/out" 2>"$WORK/err" || rc=$?
ms=$((($(date +%s%N) - start) / 1000000))
[ "$rc" = 3 ] && grep -q "cannot reach the server: .*refused" "$WORK/err" ||
    fail "no server: status $rc, stderr $(cat "$WORK/err")"
[ "$ms" -lt 2000 ] || fail "no server: took $ms ms to give up on a refused connection"
[ "$(cat "$WORK/keep.json")" = '{"earlier": "results"}' ] && [ ! -e "$WORK/keep.json.part" ] ||
    fail "a run that could not start touched the --json file"
rc=0
"$FK_LOADTEST" --url "http://no-such-host.invalid:8080" >"$WORK/out" 2>"$WORK/err" || rc=$?
[ "$rc" = 3 ] && grep -q "cannot resolve host \"no-such-host.invalid\"" "$WORK/err" ||
    fail "unknown host: status $rc, stderr $(cat "$WORK/err")"
echo "== setup failures: exit status 3 with their messages (no server: $ms ms)"
echo "PASS"
