#!/bin/bash
# Eleventh session, call 11: the experiment's split-pair variants (several warps a pair, merged in shared memory) at
# 64 and 96 sequences, against the shipped staged kernel (w4s2) and the fragments kernel's one warp a pair (r1d1).
nvcc -O3 -std=c++17 -arch=sm_90a -Ikernels -Iinclude -o /tmp/de .peers/exp/decode_exp.cu kernels/pdl.cu kernels/attention_decode_fragments.cu || exit 3
for a in "129 256 64" "129 256 96" "1000 1100 64"; do for c in w4s2 r1d1 r4d1 r8d1 r8d2 r4d2n4 r8d1m2; do
  /tmp/de $a $c | grep -E "^[rw][0-9]" | sed "s/^/$a /"; done; done
