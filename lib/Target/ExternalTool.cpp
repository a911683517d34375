//===- ExternalTool.cpp - running ptxas or cc on temporary files ----------===//

#include "ExternalTool.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FileUtilities.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/raw_ostream.h"

namespace flashc {

llvm::Expected<std::string> readFile(llvm::StringRef path) {
  llvm::ErrorOr<std::unique_ptr<llvm::MemoryBuffer>> buffer =
      llvm::MemoryBuffer::getFile(path, /*IsText=*/false);
  if (!buffer)
    return llvm::createStringError(buffer.getError(), "cannot read '%s'",
                                   path.str().c_str());
  return (*buffer)->getBuffer().str();
}

llvm::Expected<ToolOutput> runOnTemporaryFiles(
    llvm::StringRef tool, llvm::StringRef description, llvm::StringRef input,
    llvm::StringRef inputSuffix, llvm::StringRef outputSuffix,
    llvm::function_ref<llvm::SmallVector<std::string>(llvm::StringRef,
                                                      llvm::StringRef)>
        arguments) {
  llvm::SmallString<128> inPath, outPath, logPath;
  for (auto [path, suffix] :
       {std::pair{&inPath, inputSuffix}, std::pair{&outPath, outputSuffix},
        std::pair{&logPath, llvm::StringRef("log")}}) {
    if (std::error_code ec =
            llvm::sys::fs::createTemporaryFile("flashc", suffix, *path))
      return llvm::createStringError(ec, "cannot create a temporary file");
  }
  llvm::FileRemover removeIn(inPath), removeOut(outPath), removeLog(logPath);
  {
    std::error_code ec;
    llvm::raw_fd_ostream out(inPath, ec, llvm::sys::fs::OF_None);
    if (ec)
      return llvm::createStringError(ec, "cannot write '%s'", inPath.c_str());
    out << input;
  }

  llvm::SmallVector<std::string> toolArgs = arguments(inPath, outPath);
  llvm::SmallVector<llvm::StringRef> args = {tool};
  args.append(toolArgs.begin(), toolArgs.end());
  std::optional<llvm::StringRef> redirects[] = {std::nullopt, logPath, logPath};
  std::string execError;
  int status = llvm::sys::ExecuteAndWait(tool, args, std::nullopt, redirects,
                                         0, 0, &execError);
  llvm::Expected<std::string> log = readFile(logPath);
  std::string output = log ? *log : std::string();
  if (!log)
    llvm::consumeError(log.takeError());
  if (status != 0)
    return llvm::createStringError(
        "%s failed%s%s:\n%s", description.str().c_str(),
        execError.empty() ? "" : ": ", execError.c_str(), output.c_str());

  llvm::Expected<std::string> bytes = readFile(outPath);
  if (!bytes)
    return bytes.takeError();
  return ToolOutput{std::move(*bytes), std::move(output)};
}

} // namespace flashc
