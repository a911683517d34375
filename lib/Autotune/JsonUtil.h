//===- JsonUtil.h - field readers with errors that name the field -*- C++ -*-//
//
// Private to lib/Autotune: every reader of a tuning file (database, bundle
// manifest, timings) reports a bad document as "<where>.<field>: <why>".
//
//===----------------------------------------------------------------------===//

#ifndef FLASHC_LIB_AUTOTUNE_JSONUTIL_H
#define FLASHC_LIB_AUTOTUNE_JSONUTIL_H

#include "llvm/ADT/Twine.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/JSON.h"

#include <string>

namespace flashc::tune::json_util {

inline llvm::Error fieldError(const llvm::Twine &where,
                              const llvm::Twine &why) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                 (where + ": " + why).str());
}

inline llvm::Expected<const llvm::json::Object *>
getObject(const llvm::json::Value &value, const llvm::Twine &where) {
  if (const llvm::json::Object *object = value.getAsObject())
    return object;
  return fieldError(where, "expected an object");
}

inline llvm::Expected<int64_t> getInt(const llvm::json::Object &object,
                                      llvm::StringRef key,
                                      const llvm::Twine &where) {
  const llvm::json::Value *value = object.get(key);
  if (!value)
    return fieldError(where + "." + key, "missing");
  if (std::optional<int64_t> integer = value->getAsInteger())
    return *integer;
  return fieldError(where + "." + key, "expected an integer");
}

inline llvm::Expected<double> getNumber(const llvm::json::Object &object,
                                        llvm::StringRef key,
                                        const llvm::Twine &where) {
  const llvm::json::Value *value = object.get(key);
  if (!value)
    return fieldError(where + "." + key, "missing");
  if (std::optional<double> number = value->getAsNumber())
    return *number;
  return fieldError(where + "." + key, "expected a number");
}

inline llvm::Expected<std::string> getString(const llvm::json::Object &object,
                                             llvm::StringRef key,
                                             const llvm::Twine &where) {
  const llvm::json::Value *value = object.get(key);
  if (!value)
    return fieldError(where + "." + key, "missing");
  if (std::optional<llvm::StringRef> text = value->getAsString())
    return text->str();
  return fieldError(where + "." + key, "expected a string");
}

inline llvm::Expected<const llvm::json::Array *>
getArray(const llvm::json::Object &object, llvm::StringRef key,
         const llvm::Twine &where) {
  const llvm::json::Value *value = object.get(key);
  if (!value)
    return fieldError(where + "." + key, "missing");
  if (const llvm::json::Array *array = value->getAsArray())
    return array;
  return fieldError(where + "." + key, "expected an array");
}

/// Checks "format" and "format_version" of a top-level document, so a
/// foreign JSON file is named as such and not read field by field.
inline llvm::Error checkFormat(const llvm::json::Object &object,
                               llvm::StringRef format, int64_t version,
                               const llvm::Twine &where) {
  const llvm::json::Value *value = object.get("format");
  std::optional<llvm::StringRef> text =
      value ? value->getAsString() : std::nullopt;
  if (!text || *text != format)
    return fieldError(
        where, "not a " + format + " file (its \"format\" is " +
                   (text ? "\"" + text->str() + "\"" : std::string("missing")) +
                   ")");
  llvm::Expected<int64_t> got = getInt(object, "format_version", where);
  if (!got)
    return got.takeError();
  if (*got != version)
    return fieldError(where, "format_version " + llvm::Twine(*got) +
                                 " is not supported (this build reads " +
                                 llvm::Twine(version) + ")");
  return llvm::Error::success();
}

} // namespace flashc::tune::json_util

#endif // FLASHC_LIB_AUTOTUNE_JSONUTIL_H
