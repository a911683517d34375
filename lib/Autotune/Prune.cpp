//===- Prune.cpp - which configs can become a kernel ----------------------===//

#include "flashc/Autotune/Prune.h"
#include "flashc/Autotune/TunedPipeline.h"
#include "flashc/InitAll.h"
#include "flashc/Target/KernelMetadata.h"

#include "Flash/FlashAttrs.h"
#include "Flash/FlashOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Target/LLVMIR/Dialect/All.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/SourceMgr.h"

using namespace mlir;
using namespace flashc::tune;

std::unique_ptr<MLIRContext> flashc::tune::createTuneContext() {
  DialectRegistry registry;
  flashc::registerAllDialects(registry);
  registerAllToLLVMIRTranslations(registry);
  auto context =
      std::make_unique<MLIRContext>(registry, MLIRContext::Threading::DISABLED);
  context->printOpOnDiagnostic(false);
  return context;
}

/// Collects the error diagnostics emitted while it lives, as text.
class DiagnosticCollector {
public:
  explicit DiagnosticCollector(MLIRContext &context)
      : handler(&context, [this](Diagnostic &diag) {
          if (diag.getSeverity() == DiagnosticSeverity::Error) {
            if (!text.empty())
              text += "\n";
            text += diag.str();
          }
          return success();
        }) {}
  const std::string &getText() const { return text; }

private:
  std::string text;
  ScopedDiagnosticHandler handler;
};

static OwningOpRef<ModuleOp>
parseKernel(MLIRContext &context, llvm::StringRef text, llvm::StringRef path) {
  llvm::SourceMgr sourceMgr;
  sourceMgr.AddNewSourceBuffer(llvm::MemoryBuffer::getMemBufferCopy(text, path),
                               llvm::SMLoc());
  return parseSourceFile<ModuleOp>(sourceMgr, &context);
}

llvm::Expected<KernelSource> flashc::tune::loadKernelSource(StringRef path) {
  llvm::ErrorOr<std::unique_ptr<llvm::MemoryBuffer>> buffer =
      llvm::MemoryBuffer::getFileOrSTDIN(path);
  if (!buffer)
    return llvm::createStringError(buffer.getError(), "cannot read '%s': %s",
                                   path.str().c_str(),
                                   buffer.getError().message().c_str());
  KernelSource source;
  source.path = path.str();
  source.text = (*buffer)->getBuffer().str();
  source.hash = flashc::hashSource(source.text);

  std::unique_ptr<MLIRContext> context = createTuneContext();
  DiagnosticCollector diagnostics(*context);
  OwningOpRef<ModuleOp> module = parseKernel(*context, source.text, path);
  if (!module)
    return llvm::createStringError(llvm::inconvertibleErrorCode(), "%s: %s",
                                   path.str().c_str(),
                                   diagnostics.getText().c_str());
  SmallVector<flash::AttentionOp> ops;
  module->walk([&](flash::AttentionOp op) { ops.push_back(op); });
  if (ops.size() != 1)
    return llvm::createStringError(
        llvm::inconvertibleErrorCode(),
        "%s: flash-tune tunes one kernel: expected exactly one "
        "flash.attention, found %zu",
        path.str().c_str(), ops.size());
  flash::AttentionOp op = ops.front();
  auto func = op->getParentOfType<func::FuncOp>();
  source.kernel = func ? func.getSymName().str() : "attention";
  source.headDim = op.getHeadDim();
  source.causal = op.getCausal();
  Type element = cast<MemRefType>(op.getQ().getType()).getElementType();
  source.dtype = element.isBF16() ? "bf16" : element.isF16() ? "f16" : "other";
  return source;
}

std::optional<std::string>
flashc::tune::checkConfigAttr(MLIRContext &context, const TuneConfig &config) {
  context.getOrLoadDialect<flash::FlashDialect>();
  std::string message;
  auto emitError = [&]() { return mlir::emitError(UnknownLoc::get(&context)); };
  DiagnosticCollector diagnostics(context);
  flash::ConfigAttr attr = flash::ConfigAttr::getChecked(
      emitError, &context, config.blockM, config.blockN, config.stages,
      config.warpgroups, config.switches);
  if (attr)
    return std::nullopt;
  return diagnostics.getText();
}

std::optional<std::string>
flashc::tune::checkRegisterFit(int64_t accumulatorRegs, int64_t consumerRegs) {
  int64_t need = accumulatorRegs + kRegisterFloor;
  if (need <= consumerRegs)
    return std::nullopt;
  return "needs at least " + std::to_string(need) +
         " registers per consumer thread (" + std::to_string(accumulatorRegs) +
         " live accumulators, " + std::to_string(kRegisterFloor) +
         " other), setmaxnreg gives " + std::to_string(consumerRegs) +
         ": it would spill";
}

/// What the kernel records: its schedule (flash.schedule, the switches
/// -flash-gpu-schedule applied) and, in flash.launch, its register counts.
static bool readLaunch(ModuleOp module, const TuneConfig &asked,
                       LoweredKernel &lowered) {
  bool found = false;
  module.walk([&](gpu::GPUFuncOp func) {
    auto launch = func->getAttrOfType<DictionaryAttr>(flashc::kLaunchAttrName);
    auto config = launch ? launch.getAs<DictionaryAttr>("config") : nullptr;
    auto schedule =
        func->getAttrOfType<flash::ScheduleAttr>(flash::kScheduleAttrName);
    if (!config || !schedule)
      return;
    auto c = [&](StringRef key) -> int64_t {
      auto value = config.getAs<IntegerAttr>(key);
      return value ? value.getInt() : -1;
    };
    lowered.applied = asked;
    lowered.applied.switches = schedule.getSwitches();
    // The claimed-tiles switch only changes persistent causal kernels;
    // elsewhere the applied config keeps #flash.config's default, so it
    // names the same kernel as the config that asked for it.
    auto causal = launch.getAs<BoolAttr>("causal");
    if (!lowered.applied.switches.persistent || !causal || !causal.getValue())
      lowered.applied.switches.dynamicSchedule = true;
    lowered.accumulatorRegs = c("accumulator_regs");
    lowered.consumerRegs = schedule.getConsumerRegs();
    found = true;
  });
  return found;
}

llvm::Expected<LoweredKernel>
flashc::tune::lowerCandidate(MLIRContext &context, const KernelSource &source,
                             const TuneConfig &config, StringRef arch) {
  DiagnosticCollector diagnostics(context);
  LoweredKernel lowered;
  lowered.module = parseKernel(context, source.text, source.path);
  if (!lowered.module)
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   diagnostics.getText());
  PassManager pm(&context);
  buildTunedKernelPipeline(pm, config, arch);
  if (failed(pm.run(*lowered.module)))
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   diagnostics.getText());
  if (!readLaunch(*lowered.module, config, lowered))
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   "the conversion recorded no flash.launch "
                                   "config or flash.schedule");
  return lowered;
}
