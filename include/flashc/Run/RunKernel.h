//===- RunKernel.h - run, check and time a kernel ---------------*- C++ -*-===//
//
// flash-run's library: the problem a command line describes, its seeded
// inputs (never zeros; every 16th query row scaled so its logits reach
// ~1e3), device buffers with outputs poisoned before the checked launch, the
// check against the float64 reference, and the timing loop over input sets
// larger than L2. Links the runtime and the reference only (no MLIR, LLVM
// Support statically), so flash-run builds in FLASHC_RUNTIME_ONLY and runs
// on a GPU host that has only a CUDA driver.
//
//===----------------------------------------------------------------------===//

#ifndef FLASHC_RUN_RUNKERNEL_H
#define FLASHC_RUN_RUNKERNEL_H

#include "flashc/Runtime/Kernel.h"

#include "llvm/Support/Error.h"
#include "llvm/Support/raw_ostream.h"

#include <array>
#include <cstdint>
#include <memory>
#include <random>
#include <vector>

namespace flashc::run {

/// How q, k, v and o lie in memory (LSE is always B x H x N).
enum class Layout { BHSD, BSHD };

/// The problem sizes a run is asked for; head_dim and dtype come from the
/// kernel's metadata.
struct RunShape {
  int64_t batch = 1;
  int64_t heads = 1;
  int64_t seqQ = 128;
  /// Key/value length; negative: seqQ.
  int64_t seqK = -1;
  /// Key/value heads (grouped-query attention); non-positive: heads.
  int64_t kvHeads = 0;
  /// Packed sequences (a kernel with a packed grid): each sequence's query
  /// and key lengths (keys: the query lengths where empty, else one per
  /// sequence); batch and the lengths above are then ignored.
  std::vector<int64_t> seqlensQ, seqlensK;
};

/// One launch's tensors: sizes, dense strides in the layout, elements.
struct Problem {
  rt::DType dtype = rt::DType::BF16;
  int64_t b = 0, h = 0, nq = 0, nk = 0, d = 0;
  /// K and V's heads: each serves h / hkv query heads.
  int64_t hkv = 0;
  int64_t strides[rt::kNumTensors][4] = {};
  int64_t elems[rt::kNumTensors] = {}; ///< elements per buffer
  bool hasLse = false;
  Layout layout = Layout::BHSD;
  /// Packed sequences: cu_seqlens of the queries and of the keys (int32
  /// prefix sums, one per sequence plus one); b = 1, nq and nk are the
  /// packed rows, laid out T x H x D.
  std::vector<int32_t> cuQ, cuK;
  int64_t maxSeqQ = 0;
  bool packed() const { return !cuQ.empty(); }
  int64_t sequences() const { return packed() ? int64_t(cuQ.size()) - 1 : 0; }
  /// The sequence holding packed query row `i`.
  int64_t sequenceOf(int64_t i) const;

  static Problem make(const rt::KernelMetadata &meta, const RunShape &shape,
                      Layout layout);
  /// Bytes of tensor `t`'s buffer.
  size_t bytes(unsigned t) const;
  /// Bytes of one set of q, k, v, o and lse.
  size_t setBytes() const;
  bool empty() const {
    return b <= 0 || h <= 0 || hkv <= 0 || nq <= 0 || nk <= 0;
  }
  /// The K/V slice (batch * hkv + K/V head) query slice `bh` reads.
  int64_t kvSliceOf(int64_t bh) const {
    return (bh / h) * hkv + (bh % h) / (h / hkv);
  }
  rt::TensorArg arg(rt::TensorId id, CUdeviceptr ptr, int device) const;
  /// cu_seqlens_q (or with `keys`, cu_seqlens_k) at `ptr`.
  rt::TensorArg seqlensArg(bool keys, CUdeviceptr ptr, int device) const;
  /// Multiply-adds of QK^T and PV, times 2 (the causal mask's half where
  /// queries and keys are as long).
  double flops(bool causal) const;
};

/// "flash-run: <kernel> (<dtype>, D=<d>, causal, lse) on <GPU>: B=.. H=..
/// Nq=.. Nk=.. layout=..".
void printRunHeader(llvm::raw_ostream &os, const rt::KernelMetadata &meta,
                    const rt::DeviceInfo &device, const Problem &problem);

/// An empty problem, or one whose K/V heads do not divide its query heads,
/// fails here with validation's message, before anything is allocated; any
/// other problem passes.
llvm::Error checkProblem(const rt::KernelMetadata &meta, const Problem &problem,
                         int device);

/// Seeded host inputs: uniform(-1, 1) rounded to the kernel's dtype.
struct HostInputs {
  /// q, k, v as the kernel reads them, in the problem's layout.
  std::vector<uint16_t> bits[3];
  /// The same values as doubles, B x H x N x D contiguous, for the reference.
  std::vector<double> values[3];
};

/// Draws q, k, v from `rng`; with `hardRows` every 16th query row is scaled
/// so its logits reach ~1e3.
HostInputs generateInputs(const Problem &problem, std::mt19937_64 &rng,
                          bool hardRows);

/// Input sets to rotate among when timing, so that L2 cannot hold them.
unsigned benchInputSets(size_t setBytes);

/// What the checked launch wrote.
struct DeviceOutputs {
  std::vector<uint16_t> o;
  std::vector<float> lse;
};

/// Median time of the timed launches and what it was measured over.
struct BenchResult {
  double medianMs = 0;
  unsigned iters = 0;
  unsigned warmup = 0;
  unsigned numSets = 1;
  size_t setBytes = 0;
  double tflops = 0;
};

/// A kernel's device buffers (`numSets` sets of q, k, v, o, lse, each
/// holding the same inputs) and stream; freed on destruction.
class DeviceRun {
public:
  static llvm::Expected<std::unique_ptr<DeviceRun>>
  create(rt::Kernel &kernel, const Problem &problem, const HostInputs &inputs,
         unsigned numSets, int device);
  ~DeviceRun();
  DeviceRun(const DeviceRun &) = delete;
  DeviceRun &operator=(const DeviceRun &) = delete;

