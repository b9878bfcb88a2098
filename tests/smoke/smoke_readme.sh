#!/bin/bash
# smoke_readme.sh — the README's curl examples run as written (against a server started with its defaults but on a
# free port) and print what the README shows, up to the values that vary from run to run: times, dates and request
# ids.
. "$(dirname "$0")/lib.sh"

# mask: the varying values replaced by placeholders.
mask() {
    sed -E 's/"(queue_ms|prefill_ms|decode_ms|ttft_ms|tokens_per_s|created)":[0-9.e+-]+/"\1":N/g;
            s/"id":"(gen|cmpl|chatcmpl)-[0-9]+"/"id":"\1-N"/g'
}

# Every "$ curl ..." line of the README with the lines it shows after it (up to the next "$ " line or the end of the
# code block): $WORK/cmdN and $WORK/wantN.
awk -v dir="$WORK" '
    /^```/ { inblock = !inblock; cmd = ""; next }
    inblock && /^\$ curl / { n++; cmd = dir "/cmd" n; want = dir "/want" n; print substr($0, 3) > cmd; printf "" > want; next }
    inblock && /^\$ / { cmd = ""; next }
    inblock && cmd != "" { print > want }
' "$FK_SOURCE_ROOT/README.md"
count=$(ls "$WORK"/cmd* 2>/dev/null | wc -l)
[ "$count" -ge 10 ] || fail "found only $count curl examples in README.md"

start_server readme
for i in $(seq 1 "$count"); do
    cmd=$(sed "s#localhost:8080#127.0.0.1:$PORT#g" "$WORK/cmd$i")
    note "$(cat "$WORK/cmd$i")"
    bash -c "$cmd" >"$WORK/got$i" 2>"$WORK/err$i" || fail "the command failed: $(cat "$WORK/err$i")"
    [ -z "$(tail -c 1 "$WORK/got$i")" ] || echo >>"$WORK/got$i" # the README shows a response on its own line
    mask <"$WORK/got$i" >"$WORK/got$i.masked"
    mask <"$WORK/want$i" >"$WORK/want$i.masked"
    diff "$WORK/want$i.masked" "$WORK/got$i.masked" >"$WORK/diff$i" ||
        fail "README example $i prints something else:
$(cat "$WORK/diff$i")"
done
stop_server
echo "smoke_readme: ok ($count examples)"
