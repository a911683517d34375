//===- HostKernel.cpp - kernel IR -> host shared library (the CPU path) ---===//
//
// The CPU path runs the tile program the GPU path lowers (-flash-tile,
// -flash-fuse) as loops on the host: slow, but it lets compile-on-first-use,
// the cache and the dispatch run end to end on machines without a GPU. The
// kernel's function keeps its signature and gets MLIR's C interface, so the
// library's entry point is `_mlir_ciface_<function>`, taking one pointer to
// a memref descriptor per argument.
//
//===----------------------------------------------------------------------===//

#include "HostKernel.h"

#include "Flash/FlashOps.h"
#include "flashc/Target/HostTarget.h"
#include "flashc/Target/KernelMetadata.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Pass/PassManager.h"

using namespace mlir;

namespace flashc {

namespace {

llvm::Error diagnosed(llvm::StringRef stage) {
  return llvm::make_error<DiagnosedFailure>(stage.str());
}

std::string printOperation(Operation *op) {
  std::string text;
  llvm::raw_string_ostream os(text);
  op->print(os);
  return text;
}

/// The kernel function and its attention op (flash.attention or
/// flash.attention_backward), before lowering.
struct HostKernel {
  func::FuncOp function;
  Operation *attention;
};

/// The one function holding an attention op: the library exports one entry
/// point, so the module must say which function that is.
FailureOr<HostKernel> findHostKernel(ModuleOp module) {
  SmallVector<Operation *> ops;
  module.walk([&](Operation *op) {
    if (isa<flash::AttentionOp, flash::AttentionBackwardOp>(op))
      ops.push_back(op);
  });
  if (ops.size() != 1)
    return module.emitError()
           << "the CPU target compiles one kernel: expected exactly one "
              "flash.attention or flash.attention_backward, found "
           << ops.size();
  Operation *op = ops.front();
  auto function = op->getParentOfType<func::FuncOp>();
  if (!function)
    return op->emitOpError() << "must be inside a func.func for the CPU target";
  // kernel.json names no cu_seqlens or max_seqlen argument yet.
  bool packed = isa<flash::AttentionOp>(op)
                    ? cast<flash::AttentionOp>(op).isPacked()
                    : cast<flash::AttentionBackwardOp>(op).isPacked();
  if (packed)
    return op->emitOpError()
           << "packed sequences (cu_seqlens) are not supported by CPU "
              "libraries yet (the execution engine runs them: "
              "buildCpuReferencePipeline)";
  return HostKernel{function, op};
}

/// The fields of kernel.json that the forward and backward ops share: the
/// element type, head dim, mask and scale, and the config's tile sizes.
template <typename OpT>
llvm::json::Object commonContract(OpT op, const TileOverrides &overrides) {
  Type element = cast<MemRefType>(op.getQ().getType()).getElementType();
  llvm::json::Object contract{
      {"dtype", isa<BFloat16Type>(element) ? "bf16" : "f16"},
      {"head_dim", op.getHeadDim()},
      {"causal", op.getCausal()},
      {"scale", static_cast<double>(op.getEffectiveScale())},
  };
  if (flash::ConfigAttr config = op.getConfigAttr()) {
    contract["config"] = llvm::json::Object{
        {"block_m", overrides.blockM ? overrides.blockM : config.getBlockM()},
        {"block_n", overrides.blockN ? overrides.blockN : config.getBlockN()}};
  }
  return contract;
}

/// kernel.json's name of a capture's element type.
llvm::StringRef captureDType(MemRefType type) {
  Type element = type.getElementType();
  if (element.isF32())
    return "f32";
  if (element.isInteger(32))
    return "i32";
  return isa<BFloat16Type>(element) ? "bf16" : "f16";
}

/// What the library's entry point computes and takes, for kernel.json: the
/// GPU kernel's fields that still mean something on the host, and its
/// arguments in order, each named after the attention operand it is; the
/// captures, sinks and dsinks (the function's last arguments) as the GPU
/// kernel.json names them: {"kind": "memref", "capture": i, "rank": r}
/// and "captures"[i] = {"role", "dtype", "rank", "shape"}.
FailureOr<llvm::json::Object> hostContract(HostKernel kernel,
                                           const TileOverrides &overrides) {
  llvm::json::Object contract;
  SmallVector<std::pair<Value, llvm::StringLiteral>> operands;
  SmallVector<std::pair<Value, llvm::StringLiteral>> captures;
  if (auto op = dyn_cast<flash::AttentionOp>(kernel.attention)) {
    contract = commonContract(op, overrides);
    contract["has_lse"] = static_cast<bool>(op.getLse());
    operands = {{op.getQ(), "q"},
                {op.getK(), "k"},
                {op.getV(), "v"},
                {op.getO(), "o"},
                {op.getLse(), "lse"}};
    // Decoding: a paged cache's table and lengths (K and V its pages, the
    // page size their seq dimension), split-KV's scratch, GQA packing.
    if (op.isPaged()) {
      contract["page_size"] =
          cast<MemRefType>(op.getK().getType()).getDimSize(2);
      operands.push_back({op.getPageTable(), "page_table"});
      operands.push_back({op.getCacheLens(), "cache_seqlens"});
    }
    if (op.isSplit()) {
      contract["splits"] = true;
      operands.push_back({op.getPartialOut(), "partial_out"});
      operands.push_back({op.getPartialLse(), "partial_lse"});
    }
    if (op.getPackGqa())
      contract["pack_gqa"] = true;
  } else {
    auto backward = cast<flash::AttentionBackwardOp>(kernel.attention);
    contract = commonContract(backward, overrides);
    // The backward reads the forward's LSE; it writes none.
    contract["has_lse"] = false;
    contract["pass"] = "backward";
    contract["deterministic"] = backward.getDeterministic();
    operands = {{backward.getQ(), "q"},   {backward.getK(), "k"},
                {backward.getV(), "v"},   {backward.getO(), "o"},
                {backward.getDO(), "do"}, {backward.getLse(), "lse"},
                {backward.getDQ(), "dq"}, {backward.getDK(), "dk"},
                {backward.getDV(), "dv"}};
  }
  auto collectCaptures = [&](auto op) {
    for (Value capture : op.getCaptures())
      captures.push_back({capture, "capture"});
    if (Value sinks = op.getSinks())
      captures.push_back({sinks, "sinks"});
  };
  if (auto op = dyn_cast<flash::AttentionOp>(kernel.attention)) {
    collectCaptures(op);
  } else {
    auto backward = cast<flash::AttentionBackwardOp>(kernel.attention);
    collectCaptures(backward);
    if (Value dSinks = backward.getDSinks())
      captures.push_back({dSinks, "dsinks"});
  }

  llvm::json::Array params, captureSpecs;
  for (BlockArgument argument : kernel.function.getArguments()) {
    const auto *operand = llvm::find_if(
        operands, [&](auto &entry) { return entry.first == argument; });
    auto type = dyn_cast<MemRefType>(argument.getType());
    const auto *capture = llvm::find_if(
        captures, [&](auto &entry) { return entry.first == argument; });
    if (operand == operands.end() && capture != captures.end() && type) {
      llvm::json::Array shape;
      for (int64_t size : type.getShape())
        shape.push_back(ShapedType::isDynamic(size) ? int64_t(-1) : size);
      params.push_back(
          llvm::json::Object{{"kind", "memref"},
                             {"capture", int64_t(captureSpecs.size())},
                             {"rank", type.getRank()}});
      captureSpecs.push_back(llvm::json::Object{{"role", capture->second},
                                                {"dtype", captureDType(type)},
                                                {"rank", type.getRank()},
                                                {"shape", std::move(shape)}});
      continue;
    }
    if (operand == operands.end() || !type)
      return kernel.function.emitOpError()
             << "argument " << argument.getArgNumber()
             << " is not an operand of its " << kernel.attention->getName()
             << ": the CPU target's entry point takes exactly the "
                "attention's memrefs";
    params.push_back(llvm::json::Object{{"kind", "memref"},
                                        {"tensor", operand->second},
                                        {"rank", type.getRank()}});
  }
  if (params.size() != static_cast<size_t>(kernel.attention->getNumOperands()))
    return kernel.function.emitOpError()
           << "takes " << params.size() << " arguments but its "
           << kernel.attention->getName() << " "
           << kernel.attention->getNumOperands()
           << " operands: the CPU target's entry point takes each operand as "
              "an argument";
  contract["params"] = std::move(params);
  if (!captureSpecs.empty())
    contract["captures"] = std::move(captureSpecs);
  return contract;
}

} // namespace

llvm::Expected<CompiledKernel>
compileHostKernel(ModuleOp module, const KernelCompileOptions &options) {
  if (options.stage == KernelStage::Ptx || options.stage == KernelStage::Cubin)
    return llvm::createStringError(
        "PTX and cubin are GPU artefacts: the CPU target writes the tile "
        "program, the lowered MLIR, LLVM IR or a shared library");
  if (!isKernelLevel(module))
    return llvm::createStringError(
        "the CPU target needs a kernel-level input (flash.attention)");

  CompiledKernel result;
  if (options.stage == KernelStage::Tile) {
    PassManager pm(module.getContext());
    buildTilePipeline(pm, options.overrides);
    if (failed(pm.run(module)))
      return diagnosed("conversion");
    result.artefact = printOperation(module);
    return result;
  }

  FailureOr<HostKernel> kernel = findHostKernel(module);
  if (failed(kernel))
    return diagnosed("metadata");
  FailureOr<llvm::json::Object> contract =
      hostContract(*kernel, options.overrides);
  if (failed(contract))
    return diagnosed("metadata");
  std::string entryPoint = ("_mlir_ciface_" + kernel->function.getName()).str();
  kernel->function->setAttr(LLVM::LLVMDialect::getEmitCWrapperAttrName(),
                            UnitAttr::get(module.getContext()));

  PassManager pm(module.getContext());
  buildCpuReferencePipeline(pm, options.overrides);
  if (failed(pm.run(module)))
    return diagnosed("conversion");
  if (options.stage == KernelStage::Mlir) {
    result.artefact = printOperation(module);
    return result;
  }

  llvm::LLVMContext llvmContext;
  llvm::Expected<std::unique_ptr<llvm::Module>> llvmModule =
      translateForHost(module, llvmContext, options.host);
  if (!llvmModule)
    return llvmModule.takeError();
  if (options.stage == KernelStage::LlvmIr) {
    llvm::raw_string_ostream os(result.artefact);
    (*llvmModule)->print(os, nullptr);
    return result;
  }

  llvm::Expected<std::string> object =
      emitHostObject(**llvmModule, options.host);
  if (!object)
    return object.takeError();
  llvm::Expected<std::string> library =
      linkSharedLibrary(*object, options.host);
  if (!library)
    return library.takeError();
  result.artefact = std::move(*library);
  (*contract)["host_cpu"] = hostCpu(options.host);
  result.metadata = withProvenance(
      std::move(*contract), entryPoint,
      {options.binaryName, "so", hostTriple(options.host), options.sourceHash});
  return result;
}

} // namespace flashc