  /// Launches `count` times on the first set and waits: a kernel that keeps
  /// state across launches must still be right after them.
  llvm::Error launchRepeated(unsigned count);
  /// Poisons o and lse with NaN, launches once on the first set and waits.
  llvm::Error launchChecked();
  /// The first set's o and lse.
  llvm::Expected<DeviceOutputs> readOutputs();
  /// `warmup` untimed launches, then `iters` launches each between two CUDA
  /// events, rotating among the input sets.
  llvm::Expected<BenchResult> bench(unsigned warmup, unsigned iters,
                                    bool causal);

private:
  DeviceRun(rt::Kernel &kernel, const rt::DriverApi &cu, const Problem &problem,
            int device)
      : kernel(kernel), cu(cu), problem(problem), device(device) {}
  rt::LaunchArgs args(unsigned set) const;

  rt::Kernel &kernel;
  const rt::DriverApi &cu;
  Problem problem;
  int device;
  CUstream stream = nullptr;
  /// [set][tensor]
  std::vector<std::array<CUdeviceptr, rt::kNumTensors>> sets;
  /// Packed sequences: cu_seqlens_q and cu_seqlens_k, shared by the sets.
  CUdeviceptr cuQ = 0, cuK = 0;
};

/// How the check samples rows and what error it allows.
struct CheckOptions {
  /// Rows checked when the problem is too large to check every row.
  unsigned sampleRows = 256;
  /// Relative error allowed; 0: 1e-2 for bf16, 5e-3 for f16.
  double tolerance = 0;
};

/// The outcome of comparing the outputs with the float64 reference.
struct CheckResult {
  size_t rows = 0;
  bool allRows = false;
  int64_t maskedRows = 0;
  /// Fully masked rows whose O is not 0 or LSE not -inf.
  int64_t badMasked = 0;
  /// Worst relative error ||o - ref|| / ||ref|| and its row (-1: none).
  double maxErr = 0;
  int64_t worstRow = -1;
  double maxLseErr = 0;
  double tolerance = 0;
  /// NaNs left in o and lse: elements the kernel did not write.
  size_t nanO = 0, nanLse = 0;
  bool pass = false;
};

/// Compares `outputs` with the reference on every row of a small problem,
/// else on the first and last rows, a hard row, up to 8 fully masked rows
/// and rows drawn from `rng` up to `options.sampleRows`; fully masked rows
/// must give O = 0 and LSE = -inf.
CheckResult checkOutputs(const Problem &problem, const rt::KernelMetadata &meta,
                         const HostInputs &inputs, const DeviceOutputs &outputs,
                         std::mt19937_64 &rng, const CheckOptions &options);

/// "check: ... -> PASS" / "-> FAIL".
void printCheck(llvm::raw_ostream &os, const CheckResult &result);
/// "bench: median ... ms over ... launches ..., ... TFLOP/s".
void printBench(llvm::raw_ostream &os, const BenchResult &result);

} // namespace flashc::run

#endif // FLASHC_RUN_RUNKERNEL_H
