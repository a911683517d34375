//===- Problem.cpp - the problem a run launches and its seeded inputs -----===//
//
// Sizes from the command line, dtype and head dim from kernel.json, dense
// strides in the chosen layout; inputs drawn as every GPU check draws them
// (flashc/Reference/HostData.h), kept both as the kernel's bits and as
// doubles for the reference.
//
//===----------------------------------------------------------------------===//

#include "flashc/Reference/HostData.h"
#include "flashc/Run/RunKernel.h"

#include "llvm/Support/FormatVariadic.h"

#include <algorithm>
#include <cassert>

using namespace llvm;
using namespace flashc::rt;

namespace flashc::run {

static void setStrides(int64_t *s, int64_t h, int64_t n, int64_t d, bool bshd) {
  if (bshd) {
    s[0] = n * h * d, s[1] = d, s[2] = h * d, s[3] = 1;
  } else {
    s[0] = h * n * d, s[1] = n * d, s[2] = d, s[3] = 1;
  }
}

Problem Problem::make(const KernelMetadata &meta, const RunShape &shape,
                      Layout layout) {
  Problem p;
  p.dtype = meta.dtype;
  p.b = shape.batch, p.h = shape.heads, p.nq = shape.seqQ;
  p.hkv = shape.kvHeads > 0 ? shape.kvHeads : shape.heads;
  p.nk = shape.seqK < 0 ? shape.seqQ : shape.seqK;
  if (!shape.seqlensQ.empty()) {
    // Every sequence's rows one after another: T x H x D.
    const std::vector<int64_t> &lensK =
        shape.seqlensK.empty() ? shape.seqlensQ : shape.seqlensK;
    assert(lensK.size() == shape.seqlensQ.size() &&
           "one key length per sequence");
    p.cuQ = {0};
    p.cuK = {0};
    for (size_t s = 0; s < shape.seqlensQ.size(); ++s) {
      p.cuQ.push_back(int32_t(p.cuQ.back() + shape.seqlensQ[s]));
      p.cuK.push_back(int32_t(p.cuK.back() + lensK[s]));
      p.maxSeqQ = std::max(p.maxSeqQ, shape.seqlensQ[s]);
    }
    p.b = 1, p.nq = p.cuQ.back(), p.nk = p.cuK.back();
    layout = Layout::BSHD;
  }
  p.d = meta.headDim;
  p.hasLse = meta.hasLse;
  p.layout = layout;
  bool bshd = layout == Layout::BSHD;
  setStrides(p.strides[0], p.h, p.nq, p.d, bshd);
  setStrides(p.strides[1], p.hkv, p.nk, p.d, bshd);
  setStrides(p.strides[2], p.hkv, p.nk, p.d, bshd);
  // A kernel that takes O as a plain pointer writes it dense (B x H x N x
  // D) whatever the inputs' layout.
  setStrides(p.strides[3], p.h, p.nq, p.d,
             bshd && !meta.assumesDenseLayout(TensorId::O));
  p.strides[4][0] = p.h * p.nq, p.strides[4][1] = p.nq, p.strides[4][2] = 1;
  p.elems[0] = p.elems[3] = p.b * p.h * p.nq * p.d;
  p.elems[1] = p.elems[2] = p.b * p.hkv * p.nk * p.d;
  p.elems[4] = p.hasLse ? p.b * p.h * p.nq : 0;
  return p;
}

int64_t Problem::sequenceOf(int64_t i) const {
  // The last sequence starting at or before row i (empty ones are skipped).
  auto it = std::upper_bound(cuQ.begin(), cuQ.end(), int32_t(i));
  return int64_t(it - cuQ.begin()) - 1;
}

size_t Problem::bytes(unsigned t) const {
  return size_t(elems[t]) * (t == unsigned(TensorId::LSE) ? 4 : 2);
}

size_t Problem::setBytes() const {
  size_t total = 0;
  for (unsigned t = 0; t < kNumTensors; ++t)
    total += bytes(t);
  return total;
}

TensorArg Problem::arg(TensorId id, CUdeviceptr ptr, int device) const {
  TensorArg t;
  t.data = ptr;
  t.device = device;
  bool lse = id == TensorId::LSE;
  t.dtype = lse ? DType::F32 : dtype;
  t.rank = lse ? 3 : 4;
  bool keyValue = id == TensorId::K || id == TensorId::V;
  int64_t sizes[4] = {b, keyValue ? hkv : h, keyValue ? nk : nq, d};
  for (unsigned i = 0; i < t.rank; ++i) {
    t.sizes[i] = sizes[i];
    t.strides[i] = strides[unsigned(id)][i];
  }
  return t;
}

TensorArg Problem::seqlensArg(bool keys, CUdeviceptr ptr, int device) const {
  TensorArg t;
  t.data = ptr;
  t.device = device;
  t.dtype = DType::I32;
  t.rank = 1;
  t.sizes[0] = int64_t((keys ? cuK : cuQ).size());
  t.strides[0] = 1;
  return t;
}

double Problem::flops(bool causal) const {
  auto one = [&](double nq, double nk) {
    double f = 4.0 * h * nq * nk * d;
    return causal && nq == nk ? f / 2 : f;
  };
  if (!packed())
    return b * one(double(nq), double(nk));
  double total = 0;
  for (int64_t s = 0; s < sequences(); ++s)
    total += one(cuQ[s + 1] - cuQ[s], cuK[s + 1] - cuK[s]);
  return total;
}

void printRunHeader(raw_ostream &os, const KernelMetadata &meta,
                    const DeviceInfo &device, const Problem &p) {
  if (p.packed()) {
    os << formatv("flash-run: {0} ({1}, D={2}, {3}{4}) on {5}: {6} packed "
                  "sequences, H={7}{8} Tq={9} Tk={10} max_seqlen_q={11}\n",
                  meta.kernel, dtypeName(meta.dtype), meta.headDim,
                  meta.causal ? "causal" : "non-causal",
                  meta.hasLse ? ", lse" : "", device.name, p.sequences(), p.h,
                  p.hkv != p.h ? formatv(" Hkv={0}", p.hkv).str() : "", p.nq,
                  p.nk, p.maxSeqQ);
    return;
  }
  os << formatv("flash-run: {0} ({1}, D={2}, {3}{4}) on {5}: B={6} H={7}{8} "
                "Nq={9} Nk={10} layout={11}\n",
                meta.kernel, dtypeName(meta.dtype), meta.headDim,
                meta.causal ? "causal" : "non-causal",
                meta.hasLse ? ", lse" : "", device.name, p.b, p.h,
                p.hkv != p.h ? formatv(" Hkv={0}", p.hkv).str() : "", p.nq,
                p.nk, p.layout == Layout::BSHD ? "bshd" : "bhsd");
}

Error checkProblem(const KernelMetadata &meta, const Problem &p, int device) {
  if (meta.packed() != p.packed())
    return makeError(ErrorCode::InvalidArgument,
                     meta.packed()
                         ? "kernel " + meta.kernel +
                               " takes packed sequences: give their lengths "
                               "with --seqlens"
                         : "kernel " + meta.kernel +
                               " takes no packed sequences (--seqlens)");
  if (p.packed() && (p.nq == 0 || p.nk == 0))
    return makeError(ErrorCode::InvalidArgument,
                     "the packed sequences hold no query or no key rows: "
                     "nothing to run");
  if (!p.empty() && p.h % p.hkv == 0)
    return Error::success();
  // Any non-null pointer: validation names the empty dimension, or the K/V
  // heads that do not divide the query heads, first.
  LaunchArgs args;
  for (unsigned i = 0; i < kNumTensors; ++i)
    args.tensors[i] = p.arg(TensorId(i), 256, device);
  if (!p.hasLse)
    args[TensorId::LSE] = TensorArg();
  if (p.packed()) {
    args.cuSeqlensQ = p.seqlensArg(false, 256, device);
    args.cuSeqlensK = p.seqlensArg(true, 256, device);
    args.maxSeqlenQ = p.maxSeqQ;
  }
  Expected<ProblemShape> shape = validateLaunchArgs(meta, args, device);
  if (!shape)
    return shape.takeError();
  return Error::success();
}

HostInputs generateInputs(const Problem &p, std::mt19937_64 &rng,
                          bool hardRows) {
  HostInputs in;
  for (unsigned t = 0; t < 3; ++t) {
    int64_t n = t == 0 ? p.nq : p.nk;
    int64_t heads = t == 0 ? p.h : p.hkv;
    in.bits[t].assign(size_t(p.elems[t]), 0);
    in.values[t].assign(size_t(p.elems[t]), 0);
    for (int64_t b = 0; b < p.b; ++b)
      for (int64_t h = 0; h < heads; ++h)
        for (int64_t i = 0; i < n; ++i) {
          bool hard = t == 0 && hardRows && ref::isHardQueryRow(i);
          for (int64_t d = 0; d < p.d; ++d) {
            uint16_t bits = ref::drawInputBits(rng, p.dtype, hard);
            in.bits[t][size_t(ref::offsetOf(p.strides[t], b, h, i, d))] = bits;
            in.values[t][size_t(((b * heads + h) * n + i) * p.d + d)] =
                ref::halfBitsToFloat(bits, p.dtype);
          }
        }
  }
  return in;
}

unsigned benchInputSets(size_t setBytes) {
  if (setBytes == 0)
    return 1;
  size_t want = size_t(256) << 20; // > 4x the 60 MB L2 of an H200
  unsigned numSets =
      unsigned(std::clamp<size_t>((want + setBytes - 1) / setBytes, 1, 8));
  if (numSets * setBytes > (size_t(16) << 30))
    numSets = 1;
  return numSets;
}

} // namespace flashc::run
