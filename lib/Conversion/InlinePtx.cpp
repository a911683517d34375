//===- InlinePtx.cpp - every inline PTX use of flashc ---------------------===//
//
// The only `llvm.inline_asm` flashc emits: the warpgroup patterns
// (FlashWarpgroupToNVVM/) and the kernel's emitter (FlashToGPU/) call these.
// Everything else in the kernel is an upstream gpu/nvgpu/nvvm/llvm op; these
// two have no MLIR 22 op (docs/gpu-kernel.md, "Inline PTX: every use").
//
//===----------------------------------------------------------------------===//

#include "InlinePtx.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FormatVariadic.h"

using namespace mlir;

static LLVM::InlineAsmOp createAsm(ImplicitLocOpBuilder &b, Type resultType,
                                   ValueRange operands, StringRef asmString,
                                   StringRef constraints) {
  return LLVM::InlineAsmOp::create(
      b, resultType, operands, asmString, constraints,
      /*has_side_effects=*/true, /*is_align_stack=*/false,
      LLVM::tailcallkind::TailCallKind::None,
      LLVM::AsmDialectAttr::get(b.getContext(), LLVM::AsmDialect::AD_ATT),
      /*operand_attrs=*/ArrayAttr());
}

/// Use 1: `wgmma.mma_async ... m64n{N}k16.f32.{bf16,f16}.{bf16,f16}` with the
/// A operand from registers (flash.wg.mma, MmaToNVVM.cpp). MLIR 22's
/// `nvvm.wgmma.mma_async` (and `nvgpu.warpgroup.mma`) take A only as a
/// shared-memory descriptor (`I64:$descriptorA`); feeding P from registers
/// avoids a 32 KB shared memory round trip and a fence per key tile.
/// (Upstream's own `nvvm.wgmma.mma_async` is lowered to inline asm by
/// convert-nvvm-to-llvm.)
/// Operands: $0..$N/2-1 the f32 accumulators (tied in/out), 4 x b32 of A,
/// the B descriptor, and the scale-d immediate; imm-scale-a and imm-scale-b
/// are 1, imm-trans-b is 1 for an MN-major B.
Value mlir::flash::createWgmmaRegA(ImplicitLocOpBuilder &b, Type accType,
                                   Type elementType, int64_t n,
                                   ArrayRef<Value> aRegs, Value descB,
                                   bool transposeB, ValueRange accIn,
                                   Value scaleD) {
  int64_t numAcc = accIn.size();
  StringRef ty = isa<BFloat16Type>(elementType) ? "bf16" : "f16";
  SmallVector<std::string> outs, constraints;
  for (int64_t i = 0; i < numAcc; ++i) {
    outs.push_back("$" + std::to_string(i));
    constraints.push_back("=f");
  }
  std::string asmString = llvm::formatv(
      "{{\n.reg .pred p;\nsetp.ne.b32 p, ${0}, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n{1}k16.f32.{2}.{2} {{{3}}, "
      "{{${4}, ${5}, ${6}, ${7}}, ${8}, p, 1, 1, {9};\n}",
      numAcc + 5, n, ty, llvm::join(outs, ", "), numAcc, numAcc + 1, numAcc + 2,
      numAcc + 3, numAcc + 4, transposeB ? 1 : 0);
  constraints.append({"r", "r", "r", "r", "l", "n"});
  for (int64_t i = 0; i < numAcc; ++i)
    constraints.push_back(std::to_string(i));
  SmallVector<Value> operands(aRegs.begin(), aRegs.end());
  operands.push_back(descB);
  operands.push_back(scaleD);
  operands.append(accIn.begin(), accIn.end());
  return createAsm(b, accType, operands, asmString,
                   llvm::join(constraints, ","))
      .getResult(0);
}

/// Use 2: an empty asm with a tied register operand per accumulator value
/// after `wgmma.wait_group` (CUTLASS's `warpgroup_fence_operand`). It emits
/// no instruction; it only keeps LLVM from moving arithmetic on wgmma results
/// above the wait, which LLVM cannot know is required: the results of the
/// asynchronous wgmma exist in SSA from the moment it is issued.
Value mlir::flash::fenceOperand(ImplicitLocOpBuilder &b, Value v) {
  StringRef constraints = v.getType().isF32()         ? "=f,0"
                          : v.getType().isInteger(64) ? "=l,0"
                                                      : "=r,0";
  return createAsm(b, v.getType(), v, "", constraints).getResult(0);
}

Value mlir::flash::loadAcquireGpu(ImplicitLocOpBuilder &b, Value ptr) {
  return createAsm(b, b.getI32Type(), ptr,
                   "ld.acquire.gpu.global.u32 $0, [$1];", "=r,l")
      .getResult(0);
}

void mlir::flash::storeReleaseGpu(ImplicitLocOpBuilder &b, Value ptr,
                                  Value value) {
  createAsm(b, Type(), ValueRange{ptr, value},
            "st.release.gpu.global.u32 [$0], $1;", "l,r");
}

void mlir::flash::fenceAcqRelGpu(ImplicitLocOpBuilder &b) {
  createAsm(b, Type(), ValueRange(), "fence.acq_rel.gpu;", "");
}

/// Use: `tanh.approx.f32` for math.tanh in a score mod (ModScoresToLLVM.cpp).
/// LLVM 22 has no NVVM tanh intrinsic; its llvm.tanh becomes the
/// instruction only under the afn flag, which math.tanh's lowering does not
/// set, and otherwise a libdevice call of some twenty instructions.
Value mlir::flash::tanhApprox(ImplicitLocOpBuilder &b, Value x) {
  auto op = LLVM::InlineAsmOp::create(
      b, b.getF32Type(), ValueRange{x}, "tanh.approx.f32 $0, $1;", "=f,f",
      /*has_side_effects=*/false, /*is_align_stack=*/false,
      LLVM::tailcallkind::TailCallKind::None,
      LLVM::AsmDialectAttr::get(b.getContext(), LLVM::AsmDialect::AD_ATT),
      /*operand_attrs=*/ArrayAttr());
  return op.getResult(0);
}

Value mlir::flash::exp2FlushDenormals(ImplicitLocOpBuilder &b, Value x) {
  return LLVM::CallIntrinsicOp::create(
             b, x.getType(), b.getStringAttr("llvm.nvvm.ex2.approx.ftz.f32"),
             ValueRange{x})
      .getResult(0);
}
