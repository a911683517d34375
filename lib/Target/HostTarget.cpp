//===- HostTarget.cpp - LLVM dialect -> host object -> shared library -----===//
//
// The object comes from LLVM's TargetMachine in process; linking it into a
// shared library is left to the system's C compiler driver (`cc -shared`),
// which knows the platform's linker, crt files and libgcc: the kernel's f16
// conversions are calls into libgcc on hosts without F16C. Its bf16
// truncations are calls to compiler-rt's __truncsfbf2, which GCC 12's libgcc
// (Debian 12's) lacks, so the module carries its own hidden definition.
//
//===----------------------------------------------------------------------===//

#include "flashc/Target/HostTarget.h"

#include "ExternalTool.h"

#include "mlir/ExecutionEngine/OptUtils.h"
#include "mlir/Target/LLVMIR/Dialect/Builtin/BuiltinToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Export.h"
#include "llvm/IR/IRBuilder.h"
#include "llvm/IR/LegacyPassManager.h"
#include "llvm/MC/MCSubtargetInfo.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Target/TargetMachine.h"
#include "llvm/Target/TargetOptions.h"
#include "llvm/TargetParser/Host.h"
#include "llvm/TargetParser/SubtargetFeature.h"

namespace flashc {

std::string hostTriple(const HostTargetOptions &options) {
  return options.triple.empty() ? llvm::sys::getDefaultTargetTriple()
                                : options.triple;
}

std::string hostCpu(const HostTargetOptions &options) {
  return options.cpu == "native" ? llvm::sys::getHostCPUName().str()
                                 : options.cpu;
}

namespace {

/// The features of `options.cpu`: for "native", those the host reports
/// (a CPU name alone would also enable what a VM may hide); else the
/// named CPU's own.
std::string hostFeatures(const HostTargetOptions &options) {
  if (options.cpu != "native")
    return "";
  llvm::SubtargetFeatures features;
  for (const llvm::StringMapEntry<bool> &feature :
       llvm::sys::getHostCPUFeatures())
    features.AddFeature(feature.getKey(), feature.getValue());
  return features.getString();
}

llvm::CodeGenOptLevel codeGenLevel(unsigned optLevel) {
  switch (optLevel) {
  case 0:
    return llvm::CodeGenOptLevel::None;
  case 1:
    return llvm::CodeGenOptLevel::Less;
  case 2:
    return llvm::CodeGenOptLevel::Default;
  default:
    return llvm::CodeGenOptLevel::Aggressive;
  }
}

llvm::Expected<std::unique_ptr<llvm::TargetMachine>>
createHostTargetMachine(const HostTargetOptions &options) {
  // Only the native target is needed; the NVPTX one is initialized by the
  // GPU path. Both calls are idempotent.
  llvm::InitializeNativeTarget();
  llvm::InitializeNativeTargetAsmPrinter();
  llvm::Triple triple(hostTriple(options));
  std::string error;
  const llvm::Target *target =
      llvm::TargetRegistry::lookupTarget(triple, error);
  if (!target)
    return llvm::createStringError("no LLVM target for '%s': %s",
                                   triple.str().c_str(), error.c_str());
  // Position-independent code: the object goes into a shared library.
  std::string cpu = hostCpu(options);
  std::unique_ptr<llvm::TargetMachine> machine(target->createTargetMachine(
      triple, cpu, hostFeatures(options), llvm::TargetOptions(),
      llvm::Reloc::PIC_, std::nullopt, codeGenLevel(options.optLevel)));
  if (!machine)
    return llvm::createStringError("cannot create a target machine for '%s' "
                                   "(cpu '%s')",
                                   triple.str().c_str(), cpu.c_str());
  if (!machine->getMCSubtargetInfo()->isCPUStringValid(cpu))
    return llvm::createStringError("'%s' is no CPU of %s (use 'generic', "
                                   "'native' or an LLVM CPU name such as "
                                   "x86-64-v3)",
                                   cpu.c_str(), triple.str().c_str());
  return machine;
}

/// Defines `__truncsfbf2` (f32 -> bf16, round to nearest even, NaN kept
/// quiet) in `module`, hidden, so the library resolves the calls the
/// backend makes where the CPU has no bf16 conversion: for the kernel's
/// truncations and for bf16 values it promotes to f32 (the boundary
/// masks' selects and phis), which no IR-level rewrite can reach.
/// linkonce_odr, so that objects linked together keep one copy.
void defineBf16Truncation(llvm::Module &module) {
  constexpr llvm::StringLiteral name = "__truncsfbf2";
  if (module.getFunction(name))
    return;
  llvm::LLVMContext &context = module.getContext();
  auto *type = llvm::FunctionType::get(llvm::Type::getBFloatTy(context),
                                       {llvm::Type::getFloatTy(context)},
                                       /*isVarArg=*/false);
  auto *function = llvm::Function::Create(
      type, llvm::GlobalValue::LinkOnceODRLinkage, name, module);
  function->setVisibility(llvm::GlobalValue::HiddenVisibility);
  function->setDoesNotThrow();
  llvm::IRBuilder<> b(llvm::BasicBlock::Create(context, "entry", function));
  llvm::Value *x = function->getArg(0);
  llvm::Value *bits = b.CreateBitCast(x, b.getInt32Ty());
  llvm::Value *high = b.CreateLShr(bits, 16);
  llvm::Value *lsb = b.CreateAnd(high, 1);
  llvm::Value *rounded =
      b.CreateLShr(b.CreateAdd(bits, b.CreateAdd(b.getInt32(0x7FFF), lsb)), 16);
  llvm::Value *quietNaN = b.CreateOr(high, 0x40);
  llvm::Value *isNaN = b.CreateFCmpUNO(x, x);
  llvm::Value *result = b.CreateSelect(isNaN, quietNaN, rounded);
  b.CreateRet(
      b.CreateBitCast(b.CreateTrunc(result, b.getInt16Ty()), b.getBFloatTy()));
}

} // namespace

llvm::Expected<std::unique_ptr<llvm::Module>>
translateForHost(mlir::ModuleOp module, llvm::LLVMContext &context,
                 const HostTargetOptions &options) {
  llvm::Expected<std::unique_ptr<llvm::TargetMachine>> machine =
      createHostTargetMachine(options);
  if (!machine)
    return machine.takeError();
  mlir::MLIRContext *mlirContext = module->getContext();
  mlir::registerBuiltinDialectTranslation(*mlirContext);
  mlir::registerLLVMDialectTranslation(*mlirContext);
  std::unique_ptr<llvm::Module> llvmModule =
      mlir::translateModuleToLLVMIR(module, context);
  if (!llvmModule)
    return llvm::createStringError(
        "cannot translate the lowered module to LLVM IR (see the "
        "diagnostics above)");
  llvmModule->setTargetTriple((*machine)->getTargetTriple());
  llvmModule->setDataLayout((*machine)->createDataLayout());
  if (llvm::Error error = mlir::makeOptimizingTransformer(
          options.optLevel, /*sizeLevel=*/0, machine->get())(llvmModule.get()))
    return std::move(error);
  // After the optimizer, which would drop it: nothing calls it until the
  // backend does.
  defineBf16Truncation(*llvmModule);
  return llvmModule;
}

llvm::Expected<std::string> emitHostObject(llvm::Module &module,
                                           const HostTargetOptions &options) {
  llvm::Expected<std::unique_ptr<llvm::TargetMachine>> machine =
      createHostTargetMachine(options);
  if (!machine)
    return machine.takeError();
  llvm::SmallString<0> object;
  llvm::raw_svector_ostream os(object);
  llvm::legacy::PassManager passes;
  if ((*machine)->addPassesToEmitFile(passes, os, nullptr,
                                      llvm::CodeGenFileType::ObjectFile))
    return llvm::createStringError("the target machine for '%s' cannot emit "
                                   "object files",
                                   hostTriple(options).c_str());
  passes.run(module);
  return std::string(object.str());
}

llvm::Expected<std::string>
linkSharedLibrary(llvm::StringRef object, const HostTargetOptions &options) {
  llvm::ErrorOr<std::string> linker =
      llvm::sys::findProgramByName(options.linker);
  if (!linker)
    return llvm::createStringError(
        linker.getError(),
        "cannot find the C compiler driver '%s' that links the shared "
        "library (install a C compiler, e.g. Debian's gcc)",
        options.linker.c_str());

  llvm::Expected<ToolOutput> library = runOnTemporaryFiles(
      *linker,
      "linking the shared library with '" + *linker + " -shared'", object,
      "o", "so", [](llvm::StringRef in, llvm::StringRef out) {
        return llvm::SmallVector<std::string>{"-shared", in.str(), "-o",
                                              out.str(), "-lm"};
      });
  if (!library)
    return library.takeError();
  return std::move(library->output);
}

} // namespace flashc
