#!/bin/bash
# build_steps.sh — deploy/Dockerfile's recipe on this machine, which has no Docker engine: runs the calls of
# deploy/docker-build-steps.sh that the Dockerfile makes, in order, with the build context mapped to the source tree
# and the image's other paths into a temporary directory (tests/deploy/dockerfile.py). Then checks what the image
# would hold: the binaries need no library beyond what runtime-deps installs, the CUDA runtime image's and the
# base system's; and the image's ENTRYPOINT, CMD and ENV serve the demo model (on the CPU here) under tini, pass
# its HEALTHCHECK, answer as `flashkernel generate` does, and drain on SIGTERM as `docker stop` sends it.
# shellcheck source-path=SCRIPTDIR
. "$(dirname "$0")/lib.sh"

ROOT=$WORK/image

# image_flag NAME: the value the image's ENTRYPOINT + CMD give the server's flag NAME (the last one wins).
image_flag() {
    jq -r --arg f "$1" '(.entrypoint + .cmd) as $a | [range(0; $a | length) | select($a[.] == $f)] | last as $i |
        $a[$i + 1]' "$WORK/plan.json"
}
"$FK_PYTHON" "$FK_SOURCE_ROOT/tests/deploy/dockerfile.py" plan "$FK_SOURCE_ROOT/deploy/Dockerfile" "$FK_SOURCE_ROOT" \
    "$ROOT" \
    >"$WORK/plan.json" || fail "tests/deploy/dockerfile.py could not read deploy/Dockerfile"
steps=$(jq '.steps | length' "$WORK/plan.json")
[ "$steps" -ge 3 ] || fail "deploy/Dockerfile calls docker-build-steps.sh $steps times"

note "the Dockerfile's $steps build steps"
for i in $(seq 0 $((steps - 1))); do
    mapfile -t step < <(jq -r ".steps[$i].argv[]" "$WORK/plan.json")
    echo "step $((i + 1)): ${step[*]}"
    start=$(now)
    "${step[@]}" >"$WORK/step$i.log" 2>&1 || { tail -n 40 "$WORK/step$i.log" >&2; fail "step $((i + 1)) failed"; }
    echo "  done in $(elapsed "$start") s"
done

mapfile -t entry < <(jq -r '.entrypoint[]' "$WORK/plan.json")
mapfile -t cmd < <(jq -r '.cmd[]' "$WORK/plan.json")
bin=$(dirname "$(jq -r '.entrypoint[] | select(endswith("/flashkernel-server"))' "$WORK/plan.json")")
for exe in flashkernel-server flashkernel flashkernel-loadtest; do
    [ -x "$bin/$exe" ] || fail "the build step did not install $exe into $bin"
done
model=$(jq -r '.env.FLASHKERNEL_MODEL' "$WORK/plan.json")
[ -f "$model/config.json" ] || fail "no model at /models (here $model)"

note "the binaries load only the runtime image's libraries"
read -r -a runtime < <("$FK_SOURCE_ROOT/deploy/docker-build-steps.sh" packages runtime)
for exe in "$bin"/*; do
    checked=0
    for lib in $(readelf -d "$exe" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p'); do
        case "$lib" in
        # In the nvidia/cuda runtime image.
        libcudart.so.* | libcublas.so.* | libcublasLt.so.*) continue ;;
        esac
        path=$(ldd "$exe" | awk -v l="$lib" '$1 == l { print $3 }')
        [ -n "$path" ] || fail "$exe: $lib not found"
        # dpkg knows a library by the path its package ships: /lib/... or /usr/lib/... (merged /usr).
        pkg=""
        for p in "$path" "$(realpath "$path")"; do
            [ -z "$pkg" ] && pkg=$(dpkg -S "$p" 2>/dev/null | head -n 1 | cut -d: -f1)
        done
        [ -n "$pkg" ] || fail "$exe: $lib ($path) belongs to no package"
        case " ${runtime[*]} libc6 libgcc-s1 libstdc++6 " in
        # libc6, libgcc-s1 and libstdc++6 are in every Ubuntu image.
        *" $pkg "*) checked=$((checked + 1)) ;;
        *) fail "$exe needs $lib from $pkg, which docker-build-steps.sh runtime-deps does not install" ;;
        esac
    done
    [ "$checked" -ge 3 ] || fail "$exe: only $checked libraries checked"
done

note "ENTRYPOINT + CMD + ENV: ${entry[*]} ${cmd[*]}"
# The image's command as it is, only listening on a free port of 127.0.0.1 instead of 0.0.0.0:8080 (later flags
# win); --device is auto, so the CPU here.
LOG=$WORK/image.log
env "FLASHKERNEL_MODEL=$model" "${entry[@]}" "${cmd[@]}" --host 127.0.0.1 --port 0 >"$LOG" 2>&1 &
SERVER_PID=$!
wait_listening
health=$(jq -r .healthcheck "$WORK/plan.json")
port=$(image_flag --port)
case "$health" in
*"127.0.0.1:$port/"*) health=${health//127.0.0.1:$port\//127.0.0.1:$PORT/} ;;
*) fail "the HEALTHCHECK does not request 127.0.0.1:$port: $health" ;;
esac
for i in $(seq 1 600); do
    sh -c "$health" 2>/dev/null && break
    sleep 0.1
done
sh -c "$health" || fail "the HEALTHCHECK fails: $health"
grep -qF "model $model " "$LOG" || fail "the server did not load the model at /models ($model)"

note "answers like flashkernel generate"
expect_generation "a request to the image's server"
expect_generation "a /v1/completions request to the image's server" /v1/completions

note "docker stop: SIGTERM to tini drains the server; the HEALTHCHECK fails meanwhile"
timeout=$(image_flag --shutdown-timeout)
prompt=$(random_prompt)
reference "$prompt" 800 --ignore-eos | jq -j .text >"$WORK/ref.txt"
body=$(jq -nc --arg p "$prompt" '{prompt: $p, max_tokens: 800, ignore_eos: true, stream: true}')
curl -sSN "$BASE/generate" -d "$body" >"$WORK/stream.txt" &
stream=$!
for i in $(seq 1 200); do
    grep -q '"token"' "$WORK/stream.txt" 2>/dev/null && break
    sleep 0.05
done
kill -0 "$stream" 2>/dev/null || fail "the stream ended before SIGTERM: make it longer"
kill -TERM "$SERVER_PID"
start=$(now)
if sh -c "$health" 2>/dev/null; then
    fail "the HEALTHCHECK passes while the server drains"
fi
kill -0 "$stream" 2>/dev/null || fail "the stream ended before the HEALTHCHECK ran: make it longer"
wait "$stream"
tail -n 2 "$WORK/stream.txt" | grep -qx 'data: \[DONE\]' || fail "the stream did not end with [DONE]"
sse_text "$WORK/stream.txt" | cmp -s - "$WORK/ref.txt" || fail "the drained stream differs from flashkernel generate"
wait_exit $((timeout + 3))
[ "$EXIT_CODE" = 0 ] || fail "tini exited with status $EXIT_CODE after SIGTERM"
echo "drained and exited 0 in $(elapsed "$start") s (--shutdown-timeout $timeout)"
note "ok"
