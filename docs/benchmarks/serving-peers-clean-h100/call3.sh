#!/bin/bash
# Thirteenth session, call 3 (call 1's machine, right after call 2): looked for call 2's serving-peers.tgz and plots
# (not found: each call's $OUT is new), then bench-8b (made in call 1's background) served by flashkernel-server and
# llama-server through the same load tester: run-on-device.sh serving-8b (closed loop, one request per client,
# 1/16/64/256 clients at 128/128 and 1/16/64 at 1,024/256, llama-server's /v1/completions). The command as run:
f=$(find / -xdev -name serving-peers.tgz -mmin -30 2>/dev/null | head -1); echo "found: $f"
if [ -n "$f" ]; then d=$(dirname $f); cp $d/serving-peers.tgz $d/serving-peers.png $d/serving-peers-rates.png $d/summary.txt $OUT/ 2>&1; fi
ls -la $OUT; cat /tmp/b8b-done
(timeout 470 env FK_STEPS=closed OUT=/tmp/s8 sh tests/gpu/run-on-device.sh serving-8b > /tmp/s8.log 2>&1; echo "rc $?" >> /tmp/s8.log)
tail -5 /tmp/s8.log; cd /tmp && tar czf $OUT/s8.tgz s8 s8.log fk-logs 2>/dev/null; ls -la $OUT
