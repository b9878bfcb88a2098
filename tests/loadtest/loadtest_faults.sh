#!/bin/bash
# loadtest_faults.sh — flashkernel-loadtest against tests/loadtest/fake_server.py, a server that misbehaves on purpose:
# every failure is reported under its kind with the exact count the fake server's mode implies, the run never hangs
# (bounded by --timeout), the exit status says what happened, and SIGINT mid-run gives partial results. The fake
# server also checks the parser on valid answers cut into random pieces (chunked, LF/CRLF, pings, close-delimited).
set -eu
: "${FK_LOADTEST:?}" "${FK_SOURCE_ROOT:?}"
PY=${FK_PYTHON:-python3}
WORK=$(mktemp -d "${TMPDIR:-/tmp}/fk-loadtest-faults-XXXXXX")
FAKE_PID="" # the fake server's own pid, as it reports it
cleanup() {
    if [ -n "$FAKE_PID" ]; then kill "$FAKE_PID" 2>/dev/null || true; fi
    rm -rf "$WORK"
}
trap cleanup EXIT
fail() {
    echo "FAIL: $*" >&2
    [ -f "$WORK/fake.err" ] && echo "--- fake server: $(cat "$WORK/fake.err")" >&2
    [ -f "$WORK/err" ] && echo "--- loadtest stderr: $(cat "$WORK/err")" >&2
    exit 1
}
SEED=${FK_TEST_SEED:-$RANDOM$RANDOM}
echo "random seed: FK_TEST_SEED=$SEED"

# fake MODE [flags]: (re)starts the fake server; sets URL.
fake() {
    if [ -n "$FAKE_PID" ]; then kill "$FAKE_PID" 2>/dev/null || true; fi
    : >"$WORK/fake.out"
    "$PY" "$FK_SOURCE_ROOT/tests/loadtest/fake_server.py" "$@" --seed "$SEED" --lifetime 120 >"$WORK/fake.out" \
        2>"$WORK/fake.err" &
    local i port=""
    for i in $(seq 1 200); do
        port=$(sed -n 's/^PORT \([0-9]*\) PID .*/\1/p' "$WORK/fake.out")
        [ -n "$port" ] && break
        sleep 0.05
    done
    [ -n "$port" ] || fail "the fake server did not start"
    FAKE_PID=$(sed -n 's/^PORT [0-9]* PID \([0-9]*\)/\1/p' "$WORK/fake.out")
    URL="http://127.0.0.1:$port"
}

# lt ARGS...: runs the load tester (stdout $WORK/out, stderr $WORK/err, JSON $WORK/run.json); sets RC and MS.
lt() {
    local start
    start=$(date +%s%N)
    RC=0
    "$FK_LOADTEST" --url "$URL" --vocab 1000 --seed "$SEED" --json "$WORK/run.json" "$@" >"$WORK/out" 2>"$WORK/err" ||
        RC=$?
    MS=$((($(date +%s%N) - start) / 1000000))
}

# check PYTHON_EXPR: evaluates the expression with `d` = the run's JSON, `l` = its first level; fails if false.
check() {
    "$PY" - "$WORK/run.json" "$1" <<'PYEOF' || fail "check failed: $1 ($(cat "$WORK/out"))"
import json, sys
d = json.load(open(sys.argv[1]))
l = d["levels"][0]
if not eval(sys.argv[2]):
    print("false: %s\nlevel: %s" % (sys.argv[2], {k: v for k, v in l.items() if k != "results"}), file=sys.stderr)
    sys.exit(1)
PYEOF
}

note() { echo "== $*"; }

note "valid answers in random pieces: every endpoint and framing, all requests succeed with max_tokens tokens"
fake ok
for ep in generate completions llama; do
    for stream in "" --stream; do
        lt --endpoint "$ep" $stream --concurrency 1,3 --requests 9 --max-tokens 17 --prompt-len 5
        [ "$RC" = 0 ] || fail "ok/$ep/$stream: exit status $RC"
        check 'all(x["ok"] == 9 and x["failed"] == 0 and x["output_tokens"] == 9 * 17 and x["prompt_tokens"] == 9 * 5
                   for x in d["levels"])'
        check 'all(r["output_tokens"] == 17 and r["finish_reason"] == "length" for x in d["levels"] for r in x["results"])'
        if [ -n "$stream" ]; then
            check 'all(r["token_events"] == 17 and 0 <= r["ttft_ms"] <= r["e2e_ms"] for r in l["results"])'
            check 'l["ttft_ms"]["measured"] and l["ttft_ms"]["n"] == 9 and l["itl_ms"]["n"] == 9 * 16'
        else
            check 'not l["ttft_ms"]["measured"] and l["ttft_ms"]["p50"] is None and l["itl_ms"]["p99"] is None'
        fi
    done
