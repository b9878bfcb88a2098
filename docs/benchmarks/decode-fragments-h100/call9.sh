#!/bin/bash
# Eleventh session, calls 7-9 (call 5's machine, /tmp/fk-native at b7edf05): flashkernel-server on bench-1b-ascii,
# closed loop 64/128/256 clients at 128/128 and 64 at 1,024/256 (loadtest/run-peer-benchmark.sh, flashkernel only),
# the shared-memory decode kernel (FK_DECODE_FRAGMENTS=0, "staged") against the default ("auto"), alternated twice
# (call 9; call 7 ran the same loop but its tables did not come back except auto round 1, kept as call7-*).
export LD_LIBRARY_PATH=/tmp/fk-deps/usr/lib/x86_64-linux-gnu; L=/tmp/l8; rm -rf $L; mkdir -p $L
for i in 1 2; do for v in staged auto; do
  if [ $v = staged ]; then export FK_DECODE_FRAGMENTS=0; else unset FK_DECODE_FRAGMENTS; fi
  FK_SERVERS=flashkernel FK_STEPS=closed FK_CONCURRENCY="64 128 256" FK_LONG_CONCURRENCY="64" timeout 240 \
    loadtest/run-peer-benchmark.sh /tmp/fk-native/server/flashkernel-server /tmp/fk-native/loadtest/flashkernel-loadtest \
    /bin/false /tmp/bench-1b-ascii /dev/null $L/serving-$v-$i >$L/serving-$v-$i.log 2>&1
  echo "== $v $i rc $?"; grep -E "^ +(64|128|256) " $L/serving-$v-$i/benchmark.txt
done; done
tar czf $OUT/l8.tgz -C /tmp l8
