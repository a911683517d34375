//===- Ptxas.cpp - PTX -> cubin through the CUDA toolkit's ptxas ----------===//
//
// ptxas runs as a child process so its own diagnostics (and -v's resource
// report) reach the user unchanged.
//
//===----------------------------------------------------------------------===//

#include "flashc/Target/GpuTarget.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FileUtilities.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/raw_ostream.h"

namespace flashc {

std::optional<std::string> findPtxas(llvm::StringRef cudaRoot) {
  llvm::SmallVector<std::string> roots;
  if (!cudaRoot.empty())
    roots.push_back(cudaRoot.str());
  for (const char *variable : {"CUDA_HOME", "CUDA_PATH", "CUDA_ROOT"}) {
    if (const char *value = std::getenv(variable))
      roots.push_back(value);
  }
  for (const std::string &root : roots) {
    llvm::SmallString<256> path(root);
    llvm::sys::path::append(path, "bin", "ptxas");
    if (llvm::sys::fs::can_execute(path))
      return std::string(path);
  }
  if (llvm::ErrorOr<std::string> onPath = llvm::sys::findProgramByName("ptxas"))
    return *onPath;
  return std::nullopt;
}

/// Reads a whole file, or an error naming it.
static llvm::Expected<std::string> readFile(llvm::StringRef path) {
  llvm::ErrorOr<std::unique_ptr<llvm::MemoryBuffer>> buffer =
      llvm::MemoryBuffer::getFile(path, /*IsText=*/false);
  if (!buffer)
    return llvm::createStringError(buffer.getError(), "cannot read '%s'",
                                   path.str().c_str());
  return (*buffer)->getBuffer().str();
}

llvm::Expected<Cubin> assembleCubin(llvm::StringRef ptx,
                                    const GpuTargetOptions &options) {
  std::optional<std::string> ptxas = findPtxas(options.cudaRoot);
  if (!ptxas)
    return llvm::createStringError(
        "ptxas not found (looked in %s/bin, CUDA_HOME, CUDA_PATH and PATH): "
        "install the CUDA toolkit or pass --cuda-root; --emit=ptx needs no "
        "ptxas",
        options.cudaRoot.c_str());

  llvm::SmallString<128> ptxPath, cubinPath, logPath;
  for (auto [path, suffix] :
       {std::pair{&ptxPath, "ptx"}, std::pair{&cubinPath, "cubin"},
        std::pair{&logPath, "log"}}) {
    if (std::error_code ec =
            llvm::sys::fs::createTemporaryFile("flashc", suffix, *path))
      return llvm::createStringError(ec, "cannot create a temporary file");
  }
  llvm::FileRemover removePtx(ptxPath), removeCubin(cubinPath),
      removeLog(logPath);
  {
    std::error_code ec;
    llvm::raw_fd_ostream out(ptxPath, ec);
    if (ec)
      return llvm::createStringError(ec, "cannot write '%s'", ptxPath.c_str());
    out << ptx;
  }

  std::string archFlag = "-arch=" + options.arch;
  std::string optFlag = "-O" + std::to_string(std::min(options.optLevel, 3u));
  llvm::SmallVector<llvm::StringRef> args = {*ptxas,  archFlag, optFlag,  "-v",
                                             ptxPath, "-o",     cubinPath};
  std::optional<llvm::StringRef> redirects[] = {std::nullopt, logPath, logPath};
  std::string execError;
  int status = llvm::sys::ExecuteAndWait(*ptxas, args, std::nullopt, redirects,
                                         0, 0, &execError);
  llvm::Expected<std::string> log = readFile(logPath);
  std::string output = log ? *log : std::string();
  if (!log)
    llvm::consumeError(log.takeError());
  if (status != 0)
    return llvm::createStringError("ptxas (%s) failed%s%s:\n%s", ptxas->c_str(),
                                   execError.empty() ? "" : ": ",
                                   execError.c_str(), output.c_str());

  llvm::Expected<std::string> bytes = readFile(cubinPath);
  if (!bytes)
    return bytes.takeError();
  return Cubin{std::move(*bytes), std::move(output)};
}

} // namespace flashc
