/* quant.h — weight-only quantization at load time and its inverse, on host memory (pure C: the backends store and
 * upload what it makes). Round to nearest; every scale is the smallest fp16 at least as large as the range asks,
 * so every weight comes back within half a step (scale / 2) of its value, and a zero row or group comes back 0.
 *
 * Layouts of a [rows][cols] weight (= [out][in]), chosen for kernels/linear_quant.cu (docs/ARCHITECTURE.md draws
 * one tile):
 * - INT8: data int8 [rows][cols], q = round(w / s) in [-127, 127]; scales fp16 [rows], s = max |w| / 127 of the row.
 *   w' = q s.
 * - INT4: per group of QUANT_GROUP inputs, lo = min(0, min w), hi = max(0, max w) (the range holds 0, so that an
 *   integer zero point in [0, 15] always exists), s = (hi - lo) / 15, z = round(-lo / s), q = round(w / s) + z in
 *   [0, 15]; w' = (q - z) s. data: [rows][cols / 2] bytes, each little-endian 32-bit word holding 8 consecutive
 *   inputs e = 0..7 at nibble e / 2 (e even) or 4 + e / 2 (e odd), so that (word >> 4 i) & 0x000f000f is the pair
 *   (q[2i], q[2i + 1]) in the two halves; scales: fp16 pairs (s, z) [rows][cols / QUANT_GROUP]. */
#ifndef FK_QUANT_H
#define FK_QUANT_H

#include <stddef.h>
#include <stdint.h>

#include "flashkernel.h"

#define QUANT_GROUP 128

/* Bytes of the packed values and of the scales (0 for FK_QUANT_NONE). */
size_t quant_data_bytes(fk_quantization f, int rows, int cols);
size_t quant_scale_bytes(fk_quantization f, int rows, int cols);

/* FK_ERR_UNSUPPORTED when format f cannot hold a weight of cols inputs (INT4: cols not a multiple of QUANT_GROUP);
 * the message names the size, the caller adds the tensor. */
fk_status quant_check(fk_quantization f, int cols, fk_error *err);

/* Quantizes w[rows][cols] (f INT8 or INT4, quant_check passed) into data and scales of the sizes above. */
void quant_pack(fk_quantization f, const float *w, int rows, int cols, void *data, uint16_t *scales);

/* Rows r0 .. r0 + n - 1 of a packed weight, dequantized: out[n][cols] = w' in float32 (exact: an integer of at
 * most 8 bits times an fp16 scale). */
void quant_unpack_rows(fk_quantization f, const void *data, const uint16_t *scales, int cols, int r0, int n,
                       float *out);

#endif
