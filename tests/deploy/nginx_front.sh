#!/bin/bash
# nginx_front.sh — deploy/nginx.conf for real: Debian's nginx (its pid, logs and temporary files in a temporary
# directory, on a free port) in front of two CPU flashkernel-servers on 127.0.0.1, as compose.yaml puts it in front
# of one server per GPU. Requests and a stream go through with the text `flashkernel generate` makes, the stream's
# events as they are made, not at its end; a server that drains (SIGTERM, as docker stop sends it) finishes its
# stream while the other takes the new requests; a server killed during a request has that request answered by the
# other, and the requests after it keep succeeding.
# shellcheck source-path=SCRIPTDIR
. "$(dirname "$0")/lib.sh"

NGINX=$(command -v nginx || echo /usr/sbin/nginx) # /usr/sbin is not on every user's PATH
[ -x "$NGINX" ] || fail "nginx is not installed (deploy/install-deps.sh installs it)"
CONF=$FK_SOURCE_ROOT/deploy/nginx.conf

# start_nginx NAME PORT_A PORT_B: deploy/nginx.conf with its two upstream servers replaced by 127.0.0.1:PORT_A and
# :PORT_B, listening on a free port of 127.0.0.1, its files in $WORK/NAME; checked with nginx -t, then started in
# the foreground. Sets NGINX_PID and BASE.
start_nginx() {
    local dir=$WORK/$1 port
    mkdir -p "$dir"
    if [ "$(grep -cE '^ *(server fk-gpu[01]:8080 |listen 8080;)|^http \{' "$CONF")" != 4 ]; then
        fail "deploy/nginx.conf no longer has the lines this test rewrites (server fk-gpu0/1:8080, listen 8080, http {)"
    fi
    port=$(free_port)
    # Only for the test: nginx's temporary files here, and a log of the upstream answers to each request.
    cat >"$dir/test.conf" <<EOF
    client_body_temp_path $dir/body;
    proxy_temp_path $dir/proxy;
    fastcgi_temp_path $dir/fastcgi;
    uwsgi_temp_path $dir/uwsgi;
    scgi_temp_path $dir/scgi;
    log_format upstream '\$request_uri \$status [\$upstream_status]';
    access_log $dir/upstream.log upstream;
EOF
    sed -e "s/server fk-gpu0:8080 /server 127.0.0.1:$2 /" -e "s/server fk-gpu1:8080 /server 127.0.0.1:$3 /" \
        -e "s/listen 8080;/listen 127.0.0.1:$port;/" -e "/^http {/r $dir/test.conf" "$CONF" >"$dir/nginx.conf"
    UPSTREAM_LOG=$dir/upstream.log
    local args=(-p "$dir/" -c "$dir/nginx.conf" -e "$dir/error.log" -g "daemon off; pid $dir/nginx.pid;")
    "$NGINX" -t "${args[@]}" >"$dir/t.log" 2>&1 || { cat "$dir/t.log" >&2; fail "nginx -t rejects the configuration"; }
    grep -q "test is successful" "$dir/t.log" || fail "nginx -t: $(cat "$dir/t.log")"
    spawn "$dir/nginx.log" "$NGINX" "${args[@]}"
    NGINX_PID=$SPAWNED
    BASE="http://127.0.0.1:$port"
    LOG=$dir/nginx.log
    healthy "$BASE" 30
}

# A pair of servers: URLS (their base URLs), SPIDS (their pids).
start_pair() {
    URLS=()
    SPIDS=()
    local name
    for name in "$1-a" "$1-b"; do
        start_cpu_server "$name" --shutdown-timeout 60
        URLS+=("http://127.0.0.1:$PORT")
        SPIDS+=("$SPAWNED")
    done
}

note "requests through nginx: the text of flashkernel generate; both servers get some"
start_pair p1
start_nginx nginx1 "${URLS[0]##*:}" "${URLS[1]##*:}"
for k in 1 2 3 4 5; do
    expect_generation "request $k"
done
expect_generation "a /v1/completions request" /v1/completions
for k in 0 1; do
    n=$(metric_at "${URLS[$k]}" vllm:request_success_total)
    [ "$n" -ge 1 ] || fail "server $k got none of the 6 requests (least_conn should spread them)"
done

note "a stream through nginx: events arrive as they are made"
prompt=$(random_prompt)
reference "$prompt" 400 --ignore-eos | jq -j .text >"$WORK/ref.txt"
"$FK_PYTHON" "$FK_SOURCE_ROOT/tests/deploy/sse_times.py" "$BASE/generate" \
    "$(jq -nc --arg p "$prompt" '{prompt: $p, max_tokens: 400, ignore_eos: true, stream: true}')" >"$WORK/s.json"
jq -e '.status == 200 and .done and .final.finish_reason == "length" and (.times | length) == 402' "$WORK/s.json" \
    >/dev/null || fail "stream: $(jq -c 'del(.times, .text)' "$WORK/s.json")"