done
fake ok --close
lt --concurrency 2,5 --requests 6,11 --max-tokens 9 # and one request count per level
[ "$RC" = 0 ] || fail "close-delimited: exit status $RC"
check '[x["ok"] for x in d["levels"]] == [6, 11] and d["params"]["requests"] == [6, 11] and l["output_tokens"] == 54'

note "--cancel-rate: streams abandoned mid-way are counted as cancelled (not errors), the same ones for the same seed"
for ep in generate completions llama; do
    lt --endpoint "$ep" --stream --cancel-rate 0.5 --concurrency 4 --requests 40 --max-tokens 9
    [ "$RC" = 0 ] || fail "cancel-rate/$ep: exit status $RC, want 0 (cancellations are not failures)"
    check 'l["requests"] == 40 and l["failed"] == 0 and l["errors"] == {} and l["ok"] + l["cancelled"] == 40'
    check '5 <= l["cancelled"] <= 35 and l["cancelled"] == sum(r["cancelled"] for r in l["results"])'
    check 'all(1 <= r["token_events"] <= 8 and r["error"] is None and r["finish_reason"] is None
               for r in l["results"] if r["cancelled"])'
    check 'all(r["token_events"] == 9 and r["output_tokens"] == 9 for r in l["results"] if not r["cancelled"])'
    check 'l["output_tokens"] == 9 * l["ok"] and l["ttft_ms"]["n"] == l["ok"] and d["params"]["cancel_rate"] == 0.5'
    grep -q "(cancelled:" "$WORK/out" || fail "cancel-rate: the table row lacks the cancellations: $(cat "$WORK/out")"
    "$PY" -c 'import json,sys; l=json.load(open(sys.argv[1]))["levels"][0]
print(sorted((r["cancelled"], r["token_events"]) for r in l["results"]))' "$WORK/run.json" \
        >"$WORK/cancel1"
    lt --endpoint "$ep" --stream --cancel-rate 0.5 --concurrency 4 --requests 40 --max-tokens 9
    "$PY" -c 'import json,sys; l=json.load(open(sys.argv[1]))["levels"][0]
print(sorted((r["cancelled"], r["token_events"]) for r in l["results"]))' "$WORK/run.json" \
        >"$WORK/cancel2"
    cmp -s "$WORK/cancel1" "$WORK/cancel2" || fail "cancel-rate/$ep: another set of cancellations for the same seed"
done
lt --stream --cancel-rate 1 --concurrency 2 --requests 6 --max-tokens 2
check 'l["cancelled"] == 6 and l["ok"] == 0 and all(r["token_events"] == 1 for r in l["results"])'

note "llama-server's own API: n_predict sent, its counts read, the vocabulary from GET /v1/models' meta.n_vocab"
"$FK_LOADTEST" --url "$URL" --endpoint llama --stream --prompt-len 3 --max-tokens 4 --requests 2 \
    --json "$WORK/run.json" >"$WORK/out" 2>"$WORK/err" || fail "llama: exit status $? ($(cat "$WORK/err"))"
grep -q "/completion, model fake-model (max_model_len 4096)" "$WORK/out" || fail "llama: header $(cat "$WORK/out")"
grep -q "vocabulary of 1000 (n_vocab of GET /v1/models)" "$WORK/out" || fail "llama: vocab $(cat "$WORK/out")"
check 'd["params"]["endpoint"] == "llama" and d["params"]["vocab"] == 1000 and l["ok"] == 2'
check 'l["output_tokens"] == 8 and l["prompt_tokens"] == 6 and l["finish_reasons"] == {"length": 2}'

