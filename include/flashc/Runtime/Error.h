//===- Error.h - Runtime error kinds and helpers ---------------*- C++ -*-===//
//
// Every failure in libflashrt is an llvm::Error carrying one of these codes
// and a message naming what is wrong. The C API maps codes to flashrt_status.
//
//===----------------------------------------------------------------------===//

#ifndef FLASHC_RUNTIME_ERROR_H
#define FLASHC_RUNTIME_ERROR_H

#include "llvm/ADT/Twine.h"
#include "llvm/Support/Error.h"

#include <string>

namespace flashc::rt {

/// Broad class of a runtime failure; values match flashrt_status.
enum class ErrorCode {
  NoDriver = 1,        ///< libcuda.so.1 missing or lacks a symbol.
  NoDevice = 2,        ///< no GPU, bad ordinal, or wrong architecture.
  InvalidKernel = 3,   ///< metadata or binary broken or inconsistent.
  InvalidArgument = 4, ///< a launch argument breaks the kernel's contract.
  Cuda = 5,            ///< a driver call failed (message has its name).
  IO = 6,              ///< a file could not be read.
};

/// The one error payload of the runtime.
class RuntimeError : public llvm::ErrorInfo<RuntimeError> {
public:
  static char ID;
  RuntimeError(ErrorCode code, std::string message)
      : code(code), message(std::move(message)) {}
  void log(llvm::raw_ostream &os) const override { os << message; }
  std::error_code convertToErrorCode() const override;
  ErrorCode getCode() const { return code; }
  const std::string &getMessage() const { return message; }

private:
  ErrorCode code;
  std::string message;
};

/// Creates a runtime error.
llvm::Error makeError(ErrorCode code, const llvm::Twine &message);

/// Consumes `err` and returns its code and message (code 0 if success).
int takeErrorMessage(llvm::Error err, std::string &message);

} // namespace flashc::rt

#endif // FLASHC_RUNTIME_ERROR_H
