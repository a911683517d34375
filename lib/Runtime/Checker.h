//===- Checker.h - launch argument problems, gathered -----------*- C++ -*-===//
//
// The runtime's argument checks add one line per violated rule and return
// them together as one InvalidArgument error.
//
//===----------------------------------------------------------------------===//

#ifndef FLASHC_LIB_RUNTIME_CHECKER_H
#define FLASHC_LIB_RUNTIME_CHECKER_H

#include "flashc/Runtime/ArgValidation.h"
#include "flashc/Runtime/Error.h"

#include "llvm/ADT/Twine.h"

#include <string>
#include <vector>

namespace flashc::rt {

class Checker {
public:
  void add(const llvm::Twine &msg) { problems.push_back(msg.str()); }
  bool ok() const { return problems.empty(); }
  llvm::Error take() {
    std::string all = "invalid launch arguments:";
    for (const std::string &p : problems)
      all += "\n  " + p;
    return makeError(ErrorCode::InvalidArgument, all);
  }

private:
  std::vector<std::string> problems;
};

/// A tensor's sizes as "[B, H, N, D]", for messages.
std::string shapeString(const TensorArg &t);

/// The checks of one tensor on its own (rank, dtype, sizes, strides,
/// alignment, device) against `meta`; false if it is unusable for the
/// shape checks that follow. Messages call it `name` (default: its
/// tensorName).
bool checkTensorArg(Checker &c, const KernelMetadata &meta, TensorId id,
                    const TensorArg &t, int device, llvm::StringRef name = {});

/// Whether `t`'s strides are those of a dense row-major tensor of its sizes
/// (dimensions of size 1 impose nothing).
bool isDenseRowMajor(const TensorArg &t);

/// A tensor's strides as "(s0, s1, ...)", for messages.
std::string stridesString(const TensorArg &t);

/// The checks of the captures against meta.captures: one each, present,
/// of its dtype and rank, non-empty, dense row-major, on `device` (-1:
/// `qDevice`); the sinks and dsinks [heads].
void checkCaptures(Checker &c, const KernelMetadata &meta,
                   llvm::ArrayRef<TensorArg> captures, int64_t heads,
                   int device, int qDevice);

} // namespace flashc::rt

#endif // FLASHC_LIB_RUNTIME_CHECKER_H
