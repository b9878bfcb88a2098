# flashkernel-server closed loop (FK only), after session.sh
mkdir -p $OUT/sv
FK_SERVERS=flashkernel FK_STEPS=closed FK_CONCURRENCY="1 16 64 256" FK_LONG_CONCURRENCY=64 timeout 200 \
  loadtest/run-peer-benchmark.sh /tmp/fk-native/server/flashkernel-server /tmp/fk-native/loadtest/flashkernel-loadtest \
  /bin/false /tmp/bench-1b-ascii /dev/null $OUT/sv >/tmp/fk-logs/serving.log 2>&1
echo "serving rc $?" | tee -a $OUT/summary.txt
grep -E "^\\$|^ *[0-9]+ " $OUT/sv/benchmark.txt | tee -a $OUT/summary.txt
(cd $OUT/sv && tar czf ../serving.tgz --exclude='server-*.log' . && cp benchmark.txt ../serving.txt) ; rm -rf $OUT/sv
tar czf $OUT/logs.tgz -C /tmp/fk-logs .
