//===- HostData.cpp - Half-precision conversion for flash-run -------------===//
//
// bf16/f16 <-> float on the host, bit-exact with the GPU's _rn conversions.
//
//===----------------------------------------------------------------------===//

#include "flashc/Reference/HostData.h"

#include <cmath>
#include <cstring>

using flashc::rt::DType;

namespace flashc::ref {

static uint32_t bitsOf(float x) {
  uint32_t u;
  std::memcpy(&u, &x, 4);
  return u;
}

static float floatOf(uint32_t u) {
  float x;
  std::memcpy(&x, &u, 4);
  return x;
}

uint16_t floatToHalfBits(float x, DType dtype) {
  uint32_t u = bitsOf(x);
  if (dtype == DType::BF16) {
    if (std::isnan(x))
      return 0x7fc0;
    u += 0x7fff + ((u >> 16) & 1);
    return uint16_t(u >> 16);
  }
  // IEEE half, round to nearest even.
  uint32_t sign = (u >> 16) & 0x8000;
  uint32_t absBits = u & 0x7fffffff;
  if (absBits >= 0x7f800000) // inf or nan
    return uint16_t(sign | 0x7c00 | (absBits > 0x7f800000 ? 0x200 : 0));
  if (absBits >= 0x477ff000) // rounds to >= 65520: overflow
    return uint16_t(sign | 0x7c00);
  if (absBits < 0x38800000) { // subnormal half (or zero)
    float a = floatOf(absBits);
    // Scale to units of 2^-24 and round to nearest even.
    float scaled = a * 16777216.0f;
    uint32_t r = uint32_t(std::nearbyint(scaled));
    return uint16_t(sign | r);
  }
  uint32_t exp = (absBits >> 23) - 127 + 15;
  uint32_t mant = absBits & 0x7fffff;
  uint32_t half = (exp << 10) | (mant >> 13);
  uint32_t rest = mant & 0x1fff;
  if (rest > 0x1000 || (rest == 0x1000 && (half & 1)))
    ++half;
  return uint16_t(sign | half);
}

float halfBitsToFloat(uint16_t bits, DType dtype) {
  if (dtype == DType::BF16)
    return floatOf(uint32_t(bits) << 16);
  uint32_t sign = uint32_t(bits & 0x8000) << 16;
  uint32_t exp = (bits >> 10) & 0x1f, mant = bits & 0x3ff;
  if (exp == 0) {
    float v = std::ldexp(float(mant), -24);
    return sign ? -v : v;
  }
  if (exp == 31)
    return floatOf(sign | 0x7f800000 | (mant << 13));
  return floatOf(sign | ((exp - 15 + 127) << 23) | (mant << 13));
}

uint16_t halfNaNBits(DType dtype) {
  return dtype == DType::BF16 ? 0x7fc0 : 0x7e00;
}

uint16_t drawInputBits(std::mt19937_64 &rng, DType dtype, bool hardRow) {
  float x = std::uniform_real_distribution<float>(-1.f, 1.f)(rng);
  if (x == 0.f)
    x = 0.5f;
  return floatToHalfBits(hardRow ? x * 1000.f : x, dtype);
}

} // namespace flashc::ref
