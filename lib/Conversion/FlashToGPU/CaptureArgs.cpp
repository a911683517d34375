//===- CaptureArgs.cpp - memref arguments a kernel takes whole ------------===//

#include "CaptureArgs.h"

#include "llvm/ADT/STLExtras.h"

using namespace mlir;
using namespace mlir::flash::gpu_lowering;

static StringRef roleName(CaptureRole role) {
  switch (role) {
  case CaptureRole::Capture:
    return "capture";
  case CaptureRole::Sinks:
    return "sinks";
  case CaptureRole::SinksGrad:
    return "dsinks";
  }
  llvm_unreachable("unknown capture role");
}

static StringRef dtypeName(Type type) {
  if (type.isF32())
    return "f32";
  if (type.isInteger(32))
    return "i32";
  if (type.isBF16())
    return "bf16";
  if (type.isF16())
    return "f16";
  return "";
}

FailureOr<SmallVector<CaptureArg>>
mlir::flash::gpu_lowering::collectCaptureArgs(func::FuncOp func,
                                              ArrayRef<CaptureUse> uses) {
  SmallVector<CaptureArg> captures;
  for (const CaptureUse &use : uses) {
    auto arg = dyn_cast<BlockArgument>(use.value);
    if (!arg || arg.getOwner() != &func.getBody().front())
      return use.user->emitError("flash-to-gpu: a ")
             << roleName(use.role)
             << " must be an argument of the function (the kernel takes it "
                "as a parameter)";
    auto type = cast<MemRefType>(arg.getType());
    if (type.getRank() < 1 || type.getRank() > 4 ||
        !type.getLayout().isIdentity() ||
        dtypeName(type.getElementType()).empty())
      return use.user->emitError("flash-to-gpu: a ")
             << roleName(use.role)
             << " must be a row-major memref of rank 1 to 4 of f32, i32, "
                "bf16 or f16 on the GPU, got "
             << type;
    if (use.role != CaptureRole::Capture &&
        (type.getRank() != 1 || !type.getElementType().isF32()))
      return use.user->emitError("flash-to-gpu: the ")
             << roleName(use.role) << " must be a rank-1 f32 memref, got "
             << type;
    std::optional<unsigned> known = captureIndexOf(captures, arg);
    if (!known)
      captures.push_back({arg.getArgNumber(), type, use.role});
    else if (use.role != CaptureRole::Capture)
      captures[*known].role = use.role;
  }
  llvm::sort(captures, [](const CaptureArg &a, const CaptureArg &b) {
    return a.argNumber < b.argNumber;
  });
  unsigned first = func.getNumArguments() - captures.size();
  for (auto [i, capture] : llvm::enumerate(captures))
    if (capture.argNumber != first + i)
      return func.emitError("flash-to-gpu: the captures and sinks must be "
                            "the function's last arguments; argument #")
             << capture.argNumber << " is not";
  return captures;
}

std::optional<KeyRanges>
mlir::flash::gpu_lowering::keyRangesOf(ModScoresOp mods,
                                       ArrayRef<CaptureArg> captures) {
  std::optional<ArrayRef<int64_t>> ranges = mods.getKeyRanges();
  if (!ranges)
    return std::nullopt;
  auto table = cast<BlockArgument>(mods.getCaptures()[(*ranges)[0]]);
  unsigned index = *captureIndexOf(captures, table);
  return KeyRanges{index, (*ranges)[1],
                   captures[index].type.getDimSize(2) == 4};
}

std::optional<unsigned>
mlir::flash::gpu_lowering::captureIndexOf(ArrayRef<CaptureArg> captures,
                                          BlockArgument arg) {
  for (auto [i, capture] : llvm::enumerate(captures))
    if (capture.argNumber == arg.getArgNumber())
      return i;
  return std::nullopt;
}

ArrayAttr
mlir::flash::gpu_lowering::capturesAttr(Builder &b,
                                        ArrayRef<CaptureArg> captures) {
  SmallVector<Attribute> entries;
  for (const CaptureArg &capture : captures) {
    // The sizes the source fixes (-1: any), which the runtime holds calls
    // to.
    SmallVector<int64_t> shape;
    for (int64_t size : capture.type.getShape())
      shape.push_back(ShapedType::isDynamic(size) ? -1 : size);
    entries.push_back(b.getDictionaryAttr(
        {b.getNamedAttr("role", b.getStringAttr(roleName(capture.role))),
         b.getNamedAttr("dtype", b.getStringAttr(
                                     dtypeName(capture.type.getElementType()))),
         b.getNamedAttr("rank", b.getI64IntegerAttr(capture.type.getRank())),
         b.getNamedAttr("shape", b.getDenseI64ArrayAttr(shape))}));
  }
  return b.getArrayAttr(entries);
}

DictionaryAttr
mlir::flash::gpu_lowering::captureParamAttr(Builder &b, unsigned index,
                                            const CaptureArg &capture) {
  return b.getDictionaryAttr(
      {b.getNamedAttr("kind", b.getStringAttr("memref")),
       b.getNamedAttr("capture", b.getI64IntegerAttr(index)),
       b.getNamedAttr("rank", b.getI64IntegerAttr(capture.type.getRank()))});
}

std::optional<unsigned>
mlir::flash::gpu_lowering::findCapture(ArrayRef<CaptureArg> captures,
                                       CaptureRole role) {
  for (auto [i, capture] : llvm::enumerate(captures))
    if (capture.role == role)
      return i;
  return std::nullopt;
}