note "--rate sweep: one level per rate, each open loop, with one --concurrency for all"
lt --rate 40,80,160 --concurrency 4 --requests 12,12,24 --max-tokens 3 --stream
[ "$RC" = 0 ] || fail "rate sweep: exit status $RC"
check '[x["rate"] for x in d["levels"]] == [40, 80, 160] and [x["concurrency"] for x in d["levels"]] == [4, 4, 4]'
check '[x["ok"] for x in d["levels"]] == [12, 12, 24] and d["params"]["loop"] == "open"'
check 'd["params"]["rate"] == [40, 80, 160] and d["params"]["concurrency"] == [4, 4, 4]'
check 'd["params"]["requests"] == [12, 12, 24]'
grep -Eq '^ +4 +160 +24 +0 ' "$WORK/out" || fail "rate sweep: no row for rate 160: $(cat "$WORK/out")"

note "mixed answers (ok, 429, 503, drop in turn): counted by kind, exit status 1"
fake mixed
for stream in "" --stream; do
    lt --concurrency 3 --requests 16 --max-tokens 8 $stream
    [ "$RC" = 1 ] || fail "mixed: exit status $RC, want 1"
    check 'l["requests"] == 16 and l["ok"] == 4 and l["failed"] == 12'
    check 'l["errors"] == {"http_429": 4, "http_503": 4, "dropped": 4}'
    check '"server overloaded, retry later" in l["error_examples"]["http_429"]'
    check '"server is shutting down" in l["error_examples"]["http_503"]'
    check 'l["output_tokens"] == 4 * 8 and sorted(r["status"] for r in l["results"]).count(429) == 4'
    grep -q "dropped:4 http_429:4 http_503:4" "$WORK/out" || fail "the table row lacks the errors: $(cat "$WORK/out")"
done

for mode in 429 503; do
    note "every request answered $mode"
    fake "$mode"
    lt --concurrency 4 --requests 10 --endpoint completions
    [ "$RC" = 1 ] || fail "$mode: exit status $RC"
    check "l['errors'] == {'http_$mode': 10} and l['ok'] == 0 and l['output_tok_per_s'] == 0"
done

note "connections closed before any answer: dropped"
fake reset
lt --concurrency 2 --requests 6 --stream
[ "$RC" = 1 ] || fail "reset: exit status $RC"
check 'l["errors"] == {"dropped": 6} and "before any response" in l["error_examples"]["dropped"]'

note "token counts that disagree with usage: token_count_mismatch (stream, /generate's and llama's tokens)"
fake miscount
for ep in generate llama; do
    for stream in "" --stream; do
        lt --endpoint $ep --concurrency 2 --requests 4 --max-tokens 5 $stream
        check 'l["errors"] == {"token_count_mismatch": 4}'
    done
done

note "an error event inside a 200 stream: stream_error"
fake errorevent
for ep in completions llama; do
    lt --concurrency 2 --requests 4 --stream --endpoint $ep
    check 'l["errors"] == {"stream_error": 4} and "device failure" in l["error_examples"]["stream_error"]'
done

note "text that is not ASCII, cut inside a character, or not UTF-8 at all: the JSON file is valid UTF-8"
fake utf8
for stream in "" --stream; do
    lt --concurrency 2 --requests 8 --max-tokens 3 $stream
    [ "$RC" = 1 ] || fail "utf8$stream: exit status $RC, want 1"
    "$PY" - "$WORK/run.json" "$FK_SOURCE_ROOT/tests/loadtest" "$stream" <<'PYEOF' || fail "utf8$stream: $(cat "$WORK/out")"
import json, sys
sys.argv, path, here, stream = sys.argv[:1], sys.argv[1], sys.argv[2], sys.argv[3]
raw = open(path, "rb").read()
text = raw.decode("utf-8")  # strict: any invalid byte fails the test
d = json.loads(text)
l = d["levels"][0]
sys.path.insert(0, here)
src = open(here + "/fake_server.py").read()
ns = {}
exec(src[src.index("UTF8_429 ="):src.index("def raw_json")], ns)
def fails(want, got):
    print("want %r\ngot  %r" % (want, got), file=sys.stderr)
    sys.exit(1)
ex = l["error_examples"]
def cut(full, m):
    """m is full cut at a character boundary within the 200 bytes kept (at most a 4-byte character, and the NUL of
    an intermediate buffer, short of them)."""
    if not (full.startswith(m) and 195 <= len(m.encode()) <= 200):
        fails(full, m)
# 429: cut before the character that would pass 200 bytes, never inside it
cut(ns["UTF8_429"], ex["http_429"])
# 503: a body that is not JSON, with invalid bytes: each maximal invalid subpart is one U+FFFD
want = ns["UTF8_RAW_503"].decode("utf-8", "replace")
if ex["http_503"] != want:
    fails(want, ex["http_503"])
