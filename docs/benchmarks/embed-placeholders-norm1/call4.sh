#!/bin/bash
# Twenty-first session, call 4 (the final tree): the gpu suite as compute_75 PTX; compute-sanitizer memcheck and
# racecheck on the embedding op tests natively, memcheck on the overlapped-steps engine test.
set -u
T0=$(date +%s)
S=$OUT/summary4.txt; L=$OUT/l4; mkdir -p $L
note() { echo "[$(( $(date +%s) - T0 ))s] $*" | tee -a $S; }
note "device: $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader); tree $(cat .peers/commit) + working tree"
deploy/offline-deps.sh unpack .deps /tmp/fk-deps >/dev/null
export LD_LIBRARY_PATH=/tmp/fk-deps/usr/lib/x86_64-linux-gnu
bld() { # dir arch src cuda_args targets...
  local d=$1 arch=$2 src=$3 ca=$4; shift 4
  rm -rf $d; (cd $src && meson setup $d -Ddep_prefix=/tmp/fk-deps -Dcuda=enabled -Dcuda-arch=$arch "-Dcuda_args=$ca" >/dev/null 2>&1) &&
  ninja -C $d -j8 "$@" >$L/build-$(basename $d).log 2>&1; echo "$(basename $d): $(tail -1 $L/build-$(basename $d).log)"
}
bld /tmp/fk-new sm_90a . "" tests/gpu/test_gpu_ops tests/gpu/test_engine_cuda > $L/b1.txt &
bld /tmp/fk-new75 compute_75 . "" > $L/b2.txt &
wait
note "builds: $(cat $L/b?.txt | tr '\n' ' ')"
timeout 300 meson test -C /tmp/fk-new75 --no-rebuild --suite gpu --print-errorlogs > $L/test-75.log 2>&1; echo "rc $?" >> $L/test-75.log
cp /tmp/fk-new75/meson-logs/testlog.txt $L/testlog-75.txt
note "gpu suite compute_75: $(grep -E '^(Ok|Fail|Skipped|Timeout):|^rc' $L/test-75.log | tr -s ' ' | tr '\n' ' ')"
san() { # label tool binary filter [env...]
  local label=$1 tool=$2 bin=$3 filter=$4; shift 4
  env FK_TEST_FILTER="$filter" FK_TEST_UNDER_SANITIZER=1 "$@" timeout 150 compute-sanitizer --tool $tool $bin > $L/san-$label.log 2>&1
  note "$tool $label: rc $? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|PASSED|FAILED  \] [0-9]' $L/san-$label.log | tr -s ' ' | tr '\n' ' ')"
}
san embed memcheck /tmp/fk-new/tests/gpu/test_gpu_ops 'test_embed*'
san elementwise memcheck /tmp/fk-new/tests/gpu/test_gpu_ops test_elementwise
san embed racecheck /tmp/fk-new/tests/gpu/test_gpu_ops 'test_embed*'
san overlapped memcheck /tmp/fk-new/tests/gpu/test_engine_cuda test_overlapped_steps_equal_sync FK_TEST_DEVICE=cuda
tar czf $OUT/l4.tgz -C $OUT l4 && rm -rf $L
note done
