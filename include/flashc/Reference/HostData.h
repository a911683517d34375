//===- HostData.h - half-precision values on the host -----------*- C++ -*-===//
//
// flash-run and the CPU numerics test keep inputs on the host as the exact
// values the kernel sees (after rounding to bf16/f16), stored as doubles for
// the reference.
//
//===----------------------------------------------------------------------===//

#ifndef FLASHC_REFERENCE_HOSTDATA_H
#define FLASHC_REFERENCE_HOSTDATA_H

#include "flashc/Runtime/KernelMetadata.h"

#include <cstdint>
#include <random>
#include <vector>

namespace flashc::ref {

/// Rounds a float to bf16/f16 bits (round to nearest even).
uint16_t floatToHalfBits(float x, flashc::rt::DType dtype);
/// Widens bf16/f16 bits to float.
float halfBitsToFloat(uint16_t bits, flashc::rt::DType dtype);

/// NaN bit pattern of bf16/f16, used to poison outputs.
uint16_t halfNaNBits(flashc::rt::DType dtype);

/// One input element as every GPU check draws it (flash-run, flash-tune):
/// uniform(-1, 1), never exactly 0, times 1000 on a hard query row so its
/// logits reach ~1e3, rounded to `dtype`.
uint16_t drawInputBits(std::mt19937_64 &rng, flashc::rt::DType dtype,
                       bool hardRow);
/// The hard query rows: every 16th, starting at row 3.
inline bool isHardQueryRow(int64_t row) { return row % 16 == 3; }

/// Element (b, h, n, d) offset in a tensor of the given strides.
inline int64_t offsetOf(const int64_t strides[4], int64_t b, int64_t h,
                        int64_t n, int64_t d) {
  return b * strides[0] + h * strides[1] + n * strides[2] + d * strides[3];
}

} // namespace flashc::ref

#endif // FLASHC_REFERENCE_HOSTDATA_H