# 400 or an error event: the multi-byte message, cut at a character (after "error event: " in a stream)
key, prefix = ("stream_error", "error event: ") if stream else ("http_400", "")
cut(prefix + ns["UTF8_400"], ex[key])
# finish_reason: 15 bytes kept, the invalid byte as U+FFFD, cut before the last character that does not fit
want = "l\u00e4nge-\ufffd-" + "\u00e9" * 2
if list(l["finish_reasons"]) != [want] or any(r["finish_reason"] not in (None, want) for r in l["results"]):
    fails(want, l["finish_reasons"])
if d["model"] != "mod\u00e8le-\ufffd":
    fails("mod\u00e8le-\ufffd", d["model"])
if l["errors"] != {"http_429": 2, "http_503": 2, key: 2} or l["ok"] != 2:
    fails("2 of each", l["errors"])
PYEOF
done

note "a server that never answers: every request times out at --timeout, the run ends"
fake hang
lt --concurrency 2 --requests 4 --timeout 1 --stream
[ "$RC" = 1 ] || fail "hang: exit status $RC"
check 'l["errors"] == {"timeout": 4} and all(950 <= r["e2e_ms"] <= 2500 for r in l["results"])'
[ "$MS" -lt 6000 ] || fail "hang: 2 rounds of 1 s timeouts took $MS ms"
note "a server that does not even answer GET /v1/models: exit status 3 after --timeout"
fake silent
lt --timeout 1
[ "$RC" = 3 ] && grep -q "cannot reach the server: GET /v1/models: .*timed out" "$WORK/err" ||
    fail "silent: exit status $RC"
[ "$MS" -lt 4000 ] || fail "silent: took $MS ms"

note "a server that dies after 3 requests: the rest are refused"
fake die --die-after 3
lt --concurrency 1 --requests 7 --max-tokens 4
[ "$RC" = 1 ] || fail "die: exit status $RC"
check 'l["ok"] == 3 and l["errors"] == {"refused": 4}'

note "SIGINT mid-run: sending stops, requests in flight finish within the grace period, partial results, status 130"
fake slow --delay 0.05 # a request of 8 tokens takes ~0.45 s
"$FK_LOADTEST" --url "$URL" --vocab 1000 --concurrency 2 --requests 1000 --max-tokens 8 --stream \
    --json "$WORK/run.json" >"$WORK/out" 2>"$WORK/err" &
pid=$!
sleep 2
start=$(date +%s%N)
kill -INT "$pid"
RC=0
wait "$pid" || RC=$?
MS=$((($(date +%s%N) - start) / 1000000))
[ "$RC" = 130 ] || fail "SIGINT: exit status $RC, want 130"
[ "$MS" -lt 4900 ] || fail "SIGINT: $MS ms to exit with two short requests in flight (grace: 5 s)"
check 'd["interrupted"] and 4 <= l["requests"] <= 12 and l["ok"] == l["requests"] and l["interrupted"] == 0'
check 'l["output_tokens"] == 8 * l["requests"] and l["ttft_ms"]["n"] == l["requests"]'
grep -q "partial" "$WORK/out" || fail "SIGINT: the table row is not marked partial: $(cat "$WORK/out")"
grep -q "stopped by signal 2" "$WORK/err" || fail "SIGINT: no note on stderr: $(cat "$WORK/err")"

note "SIGINT with long requests in flight: cut after the 5 s grace period, counted as interrupted, not as errors"
"$FK_LOADTEST" --url "$URL" --vocab 1000 --concurrency 2 --requests 100 --max-tokens 1000 --stream \
    --json "$WORK/run.json" >"$WORK/out" 2>"$WORK/err" &
pid=$!
sleep 1
start=$(date +%s%N)
kill -INT "$pid"
RC=0
wait "$pid" || RC=$?
MS=$((($(date +%s%N) - start) / 1000000))
[ "$RC" = 130 ] || fail "SIGINT (long): exit status $RC, want 130"
[ "$MS" -ge 4900 ] && [ "$MS" -lt 9000 ] || fail "SIGINT (long): exited after $MS ms, want the 5 s grace period"
check 'd["interrupted"] and l["interrupted"] == 2 and l["requests"] == 0 and l["errors"] == {}'
check 'all(r["error"] == "interrupted" for r in l["results"])'
echo "PASS"
