//===- Error.cpp - Runtime error payload ----------------------------------===//
//
// The RuntimeError payload and helpers shared by every runtime component.
//
//===----------------------------------------------------------------------===//

#include "flashc/Runtime/Error.h"

using namespace llvm;

namespace flashc::rt {

char RuntimeError::ID = 0;

std::error_code RuntimeError::convertToErrorCode() const {
  return inconvertibleErrorCode();
}

Error makeError(ErrorCode code, const Twine &message) {
  return make_error<RuntimeError>(code, message.str());
}

int takeErrorMessage(Error err, std::string &message) {
  int code = 0;
  message.clear();
  handleAllErrors(
      std::move(err),
      [&](const RuntimeError &e) {
        code = static_cast<int>(e.getCode());
        message = e.getMessage();
      },
      [&](const ErrorInfoBase &e) {
        code = static_cast<int>(ErrorCode::IO);
        message = e.message();
      });
  return code;
}

} // namespace flashc::rt
