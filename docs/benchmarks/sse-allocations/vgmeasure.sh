#!/bin/bash
# vgmeasure.sh SERVER LABEL: heap allocations of flashkernel-server (CPU backend, demo model) under valgrind for one
# streamed completion of N tokens, N = 8 and 72, each in a fresh server; prints the allocation totals.
S=$1; lab=$2; port=$3
for n in 8 72; do
  valgrind --tool=memcheck --leak-check=no $S --model deploy/demo-model --port $port --device cpu --threads 2 --kv-cache-mb 64 >/tmp/vg-$lab-$n.log 2>&1 &
  pid=$!
  for i in $(seq 1 300); do [ "$(curl -s -o /dev/null -w '%{http_code}' http://127.0.0.1:$port/health)" = 200 ] && break; sleep 1; done
  curl -sN http://127.0.0.1:$port/v1/completions -H 'Content-Type: application/json' -d "{\"prompt\":\"Hello there\",\"max_tokens\":$n,\"stream\":true,\"ignore_eos\":true}" >/tmp/vg-$lab-$n.out
  curl -sN http://127.0.0.1:$port/v1/chat/completions -H 'Content-Type: application/json' -d "{\"messages\":[{\"role\":\"user\",\"content\":\"Hi\"}],\"max_tokens\":$n,\"stream\":true,\"ignore_eos\":true}" >>/tmp/vg-$lab-$n.out
  kill -TERM $pid; wait $pid
  echo "$lab n=$n: $(grep -c '^data: {' /tmp/vg-$lab-$n.out) events; $(grep 'total heap usage' /tmp/vg-$lab-$n.log | sed 's/.*total heap usage: //')"
done
