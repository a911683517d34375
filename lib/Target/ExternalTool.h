//===- ExternalTool.h - running ptxas or cc on temporary files --*- C++ -*-===//
//
// ptxas (PTX -> cubin) and the C compiler driver (object -> shared library)
// run the same way: the input written to a temporary file, the tool run with
// its stdout and stderr in a log, the output file read back, every file
// removed afterwards.
//
//===----------------------------------------------------------------------===//

#ifndef FLASHC_LIB_TARGET_EXTERNALTOOL_H
#define FLASHC_LIB_TARGET_EXTERNALTOOL_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <string>

namespace flashc {

/// What a tool wrote: its output file and its log (stdout and stderr).
struct ToolOutput {
  std::string output, log;
};

/// Runs `tool` (a path) on `input`: `arguments(in, out)` gives its
/// arguments after the program name for the temporary input file (suffix
/// `inputSuffix`) and output file (`outputSuffix`). A failure's error
/// begins with `description` and ends with the tool's log.
llvm::Expected<ToolOutput> runOnTemporaryFiles(
    llvm::StringRef tool, llvm::StringRef description, llvm::StringRef input,
    llvm::StringRef inputSuffix, llvm::StringRef outputSuffix,
    llvm::function_ref<llvm::SmallVector<std::string>(llvm::StringRef in,
                                                      llvm::StringRef out)>
        arguments);

/// Reads a whole file, or an error naming it.
llvm::Expected<std::string> readFile(llvm::StringRef path);

} // namespace flashc

#endif // FLASHC_LIB_TARGET_EXTERNALTOOL_H
