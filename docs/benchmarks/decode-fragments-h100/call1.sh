#!/bin/sh
# call 1: decode attention configs at bench-1b's 256-request shape; ncu of w4s2 and w2s4
set -x
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
nvcc -O3 -std=c++17 -arch=sm_90a -Ikernels -Iinclude -o /tmp/de .peers/exp/decode_exp.cu kernels/pdl.cu || exit 1
/tmp/de 129 256 256 | tee $OUT/mixed.txt
/tmp/de 256 256 256 | tee $OUT/u256.txt
/tmp/de 129 129 256 | tee $OUT/u129.txt
/tmp/de 129 256 64 | tee $OUT/mixed64.txt
for c in w4s2 w2s4; do
ncu --clock-control none -k regex:decode_split --launch-skip 5 --launch-count 1 --section SpeedOfLight --section Occupancy --section LaunchStats --section WarpStateStats --section MemoryWorkloadAnalysis --section SchedulerStats /tmp/de 129 256 256 $c > $OUT/ncu-$c.txt 2>&1
grep -E "Duration|Throughput|Achieved Occupancy|Theoretical Occupancy|Registers|Block Limit|Stall|Issued|Eligible|L2 Hit|Mem Busy|Max Bandwidth|Warp Cycles" $OUT/ncu-$c.txt
done
