//===- JsonUtil.h - reading tuning files ------------------------*- C++ -*-===//
//
// Private to lib/Autotune: every reader of a tuning file (database, bundle
// manifest, timings) maps its objects with llvm::json::ObjectMapper through
// fromJSON overloads, so a bad document is reported with the JSON path of
// the bad value: "expected integer at tuning.json.entries[3].config.stages".
//
//===----------------------------------------------------------------------===//

#ifndef FLASHC_LIB_AUTOTUNE_JSONUTIL_H
#define FLASHC_LIB_AUTOTUNE_JSONUTIL_H

#include "llvm/ADT/Twine.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/JSON.h"

#include <optional>
#include <string>

namespace flashc::tune::json_util {

inline llvm::Error fieldError(const llvm::Twine &where,
                              const llvm::Twine &why) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                 (where + ": " + why).str());
}

/// Reads `value` into `out` through its fromJSON; `where` (a file path)
/// is the root of the JSON path errors name.
template <typename T>
llvm::Error readJson(const llvm::json::Value &value, T &out,
                     llvm::StringRef where) {
  llvm::json::Path::Root root(where);
  if (fromJSON(value, out, root))
    return llvm::Error::success();
  return root.getError();
}

/// Checks "format" and "format_version" of a top-level document, so a
/// foreign JSON file is named as such and not read field by field.
inline llvm::Error checkFormat(const llvm::json::Value &value,
                               llvm::StringRef format, int64_t version,
                               llvm::StringRef where) {
  llvm::json::Path::Root root(where);
  llvm::json::ObjectMapper o(value, root);
  std::optional<std::string> got;
  if (!o || !o.map("format", got))
    return root.getError();
  if (got != format)
    return fieldError(where, "not a " + format + " file (its \"format\" is " +
                                 (got ? "\"" + *got + "\"" : "missing") + ")");
  int64_t gotVersion = 0;
  if (!o.map("format_version", gotVersion))
    return root.getError();
  if (gotVersion != version)
    return fieldError(where, "format_version " + llvm::Twine(gotVersion) +
                                 " is not supported (this build reads " +
                                 llvm::Twine(version) + ")");
  return llvm::Error::success();
}

} // namespace flashc::tune::json_util

#endif // FLASHC_LIB_AUTOTUNE_JSONUTIL_H
