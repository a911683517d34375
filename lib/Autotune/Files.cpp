//===- Files.cpp - reading and atomically writing tuning files ------------===//

#include "flashc/Autotune/Files.h"
#include "JsonUtil.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

using namespace llvm;

Error flashc::tune::writeFileAtomically(StringRef path, StringRef contents) {
  SmallString<256> model(path);
  model += ".tmp-%%%%%%%%";
  int fd;
  SmallString<256> temp;
  if (std::error_code ec = sys::fs::createUniqueFile(model, fd, temp))
    return createStringError(ec,
                             "cannot create a temporary file beside '%s': %s",
                             path.str().c_str(), ec.message().c_str());
  {
    raw_fd_ostream os(fd, /*shouldClose=*/true);
    os << contents;
    os.close();
    if (os.has_error()) {
      std::error_code ec = os.error();
      os.clear_error();
      sys::fs::remove(temp);
      return createStringError(ec, "cannot write '%s': %s", temp.c_str(),
                               ec.message().c_str());
    }
  }
  if (std::error_code ec = sys::fs::rename(temp, path)) {
    sys::fs::remove(temp);
    return createStringError(ec, "cannot rename '%s' to '%s': %s", temp.c_str(),
                             path.str().c_str(), ec.message().c_str());
  }
  return Error::success();
}

Error flashc::tune::writeJsonAtomically(StringRef path,
                                        const json::Value &value) {
  std::string text;
  raw_string_ostream os(text);
  os << formatv("{0:2}", value) << "\n";
  return writeFileAtomically(path, text);
}

Expected<std::string> flashc::tune::readFile(StringRef path) {
  ErrorOr<std::unique_ptr<MemoryBuffer>> buffer =
      MemoryBuffer::getFile(path, /*IsText=*/true);
  if (!buffer)
    return createStringError(buffer.getError(), "cannot read '%s': %s",
                             path.str().c_str(),
                             buffer.getError().message().c_str());
  return (*buffer)->getBuffer().str();
}

Expected<json::Value> flashc::tune::parseJsonFile(StringRef text,
                                                  StringRef path) {
  Expected<json::Value> value = json::parse(text);
  if (!value)
    return createStringError(inconvertibleErrorCode(), "%s: not valid JSON: %s",
                             path.str().c_str(),
                             toString(value.takeError()).c_str());
  return value;
}

Expected<json::Value> flashc::tune::parseTuningDocument(StringRef text,
                                                        StringRef path,
                                                        StringRef format,
                                                        int64_t version) {
  Expected<json::Value> value = parseJsonFile(text, path);
  if (!value)
    return value.takeError();
  if (Error err = json_util::checkFormat(*value, format, version, path))
    return std::move(err);
  return value;
}
