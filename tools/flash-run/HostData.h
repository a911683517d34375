//===- HostData.h - Host-side tensors and half-precision conversion -*- C++
//-*-===//
//
// flash-run keeps inputs on the host as the exact values the GPU sees (after
// rounding to bf16/f16), stored as doubles for the reference.
//
//===----------------------------------------------------------------------===//

#ifndef FLASHRUN_HOSTDATA_H
#define FLASHRUN_HOSTDATA_H

#include "flashc/Runtime/KernelMetadata.h"

#include <cstdint>
#include <vector>

namespace flashrun {

/// Rounds a float to bf16/f16 bits (round to nearest even).
uint16_t floatToHalfBits(float x, flashc::rt::DType dtype);
/// Widens bf16/f16 bits to float.
float halfBitsToFloat(uint16_t bits, flashc::rt::DType dtype);

/// NaN bit pattern of bf16/f16, used to poison outputs.
uint16_t halfNaNBits(flashc::rt::DType dtype);

/// Element (b, h, n, d) offset in a tensor of the given strides.
inline int64_t offsetOf(const int64_t strides[4], int64_t b, int64_t h,
                        int64_t n, int64_t d) {
  return b * strides[0] + h * strides[1] + n * strides[2] + d * strides[3];
}

} // namespace flashrun

#endif // FLASHRUN_HOSTDATA_H
