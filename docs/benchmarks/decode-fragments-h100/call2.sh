#!/bin/sh
# call 2: register-fragment decode attention prototype against the shipped kernel's configs
nvcc -O3 -std=c++17 -arch=sm_90a -Ikernels -Iinclude -o /tmp/de .peers/exp/decode_exp.cu kernels/pdl.cu || exit 1
/tmp/de 129 256 256 | tee $OUT/mixed.txt
/tmp/de 256 256 256 | tee $OUT/u256.txt
/tmp/de 129 256 64 | tee $OUT/mixed64.txt
/tmp/de 1000 1100 64 | tee $OUT/mixed64-1k.txt
