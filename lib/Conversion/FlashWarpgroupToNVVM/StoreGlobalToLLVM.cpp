//===- StoreGlobalToLLVM.cpp - flash.wg.store_global ----------------------===//
//
// Each thread writes its two rows, each behind its own bound check (an
// unsigned compare, so rows before 0 fail it too): a 16-bit fragment's
// words at columns 8g + 2 (lane % 4), straight from the registers; an f32
// accumulator's registers each as its own word, at their columns; a row
// vector by the first thread of each quad, which holds the row's value like
// the other three.
//
//===----------------------------------------------------------------------===//

#include "Patterns.h"
#include "RegisterUtils.h"

#include "Flash/FlashOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

using namespace mlir;
using namespace mlir::flash;
using namespace mlir::flash::wg_lowering;

namespace {

struct StoreGlobalLowering : public OpConversionPattern<WgStoreGlobalOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(WgStoreGlobalOp op, OneToNOpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    ImplicitLocOpBuilder b(op.getLoc(), rewriter);
    auto type = cast<FragmentType>(op.getValue().getType());
    auto c32 = [&](int64_t v) {
      return entryConstant(b, op, b.getI32IntegerAttr(v));
    };
    auto c64 = [&](int64_t v) {
      return entryConstant(b, op, b.getI64IntegerAttr(v));
    };
    // A 16-bit fragment or row vector converts to its registers, an f32
    // accumulator to the one struct wgmma writes.
    const bool accumulator = isa<WgmmaAccumulatorLayoutAttr>(type.getLayout());
    SmallVector<Value> registers =
        accumulator ? accumulatorRegisters(b, adaptor.getValue().front())
                    : llvm::to_vector(adaptor.getValue());
    Value base = adaptor.getBase().front();
    Value numRows = adaptor.getNumRows().front();
    ThreadPosition at = threadPosition(b, op);
    Value firstRow =
        arith::AddIOp::create(b, adaptor.getFirstRow().front(),
                              at.rowInFragment);
    // A strided tensor: the element index of a row's first column.
    const bool strided = !adaptor.getHeadStride().empty();
    Value headRow0, headStart;
    if (!strided)
      headRow0 = arith::MulIOp::create(b, adaptor.getHead().front(), numRows);
    auto ptrType = cast<LLVM::LLVMPointerType>(base.getType());
    if (strided)
      headStart = arith::MulIOp::create(
          b,
          arith::ExtUIOp::create(b, b.getI64Type(), adaptor.getHead().front()),
          adaptor.getHeadStride().front());
    auto stridedRowStart = [&](Value row) -> Value {
      if (!adaptor.getRowBase().empty())
        row = arith::AddIOp::create(b, row, adaptor.getRowBase().front());
      Value row64 = arith::ExtUIOp::create(b, b.getI64Type(), row);
      return arith::AddIOp::create(
          b, headStart,
          arith::MulIOp::create(b, row64, adaptor.getRowStride().front()));
    };
    for (int64_t r = 0; r < 2; ++r) {
      Value row = r == 0 ? firstRow
                         : arith::AddIOp::create(b, firstRow, c32(8))
                               .getResult();
      Value inBounds =
          arith::CmpIOp::create(b, arith::CmpIPredicate::ult, row, numRows);
      if (isa<WgmmaRowsLayoutAttr>(type.getLayout()))
        inBounds = arith::AndIOp::create(
            b, inBounds,
            arith::CmpIOp::create(b, arith::CmpIPredicate::eq, at.quad,
                                  c32(0)));
      auto ifOp = scf::IfOp::create(b, TypeRange(), inBounds,
                                    /*withElse=*/false);
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPoint(ifOp.thenBlock()->getTerminator());
      Value globalRow64;
      if (!strided) {
        Value globalRow = arith::AddIOp::create(b, headRow0, row);
        globalRow64 = arith::ExtUIOp::create(b, b.getI64Type(), globalRow);
      }
      if (!type.isOperandA() && !accumulator) {
        Value index = strided ? stridedRowStart(row) : globalRow64;
        Value ptr = LLVM::GEPOp::create(b, ptrType, b.getF32Type(), base,
                                        ValueRange{index});
        LLVM::StoreOp::create(b, registers[r], ptr, /*alignment=*/4);
        continue;
      }
      // Word w of a thread holds columns 8 (w / 2) + 2 quad, +1 of row half
      // w % 2 (the accumulator's register pairs, see RegisterUtils.h).
      int64_t columns = type.getShape()[1];
      Value rowStart =
          strided
              ? stridedRowStart(row)
              : arith::MulIOp::create(b, globalRow64, c64(columns)).getResult();
      Value column = arith::ExtUIOp::create(
          b, b.getI64Type(), arith::MulIOp::create(b, at.quad, c32(2)));
      Value rowColumn = arith::AddIOp::create(b, rowStart, column);
      // An f32 accumulator: register i at column columnInGroup(i) + 2 quad
      // of row half rowHalf(i), each its own word.
      if (accumulator) {
        for (auto [i, reg] : llvm::enumerate(registers)) {
          if (rowHalf(i) != r)
            continue;
          Value index =
              arith::AddIOp::create(b, rowColumn, c64(columnInGroup(i)));
          Value ptr = LLVM::GEPOp::create(b, ptrType, b.getF32Type(), base,
                                          ValueRange{index});
          LLVM::StoreOp::create(b, reg, ptr, /*alignment=*/4);
        }
        continue;
      }
      for (int64_t g = 0; g < columns / 8; ++g) {
        Value index = arith::AddIOp::create(b, rowColumn, c64(8 * g));
        Value ptr = LLVM::GEPOp::create(b, ptrType, type.getElementType(),
                                        base, ValueRange{index});
        LLVM::StoreOp::create(b, registers[2 * g + r], ptr, /*alignment=*/4);
      }
    }
    rewriter.eraseOp(op);
    return success();
  }
};

} // namespace

void mlir::flash::wg_lowering::populateStoreGlobalPatterns(
    const TypeConverter &converter, RewritePatternSet &patterns) {
  patterns.add<StoreGlobalLowering>(converter, patterns.getContext());
}
