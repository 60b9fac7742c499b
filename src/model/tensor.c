/* tensor.c: widening checkpoint tensors (F16 / BF16 / F32, little-endian) to fp32. */
#include <string.h>

#include "model/weights.h"

/* IEEE half to float, exact for every input (subnormals, infinities and NaN payloads included),
 * without branches so the loop below vectorises (tests/model/test_safetensors.c checks all 65536
 * inputs against a reference written from the definition): the half's exponent and
 * mantissa placed in a float's low bits and scaled by 2^112 give every finite half exactly
 * (subnormals too: mant * 2^-136 * 2^112 = mant * 2^-24; the product is exact, no FTZ/DAZ in this
 * build), and an all-ones exponent becomes the float's (infinity / NaN, payload kept). */
static inline float f16_to_f32(uint16_t h) {
  uint32_t mag = (uint32_t)(h & 0x7fffu) << 13, sign = (uint32_t)(h & 0x8000u) << 16;
  float f;
  memcpy(&f, &mag, sizeof f);
  f *= 0x1p112f;
  uint32_t bits;
  memcpy(&bits, &f, sizeof bits);
  bits = (h & 0x7c00u) == 0x7c00u ? (mag | 0x7f800000u) : bits;
  bits |= sign;
  memcpy(&f, &bits, sizeof f);
  return f;
}

void tensor_to_f32(const tensor *t, int64_t start, int64_t count, float *out) {
  const unsigned char *p = (const unsigned char *)t->data;
  switch (t->dtype) {
    case DT_F32:
      memcpy(out, p + start * 4, (size_t)count * 4);
      break;
    case DT_F16:
      for (int64_t i = 0; i < count; i++) {
        const unsigned char *q = p + (start + i) * 2;
        out[i] = f16_to_f32((uint16_t)(q[0] | (q[1] << 8)));
      }
      break;
    case DT_BF16:
      for (int64_t i = 0; i < count; i++) {
        const unsigned char *q = p + (start + i) * 2;
        uint32_t bits = (uint32_t)(q[0] | (q[1] << 8)) << 16;
        memcpy(&out[i], &bits, sizeof bits);
      }
      break;
  }
}
