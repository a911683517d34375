//===- Files.h - reading and atomically writing tuning files ----*- C++ -*-===//
//
// Every file flash-tune writes (database, bundle manifest, timings) is
// written to a temporary file beside its destination and renamed over it,
// so a reader never sees half a file and a crash leaves the old one intact.
//
//===----------------------------------------------------------------------===//

#ifndef FLASHC_AUTOTUNE_FILES_H
#define FLASHC_AUTOTUNE_FILES_H

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/JSON.h"

#include <string>

namespace flashc::tune {

/// Writes `contents` to `path` through a temporary file in the same
/// directory and a rename.
llvm::Error writeFileAtomically(llvm::StringRef path, llvm::StringRef contents);

/// Writes `value` as indented JSON (and a final newline), atomically.
llvm::Error writeJsonAtomically(llvm::StringRef path,
                                const llvm::json::Value &value);

/// Reads a whole file; the error names the path.
llvm::Expected<std::string> readFile(llvm::StringRef path);

/// Parses `text` as JSON; the error names `path` and says it is not JSON.
llvm::Expected<llvm::json::Value> parseJsonFile(llvm::StringRef text,
                                                llvm::StringRef path);

/// Parses a tuning document (database, bundle manifest, timings): JSON whose
/// root is an object with this "format" and "format_version"; a foreign or
/// corrupt file is an error naming `path`.
llvm::Expected<llvm::json::Value> parseTuningDocument(llvm::StringRef text,
                                                      llvm::StringRef path,
                                                      llvm::StringRef format,
                                                      int64_t version);

} // namespace flashc::tune

#endif // FLASHC_AUTOTUNE_FILES_H
