#!/bin/bash
# Twenty-first session, call 2: call 1's engine_cuda_sync failure (test_profile_accounts_every_step, unspecified
# launch failure, seed 1524617899697976263): the test alone and the whole binary with that seed, on new and on
# HEAD (base), compute-sanitizer on new; then fresh seeds; then the gpu suite as compute_75 PTX on new.
set -u
T0=$(date +%s)
S=$OUT/summary2.txt; L=$OUT/l2; mkdir -p $L
note() { echo "[$(( $(date +%s) - T0 ))s] $*" | tee -a $S; }
note "device: $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader); tree $(cat .peers/commit) + working tree"
deploy/offline-deps.sh unpack .deps /tmp/fk-deps >/dev/null
export LD_LIBRARY_PATH=/tmp/fk-deps/usr/lib/x86_64-linux-gnu
rm -rf /tmp/base-src; mkdir /tmp/base-src; tar cf - --exclude=./.deps --exclude=./.peers . | tar xf - -C /tmp/base-src
cp -r .peers/s21/base/. /tmp/base-src/
# base needs HEAD's tests too (the embed op's old signature)
cp -r .peers/s21/base-tests/. /tmp/base-src/
bld() { # dir arch src cuda_args targets...
  local d=$1 arch=$2 src=$3 ca=$4; shift 4
  rm -rf $d; (cd $src && meson setup $d -Ddep_prefix=/tmp/fk-deps -Dcuda=enabled -Dcuda-arch=$arch "-Dcuda_args=$ca" >/dev/null 2>&1) &&
  ninja -C $d -j5 "$@" >$L/build-$(basename $d).log 2>&1; echo "$(basename $d): $(tail -1 $L/build-$(basename $d).log)"
}
bld /tmp/fk-base sm_90a /tmp/base-src "" > $L/b1.txt &
bld /tmp/fk-new sm_90a . "" > $L/b2.txt &
bld /tmp/fk-new75 compute_75 . "" > $L/b3.txt &
wait
note "builds: $(cat $L/b?.txt | tr '\n' ' ')"
SEED=1524617899697976263
one() { # build label env...
  local b=$1 label=$2; shift 2
  env FK_TEST_DEVICE=cuda OMP_NUM_THREADS=4 OMP_WAIT_POLICY=passive "$@" timeout 300 /tmp/$b/tests/gpu/test_engine_cuda > $L/$b-$label.log 2>&1
  note "$b $label: rc $? $(grep -E 'FAILED  \] [0-9]|PASSED' $L/$b-$label.log | tr -s ' ' | tr '\n' ' ') $(grep -m1 'random seed' $L/$b-$label.log)"
}
cd /tmp/fk-new
for r in 1 2; do
  for b in fk-new fk-base; do
    one $b seed-alone-r$r FK_TEST_SEED=$SEED FK_TEST_ENGINE_SYNC=1 FK_TEST_FILTER=test_profile_accounts_every_step
    one $b seed-all-r$r FK_TEST_SEED=$SEED FK_TEST_ENGINE_SYNC=1
  done
done
env FK_TEST_DEVICE=cuda FK_TEST_SEED=$SEED FK_TEST_ENGINE_SYNC=1 FK_TEST_FILTER=test_profile_accounts_every_step timeout 150 \
  compute-sanitizer --tool memcheck /tmp/fk-new/tests/gpu/test_engine_cuda > $L/memcheck-new.log 2>&1
note "memcheck new, the seed, test alone: rc $? $(grep -E 'ERROR SUMMARY|Invalid|PASSED|FAILED  \] [0-9]' $L/memcheck-new.log | head -5 | tr '\n' ' ')"
for r in 1 2 3; do one fk-new fresh-sync-r$r FK_TEST_ENGINE_SYNC=1; done
one fk-base fresh-sync-r1 FK_TEST_ENGINE_SYNC=1
cd -
if [ $(( $(date +%s) - T0 )) -lt 330 ]; then
timeout $(( 580 - $(date +%s) + T0 )) meson test -C /tmp/fk-new75 --no-rebuild --suite gpu --print-errorlogs > $L/test-75.log 2>&1; echo "rc $?" >> $L/test-75.log
cp /tmp/fk-new75/meson-logs/testlog.txt $L/testlog-75.txt
note "gpu suite compute_75: $(grep -E '^(Ok|Fail|Skipped|Timeout):|^rc' $L/test-75.log | tr -s ' ' | tr '\n' ' ')"
else note "gpu suite compute_75: not run (no time left)"; fi
tar czf $OUT/l2.tgz -C $OUT l2 && rm -rf $L
note done
