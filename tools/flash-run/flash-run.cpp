//===- flash-run.cpp - Run, check and time one flashc kernel --------------===//
//
// flash-run kernel.cubin --batch B --heads H --seq N [--seq-k M] [--seed S]
//           [--check] [--bench [--iters N]] [--layout bhsd|bshd]
//           [--repeat R]
//
// Seeded random inputs (never zeros; every 16th query row scaled so its
// logits reach ~1e3), outputs poisoned with NaN before the launch, results
// checked against a float64 CPU reference (every row of small problems, a
// random sample of large ones; fully-masked rows must give O = 0 and
// LSE = -inf), PASS/FAIL with the dtype's tolerance (exit 1 on FAIL). With
// --bench: median time of many launches after warm-up (CUDA events),
// rotating among input sets larger than L2, and TFLOP/s. --repeat R launches
// R times before the checked launch.
// Exit codes: 0 pass, 1 check failed, 2 error, 77 skipped (no driver/GPU).
//
//===----------------------------------------------------------------------===//

#include "flashc/Reference/HostData.h"
#include "flashc/Reference/Reference.h"

#include "flashc/Runtime/Kernel.h"

#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

using namespace llvm;
using namespace flashc::rt;
using namespace flashc::ref;

static cl::OptionCategory category("flash-run options");
static cl::opt<std::string> kernelPath(cl::Positional, cl::Required,
                                       cl::desc("<kernel.cubin|.ptx|.json>"),
                                       cl::cat(category));
static cl::opt<int64_t> batch("batch", cl::desc("batch size B"), cl::init(1),
                              cl::cat(category));
static cl::opt<int64_t> heads("heads", cl::desc("heads H"), cl::init(1),
                              cl::cat(category));
static cl::opt<int64_t> seq("seq", cl::desc("query sequence length N"),
                            cl::init(128), cl::cat(category));
static cl::opt<int64_t> seqK("seq-k",
                             cl::desc("key/value sequence length (default N)"),
                             cl::init(-1), cl::cat(category));
static cl::opt<unsigned> seed("seed", cl::desc("random seed"), cl::init(1),
                              cl::cat(category));
static cl::opt<bool> check("check", cl::desc("check against float64 reference"),
                           cl::cat(category));
static cl::opt<bool> bench("bench", cl::desc("time the kernel"),
                           cl::cat(category));
static cl::opt<unsigned> iters("iters", cl::desc("timed launches (--bench)"),
                               cl::init(100), cl::cat(category));
static cl::opt<unsigned> warmup("warmup", cl::desc("untimed launches first"),
                                cl::init(10), cl::cat(category));
static cl::opt<unsigned>
    repeat("repeat",
           cl::desc("launches before the checked one (a kernel that keeps "
                    "state across launches must still be right after them)"),
           cl::init(0), cl::cat(category));
static cl::opt<int> deviceOrdinal("device", cl::desc("CUDA device ordinal"),
                                  cl::init(0), cl::cat(category));
static cl::opt<std::string>
    layout("layout", cl::desc("memory layout of q/k/v/o: bhsd or bshd"),
           cl::init("bhsd"), cl::cat(category));
static cl::opt<unsigned> sampleRows("sample-rows",
                                    cl::desc("rows checked in large problems"),
                                    cl::init(256), cl::cat(category));
static cl::opt<bool> noHard("no-hard", cl::desc("no rows with logits near 1e3"),
                            cl::cat(category));
static cl::opt<double> tolerance("tol",
                                 cl::desc("relative error tolerance (default "
                                          "1e-2 bf16, 5e-3 f16)"),
                                 cl::init(0), cl::cat(category));
static cl::opt<bool> skipUnsupported(
    "skip-unsupported",
    cl::desc("exit 77 (skipped) also when the GPU cannot run the kernel"),
    cl::cat(category));

