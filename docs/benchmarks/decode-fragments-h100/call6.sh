#!/bin/bash
# Eleventh session, call 6 (on call 5's machine, its build /tmp/fk-native at b7edf05 and /tmp/bench-1b): bench-engine
# fp16 at 256, 192 and 128 requests, the shared-memory decode kernel everywhere (FK_DECODE_FRAGMENTS=0) against the
# default (the fragments kernel from 7 x SMs pairs), alternated twice; then --profile of each at 256 requests.
export LD_LIBRARY_PATH=/tmp/fk-deps/usr/lib/x86_64-linux-gnu; ls /tmp/bench-1b >/dev/null || exit 3; L=$OUT/l6; mkdir -p $L
run() { lab=$1; shift; timeout 150 /tmp/fk-native/tools/flashkernel bench-engine --model /tmp/bench-1b --device cuda \
  --max-tokens 128 --max-model-len 4096 --prompt-len 128 "$@" >$L/$lab.log 2>&1; echo "$lab: $(grep -E 'output tokens/s' $L/$lab.log)"; }
for i in 1 2; do for r in 256 192 128; do FK_DECODE_FRAGMENTS=0 run staged-r$r-$i --requests $r --warmup $r; run auto-r$r-$i --requests $r --warmup $r; done; done
FK_DECODE_FRAGMENTS=0 run staged-r256-profile --requests 256 --warmup 256 --profile; run auto-r256-profile --requests 256 --warmup 256 --profile
for f in staged auto; do sed -n '/profile: decode/,/host/p' $L/$f-r256-profile.log; done
