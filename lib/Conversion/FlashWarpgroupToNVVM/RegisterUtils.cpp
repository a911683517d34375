//===- RegisterUtils.cpp - helpers of the flash.wg patterns -------------===//

#include "RegisterUtils.h"

#include "Flash/FlashOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

using namespace mlir;
using namespace mlir::flash;

Value wg_lowering::entryConstant(OpBuilder &builder, Operation *op,
                                 TypedAttr attr) {
  Operation *scope = op->getParentWithTrait<OpTrait::IsIsolatedFromAbove>();
  Block &entry = scope->getRegion(0).front();
  for (auto constant : entry.getOps<arith::ConstantOp>())
    if (constant.getValue() == attr)
      return constant;
  OpBuilder::InsertionGuard guard(builder);
  builder.setInsertionPointToStart(&entry);
  return arith::ConstantOp::create(builder, op->getLoc(), attr);
}

SmallVector<Value> wg_lowering::accumulatorRegisters(ImplicitLocOpBuilder &b,
                                                     Value accumulator) {
  auto type = cast<LLVM::LLVMStructType>(accumulator.getType());
  SmallVector<Value> registers;
  for (int64_t i = 0, e = type.getBody().size(); i < e; ++i)
    registers.push_back(LLVM::ExtractValueOp::create(b, accumulator, i));
  return registers;
}

Value wg_lowering::accumulatorFromRegisters(ImplicitLocOpBuilder &b,
                                            Type structType,
                                            ValueRange registers) {
  Value result = LLVM::UndefOp::create(b, structType);
  for (auto [i, v] : llvm::enumerate(registers))
    result = LLVM::InsertValueOp::create(b, result, v, i);
  return result;
}

SmallVector<Value> wg_lowering::rowRegisters(ArrayRef<Value> registers,
                                             int64_t r) {
  SmallVector<Value> row;
  for (auto [i, x] : llvm::enumerate(registers))
    if (rowHalf(i) == r)
      row.push_back(x);
  return row;
}

wg_lowering::ThreadPosition
wg_lowering::threadPosition(ImplicitLocOpBuilder &b, Operation *op) {
  // The kernel's own chain (thread in warpgroup, lane, warp), so CSE finds
  // the values it already has.
  auto i32 = b.getI32Type();
  auto c = [&](int64_t v) {
    return entryConstant(b, op, b.getI32IntegerAttr(v));
  };
  Value tid = arith::IndexCastOp::create(
      b, i32, gpu::ThreadIdOp::create(b, gpu::Dimension::x));
  Value thread = arith::RemUIOp::create(b, tid, c(128));
  Value lane = arith::RemUIOp::create(b, thread, c(32));
  Value warp = arith::DivUIOp::create(b, thread, c(32));
  Value quad = arith::RemUIOp::create(b, lane, c(4));
  Value laneRow = arith::DivUIOp::create(b, lane, c(4));
  Value warpRows = arith::MulIOp::create(b, warp, c(16));
  return {arith::AddIOp::create(b, warpRows, laneRow), laneRow, quad};
}

Value wg_lowering::threadColumnOffset(ImplicitLocOpBuilder &b,
                                      Operation *op) {
  return arith::MulIOp::create(b, threadPosition(b, op).quad,
                               entryConstant(b, op, b.getI32IntegerAttr(2)));
}

Value wg_lowering::packHalfPair(ImplicitLocOpBuilder &b, Operation *op,
                                Type elementType, Value lo, Value hi) {
  // llvm.fptrunc of a vector<2xf32> becomes one cvt.rn.{bf16,f16}x2.f32;
  // vector.from_elements/bitcast would not be lowered inside gpu-to-nvvm.
  auto f32 = b.getF32Type();
  auto i32 = b.getI32Type();
  auto v2f32 = VectorType::get({2}, f32);
  auto v2half = VectorType::get({2}, elementType);
  auto index = [&](int64_t v) {
    return entryConstant(b, op, b.getI32IntegerAttr(v));
  };
  Value u = LLVM::UndefOp::create(b, v2f32);
  Value v0 = LLVM::InsertElementOp::create(b, u, lo, index(0));
  Value v1 = LLVM::InsertElementOp::create(b, v0, hi, index(1));
  Value t = LLVM::FPTruncOp::create(b, v2half, v1);
  return LLVM::BitcastOp::create(b, i32, t);
}

SmallVector<Value> mlir::flash::wg_lowering::ifThenElse(
    OpBuilder &b, Location loc, Value cond, TypeRange types,
    function_ref<SmallVector<Value>()> thenFn,
    function_ref<SmallVector<Value>()> elseFn) {
  auto ifOp = scf::IfOp::create(b, loc, types, cond, /*withElse=*/true);
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(ifOp.thenBlock());
    scf::YieldOp::create(b, loc, thenFn());
    b.setInsertionPointToStart(ifOp.elseBlock());
    scf::YieldOp::create(b, loc, elseFn());
  }
  return SmallVector<Value>(ifOp.getResults());
}

SmallVector<Value> mlir::flash::wg_lowering::fragmentValues(
    ImplicitLocOpBuilder &b, Value fragment) {
  auto values = WgFragmentValuesOp::create(b, fragment).getValues();
  return SmallVector<Value>(values.begin(), values.end());
}