namespace {
constexpr int kExitFail = 1, kExitError = 2, kExitSkip = 77;

int report(Error err, bool allowSkip = false) {
  std::string msg;
  int code = takeErrorMessage(std::move(err), msg);
  bool skip = code == int(ErrorCode::NoDriver) ||
              (code == int(ErrorCode::NoDevice) &&
               (allowSkip || StringRef(msg).starts_with("no GPU")));
  if (skip) {
    outs() << "skipped: " << msg << "\n";
    return kExitSkip;
  }
  errs() << "flash-run: error: " << msg << "\n";
  return kExitError;
}

/// One set of device buffers for q, k, v, o, lse.
struct DeviceSet {
  CUdeviceptr ptr[kNumTensors] = {};
};

struct Problem {
  DType dtype;
  int64_t b, h, nq, nk, d;
  int64_t strides[kNumTensors][4];
  int64_t elems[kNumTensors]; // elements per buffer
  bool hasLse;
};

void setStrides(int64_t *s, int64_t h, int64_t n, int64_t d, bool bshd) {
  if (bshd) {
    s[0] = n * h * d, s[1] = d, s[2] = h * d, s[3] = 1;
  } else {
    s[0] = h * n * d, s[1] = n * d, s[2] = d, s[3] = 1;
  }
}

TensorArg tensorArg(const Problem &p, TensorId id, CUdeviceptr ptr,
                    int device) {
  TensorArg t;
  t.data = ptr;
  t.device = device;
  bool lse = id == TensorId::LSE;
  t.dtype = lse ? DType::F32 : p.dtype;
  t.rank = lse ? 3 : 4;
  int64_t n = (id == TensorId::K || id == TensorId::V) ? p.nk : p.nq;
  int64_t sizes[4] = {p.b, p.h, n, p.d};
  for (unsigned i = 0; i < t.rank; ++i) {
    t.sizes[i] = sizes[i];
    t.strides[i] = p.strides[unsigned(id)][i];
  }
  return t;
}

double median(std::vector<float> v) {
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}
} // namespace

#define CU_CHECK(call, what)                                                   \
  if (Error err = checkCu(call, what))                                         \
  return report(std::move(err))

