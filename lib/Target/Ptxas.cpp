//===- Ptxas.cpp - PTX -> cubin through the CUDA toolkit's ptxas ----------===//
//
// ptxas runs as a child process so its own diagnostics (and -v's resource
// report) reach the user unchanged.
//
//===----------------------------------------------------------------------===//

#include "flashc/Target/GpuTarget.h"

#include "ExternalTool.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"

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

llvm::Expected<Cubin> assembleCubin(llvm::StringRef ptx,
                                    const GpuTargetOptions &options) {
  std::optional<std::string> ptxas = findPtxas(options.cudaRoot);
  if (!ptxas)
    return llvm::createStringError(
        "ptxas not found (looked in %s/bin, CUDA_HOME, CUDA_PATH and PATH): "
        "install the CUDA toolkit or pass --cuda-root; --emit=ptx needs no "
        "ptxas",
        options.cudaRoot.c_str());

  std::string archFlag = "-arch=" + options.arch;
  std::string optFlag = "-O" + std::to_string(std::min(options.optLevel, 3u));
  llvm::Expected<ToolOutput> cubin = runOnTemporaryFiles(
      *ptxas, "ptxas (" + *ptxas + ")", ptx, "ptx", "cubin",
      [&](llvm::StringRef in, llvm::StringRef out) {
        return llvm::SmallVector<std::string>{archFlag, optFlag, "-v",
                                              in.str(), "-o", out.str()};
      });
  if (!cubin)
    return cubin.takeError();
  return Cubin{std::move(cubin->output), std::move(cubin->log)};
}

} // namespace flashc