jq -j .text "$WORK/s.json" | cmp -s - "$WORK/ref.txt" || fail "the stream's text differs from flashkernel generate"
first=$(jq '.times[0]' "$WORK/s.json")
last=$(jq '.times[-1]' "$WORK/s.json")
echo "first event after $first s, [DONE] after $last s"
less 0.3 "$last" || fail "the stream took only $last s: too short to tell streaming from buffering"
# Buffered by nginx, the first event would come with the first few kilobytes (~100 events) or at the end.
less "$first" "$(awk -v l="$last" 'BEGIN { print l / 10 }')" ||
    fail "the first event came after $first s of $last s: nginx buffers the stream"

note "SIGTERM to a server running a stream: the stream finishes; new requests go to the other"
# A stream on each server, so that least_conn sends new requests to both, and those sent to the draining one get
# 503 and go to the other (proxy_next_upstream http_503). They are prepared first: the drain lasts only as long as
# the stream.
for k in 1 2 3 4 5 6; do
    prepare "$k"
done
for s in 0 1; do
    prompts[s]=$(random_prompt)
    reference "${prompts[s]}" 1500 --ignore-eos | jq -j .text >"$WORK/ref$s.txt"
done
for s in 0 1; do
    "$FK_PYTHON" "$FK_SOURCE_ROOT/tests/deploy/sse_times.py" "$BASE/generate" \
        "$(jq -nc --arg p "${prompts[s]}" '{prompt: $p, max_tokens: 1500, ignore_eos: true, stream: true}')" \
        >"$WORK/long$s.json" &
    long[s]=$!
    # The second stream starts once the first runs: least_conn then sends it to the other server.
    [ "$s" = 0 ] && running_on "${URLS[@]}" >/dev/null
done
for i in $(seq 1 200); do
    [ "$(metric_at "${URLS[0]}" vllm:num_requests_running)" = 1 ] &&
        [ "$(metric_at "${URLS[1]}" vllm:num_requests_running)" = 1 ] && break
    sleep 0.05
done
[ "$i" -lt 200 ] || fail "the two streams do not run on the two servers"
kill -TERM "${SPIDS[0]}"
http /health
[ "$STATUS" = 200 ] || fail "/health through nginx with one server draining: $STATUS $BODY"
# least_conn sees one request on each server and takes them in turn: within two requests one meets the 503.
for k in 1 2 3 4 5 6; do
    send "$k" "request $k while server 0 drains"
    grep -q '^/generate 200 \[503, ' "$UPSTREAM_LOG" && break
done
grep -q '^/generate 200 \[503, ' "$UPSTREAM_LOG" ||
    fail "no request met the draining server's 503 (upstream answers: $(tail -n 8 "$UPSTREAM_LOG" | paste -sd ' '))"
kill -0 "${SPIDS[0]}" 2>/dev/null ||
    fail "server 0 exited before the requests were done: the drain was not covered (make the streams longer)"
for s in 0 1; do
    wait "${long[s]}"
    jq -e '.status == 200 and .done and .final.finish_reason == "length"' "$WORK/long$s.json" >/dev/null ||
        fail "the stream on server $s: $(jq -c 'del(.times, .text)' "$WORK/long$s.json")"
    jq -j .text "$WORK/long$s.json" | cmp -s - "$WORK/ref$s.txt" ||
        fail "the stream on server $s differs from flashkernel generate"
done
code=0
wait "${SPIDS[0]}" || code=$?
[ "$code" = 0 ] || fail "the drained server exited with status $code"
for k in 1 2 3; do
    expect_generation "request $k after server 0 left"
done
kill -QUIT "$NGINX_PID"
wait "$NGINX_PID" || fail "nginx did not stop cleanly"

note "SIGKILL to the server running a request: nginx sends it to the other; the next requests go there"
start_pair p2
start_nginx nginx2 "${URLS[0]##*:}" "${URLS[1]##*:}"
prompt=$(random_prompt)
reference "$prompt" 800 --ignore-eos | jq -j .text >"$WORK/ref.txt"
curl -sS -o "$WORK/killed.json" -w '%{http_code}' "$BASE/generate" \
    -d "$(jq -nc --arg p "$prompt" '{prompt: $p, max_tokens: 800, ignore_eos: true}')" >"$WORK/killed.status" &
req=$!
x=$(running_on "${URLS[@]}")
y=$((1 - x))
before=$(metric_at "${URLS[$y]}" vllm:request_success_total)
kill -KILL "${SPIDS[$x]}"
wait "${SPIDS[$x]}" 2>/dev/null || true
wait "$req" || fail "curl failed on the request whose server was killed"
[ "$(cat "$WORK/killed.status")" = 200 ] ||
    fail "the request whose server was killed: status $(cat "$WORK/killed.status"): $(cat "$WORK/killed.json")"
jq -j .text "$WORK/killed.json" | cmp -s - "$WORK/ref.txt" ||
    fail "the request whose server was killed differs from flashkernel generate"
[ "$(metric_at "${URLS[$y]}" vllm:request_success_total)" = $((before + 1)) ] ||
    fail "server $y did not answer the request that server $x was running"
for k in 1 2 3 4 5 6; do
    expect_generation "request $k after server $x was killed"
done
# SIGQUIT, not the exit trap's SIGKILL: killing the master leaves its workers running, holding the port.
kill -QUIT "$NGINX_PID"
wait "$NGINX_PID" || fail "nginx did not stop cleanly"
note "ok"
