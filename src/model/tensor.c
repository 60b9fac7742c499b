/* tensor.c: widening checkpoint tensors (F16 / BF16 / F32, little-endian) to fp32. */
#include <string.h>

#include "model/weights.h"

/* IEEE half to float, exact for every input (subnormals, infinities and NaN payloads included). */
static float f16_to_f32(uint16_t h) {
  uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1fu;
  uint32_t mant = h & 0x3ffu;
  uint32_t bits;
  if (exp == 0x1f) {
    bits = sign | 0x7f800000u | (mant << 13);
  } else if (exp != 0) {
    bits = sign | ((exp + 112u) << 23) | (mant << 13);
  } else if (mant == 0) {
    bits = sign;
  } else {
    /* Subnormal half: normalise the mantissa; the value is mant * 2^-24. */
    uint32_t e = 113;
    while (!(mant & 0x400u)) {
      mant <<= 1;
      e--;
    }
    bits = sign | (e << 23) | ((mant & 0x3ffu) << 13);
  }
  float f;
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