int main(int argc, char **argv) {
  cl::HideUnrelatedOptions(category);
  cl::ParseCommandLineOptions(argc, argv,
                              "flash-run: run, check and time a flashc "
                              "kernel\n");
  if (layout != "bhsd" && layout != "bshd") {
    errs() << "flash-run: error: --layout must be bhsd or bshd\n";
    return kExitError;
  }
  auto metaOrErr = loadMetadataFile(kernelPath);
  if (!metaOrErr)
    return report(metaOrErr.takeError());
  auto drv = getDriver();
  if (!drv)
    return report(drv.takeError());
  const DriverApi &cu = **drv;
  auto kernelOrErr = Kernel::load(kernelPath, deviceOrdinal);
  if (!kernelOrErr)
    return report(kernelOrErr.takeError(), skipUnsupported);
  Kernel &kernel = **kernelOrErr;
  const KernelMetadata &meta = kernel.getMetadata();
  ScopedContext scope(kernel.getContext());

  Problem p;
  p.dtype = meta.dtype;
  p.b = batch, p.h = heads, p.nq = seq, p.nk = seqK < 0 ? seq : seqK;
  p.d = meta.headDim;
  p.hasLse = meta.hasLse;
  bool bshd = layout == "bshd";
  setStrides(p.strides[0], p.h, p.nq, p.d, bshd);
  setStrides(p.strides[1], p.h, p.nk, p.d, bshd);
  setStrides(p.strides[2], p.h, p.nk, p.d, bshd);
  setStrides(p.strides[3], p.h, p.nq, p.d, bshd);
  p.strides[4][0] = p.h * p.nq, p.strides[4][1] = p.nq, p.strides[4][2] = 1;
  p.elems[0] = p.elems[3] = p.b * p.h * p.nq * p.d;
  p.elems[1] = p.elems[2] = p.b * p.h * p.nk * p.d;
  p.elems[4] = p.hasLse ? p.b * p.h * p.nq : 0;
  outs() << formatv("flash-run: {0} ({1}, D={2}, {3}{4}) on {5}: B={6} H={7} "
                    "Nq={8} Nk={9} layout={10}\n",
                    meta.kernel, dtypeName(meta.dtype), meta.headDim,
                    meta.causal ? "causal" : "non-causal",
                    meta.hasLse ? ", lse" : "", kernel.getDevice().name, p.b,
                    p.h, p.nq, p.nk, layout.getValue());
  // An empty problem: let validation name it before allocating anything.
  if (p.b <= 0 || p.h <= 0 || p.nq <= 0 || p.nk <= 0) {
    LaunchArgs args;
    for (unsigned i = 0; i < kNumTensors; ++i)
      args.tensors[i] = tensorArg(p, TensorId(i), 256, deviceOrdinal);
    if (!p.hasLse)
      args[TensorId::LSE] = TensorArg();
    auto shape = validateLaunchArgs(meta, args, deviceOrdinal);
    if (!shape)
      return report(shape.takeError());
  }

  // Inputs: uniform(-1, 1) rounded to the kernel's dtype; hard rows.
  std::mt19937_64 rng(seed);
  std::vector<uint16_t> hostIn[3];
  std::vector<double> ref[3]; // BHND-contiguous copies for the reference
  for (unsigned t = 0; t < 3; ++t) {
    int64_t n = t == 0 ? p.nq : p.nk;
    hostIn[t].assign(size_t(p.elems[t]), 0);
    ref[t].assign(size_t(p.elems[t]), 0);
    for (int64_t b = 0; b < p.b; ++b)
      for (int64_t h = 0; h < p.h; ++h)
        for (int64_t i = 0; i < n; ++i) {
          bool hard = t == 0 && !noHard && isHardQueryRow(i);
          for (int64_t d = 0; d < p.d; ++d) {
            uint16_t bits = drawInputBits(rng, p.dtype, hard);
            hostIn[t][size_t(offsetOf(p.strides[t], b, h, i, d))] = bits;
            ref[t][size_t(((b * p.h + h) * n + i) * p.d + d)] =
                halfBitsToFloat(bits, p.dtype);
          }
        }
  }

  // Input sets: one for --check, several for --bench so L2 cannot hold them.
  size_t setBytes = 0;
  for (unsigned t = 0; t < kNumTensors; ++t)
    setBytes += size_t(p.elems[t]) * (t == 4 ? 4 : 2);
  unsigned numSets = 1;
  if (bench) {
    size_t want = size_t(256) << 20; // > 4x the 60 MB L2 of an H200
    numSets =
        unsigned(std::clamp<size_t>((want + setBytes - 1) / setBytes, 1, 8));
    if (numSets * setBytes > (size_t(16) << 30))
      numSets = 1;
  }
  std::vector<DeviceSet> sets(numSets);
  auto freeAll = [&] {
    for (DeviceSet &s : sets)
      for (CUdeviceptr ptr : s.ptr)
        if (ptr)
          cu.cuMemFree(ptr);
  };
  for (DeviceSet &s : sets) {
    for (unsigned t = 0; t < kNumTensors; ++t) {
      if (!p.elems[t])
        continue;
      size_t bytes = size_t(p.elems[t]) * (t == 4 ? 4 : 2);
      if (Error err = checkCu(cu.cuMemAlloc(&s.ptr[t], bytes), "cuMemAlloc")) {
        freeAll();
        return report(std::move(err));
      }
      if (t < 3)
        CU_CHECK(cu.cuMemcpyHtoD(s.ptr[t], hostIn[t].data(), bytes),
                 "cuMemcpyHtoD");
    }
  }
  CUstream stream;
  CU_CHECK(cu.cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING),
           "cuStreamCreate");
  auto argsFor = [&](const DeviceSet &s) {
    LaunchArgs args;
    for (unsigned t = 0; t < kNumTensors; ++t)
      if (s.ptr[t])
        args.tensors[t] = tensorArg(p, TensorId(t), s.ptr[t], deviceOrdinal);
    return args;
  };

  for (unsigned r = 0; r < repeat; ++r)
    if (Error err = kernel.launch(argsFor(sets[0]), stream))
      return report(std::move(err));
  CU_CHECK(cu.cuStreamSynchronize(stream), "kernel execution (--repeat)");

  // Poison outputs, launch once, read back.
  CU_CHECK(
      cu.cuMemsetD16(sets[0].ptr[3], halfNaNBits(p.dtype), size_t(p.elems[3])),
      "cuMemsetD16");
  if (p.hasLse)
    CU_CHECK(cu.cuMemsetD32(sets[0].ptr[4], 0x7fc00000u, size_t(p.elems[4])),
             "cuMemsetD32");
  CU_CHECK(cu.cuCtxSynchronize(), "cuCtxSynchronize");
  if (Error err = kernel.launch(argsFor(sets[0]), stream))
    return report(std::move(err));
  CU_CHECK(cu.cuStreamSynchronize(stream), "kernel execution");

  int exitCode = 0;
  if (check) {
    std::vector<uint16_t> outBits(size_t(p.elems[3]));
    std::vector<float> lseOut(size_t(p.elems[4]));
    CU_CHECK(
        cu.cuMemcpyDtoH(outBits.data(), sets[0].ptr[3], outBits.size() * 2),
        "cuMemcpyDtoH");
    if (p.hasLse)
      CU_CHECK(
          cu.cuMemcpyDtoH(lseOut.data(), sets[0].ptr[4], lseOut.size() * 4),
          "cuMemcpyDtoH");
    // Every element written: no NaN survives anywhere.
    size_t nanO = 0, nanL = 0;
    for (uint16_t bits : outBits)
      nanO += std::isnan(halfBitsToFloat(bits, p.dtype));
    for (float x : lseOut)
      nanL += std::isnan(x);

    // Rows to check.
    int64_t rowsTotal = p.b * p.h * p.nq;
    bool all = double(rowsTotal) * double(p.nk) * double(p.d) <= 3e8;
    std::vector<int64_t> rows;
    if (all) {
      for (int64_t r = 0; r < rowsTotal; ++r)
        rows.push_back(r);
    } else {
      std::uniform_int_distribution<int64_t> pick(0, rowsTotal - 1);
      rows = {0, rowsTotal - 1, 3}; // first, last, a hard row
      int64_t masked = meta.causal ? p.nq - p.nk : 0;
      for (int64_t i = 0; i < std::min<int64_t>(masked, 8); ++i)
        rows.push_back(i); // fully-masked rows of (0, 0)
      while (rows.size() < sampleRows)
        rows.push_back(pick(rng));
    }
    double tol = tolerance > 0 ? double(tolerance)
                               : (p.dtype == DType::BF16 ? 1e-2 : 5e-3);
    double maxErr = 0, maxLseErr = 0, worstRowErr = 0;
    int64_t worstRow = -1, badMasked = 0, maskedRows = 0;
    std::vector<double> out(size_t(p.d)), scratch;
    for (int64_t r : rows) {
      int64_t i = r % p.nq, bh = r / p.nq, b = bh / p.h, h = bh % p.h;
      HeadView head{ref[0].data() + size_t(bh * p.nq * p.d),
                    ref[1].data() + size_t(bh * p.nk * p.d),
                    ref[2].data() + size_t(bh * p.nk * p.d)};
      double lseRef = referenceRow(head, i, p.nq, p.nk, p.d, meta.scale,
                                   meta.causal, out.data(), scratch);
      double num = 0, den = 0;
      bool allZero = true;
      for (int64_t d = 0; d < p.d; ++d) {
        double got = halfBitsToFloat(
            outBits[size_t(offsetOf(p.strides[3], b, h, i, d))], p.dtype);
        allZero &= got == 0.0;
        num += (got - out[size_t(d)]) * (got - out[size_t(d)]);
        den += out[size_t(d)] * out[size_t(d)];
      }
      double lseGot =
          p.hasLse
              ? lseOut[size_t(b * p.strides[4][0] + h * p.strides[4][1] + i)]
              : 0;
      if (std::isinf(lseRef)) { // fully masked: O = 0, LSE = -inf exactly
        ++maskedRows;
        if (!allZero || (p.hasLse && !(std::isinf(lseGot) && lseGot < 0)))
          ++badMasked;
        continue;
      }
      double err = std::sqrt(num / den);
      if (!(err <= maxErr)) { // NaN counts as the worst
        maxErr = std::isnan(err) ? INFINITY : err;
        worstRowErr = err;
        worstRow = r;
      }
      if (p.hasLse) {
        double le =
            std::fabs(lseGot - lseRef) / std::max(1.0, std::fabs(lseRef));
        if (!(le <= maxLseErr))
          maxLseErr = std::isnan(le) ? INFINITY : le;
      }
    }
    bool pass = maxErr <= tol && maxLseErr <= tol && badMasked == 0 &&
                nanO == 0 && nanL == 0;
    outs() << formatv("check: {0} rows ({1}), {2} fully masked: max rel err "
                      "||o-ref||/||ref|| = {3:e} (row {4}), max lse err = "
                      "{5:e}, tolerance {6:e}",
                      rows.size(), all ? "all" : "sampled", maskedRows, maxErr,
                      worstRow, maxLseErr, tol);
    if (nanO || nanL)
      outs() << formatv(", {0} NaN in o and {1} in lse (unwritten?)", nanO,
                        nanL);
    if (badMasked)
      outs() << formatv(", {0} masked rows not O=0/LSE=-inf", badMasked);
    outs() << (pass ? " -> PASS\n" : " -> FAIL\n");
    (void)worstRowErr;
    if (!pass)
      exitCode = kExitFail;
  }

  if (bench) {
    for (unsigned i = 0; i < warmup; ++i)
      if (Error err = kernel.launch(argsFor(sets[i % numSets]), stream))
        return report(std::move(err));
    std::vector<CUevent> events(2 * size_t(iters));
    for (CUevent &e : events)
      CU_CHECK(cu.cuEventCreate(&e, CU_EVENT_DEFAULT), "cuEventCreate");
    for (unsigned i = 0; i < iters; ++i) {
      CU_CHECK(cu.cuEventRecord(events[2 * i], stream), "cuEventRecord");
      if (Error err = kernel.launch(argsFor(sets[i % numSets]), stream))
        return report(std::move(err));
      CU_CHECK(cu.cuEventRecord(events[2 * i + 1], stream), "cuEventRecord");
    }
    CU_CHECK(cu.cuStreamSynchronize(stream), "kernel execution (bench)");
    std::vector<float> ms(iters);
    for (unsigned i = 0; i < iters; ++i)
      CU_CHECK(cu.cuEventElapsedTime(&ms[i], events[2 * i], events[2 * i + 1]),
               "cuEventElapsedTime");
    for (CUevent e : events)
      cu.cuEventDestroy(e);
    double med = median(ms);
    double flops = 4.0 * p.b * p.h * p.nq * p.nk * p.d;
    if (meta.causal && p.nq == p.nk)
      flops /= 2;
    outs() << formatv("bench: median {0:f4} ms over {1} launches ({2} input "
                      "sets of {3:f1} MB, {4} warm-up), {5:f2} TFLOP/s\n",
                      med, iters.getValue(), numSets, setBytes / 1e6,
                      warmup.getValue(), flops / (med * 1e-3) / 1e12);
  }
  cu.cuStreamDestroy(stream);
  freeAll();
  return exitCode;
}
