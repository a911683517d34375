//===- Epilogue.cpp - flash.finalize and the O / LSE stores ---------------===//
//
// After the last key tile: the row sums are quad-reduced, O = acc / l (0 when
// l = 0) is converted to 16-bit pairs and stored straight from the
// accumulator registers with a row bound check (flash.store_tile's "rows past
// the end are not written"), and LSE = (m + log2 l) * ln 2 (-inf when l = 0)
// is stored by the first thread of each quad. O is [B, H, seq_q, D]
// contiguous, LSE [B, H, seq_q].
//
//===----------------------------------------------------------------------===//

#include "FlashToGPU.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"

#include <cmath>
#include <limits>

using namespace mlir;
using namespace mlir::flash::gpu_lowering;

void KernelEmitter::emitEpilogue(ArrayRef<Value> mFinal, ArrayRef<Value> lFinal,
                                 ArrayRef<Value> accFinal) {
  Value negInf = cF32(-std::numeric_limits<float>::infinity());
  SmallVector<Value, 2> inv, lse;
  for (int64_t r = 0; r < 2; ++r) {
    Value l = lFinal[r];
    for (int64_t off : {1, 2}) {
      Value sh = NVVM::ShflOp::create(b, f32, cI32(-1), l, cI32(off), cI32(31),
                                      NVVM::ShflKind::bfly, UnitAttr());
      l = arith::AddFOp::create(b, l, sh);
    }
    Value empty =
        arith::CmpFOp::create(b, arith::CmpFPredicate::OEQ, l, cF32(0.0f));
    Value rcp = arith::DivFOp::create(b, cF32(1.0f), l);
    inv.push_back(arith::SelectOp::create(b, empty, cF32(0.0f), rcp));
    if (!spec.hasLse)
      continue;
    Value lg = math::Log2Op::create(b, l);
    Value t = arith::AddFOp::create(b, mFinal[r], lg);
    Value t2 = arith::MulFOp::create(b, t, cF32(float(std::log(2.0))));
    lse.push_back(arith::SelectOp::create(b, empty, negInf, t2));
  }

  auto globalPtr = LLVM::LLVMPointerType::get(ctx, 1);
  Value by32 = arith::IndexCastOp::create(b, i32, blockY);
  Value headRow0 = arith::MulIOp::create(b, by32, seqQ);
  for (auto [r, row] : llvm::enumerate(SmallVector<Value, 2>{row0, row1})) {
    Value inBounds =
        arith::CmpIOp::create(b, arith::CmpIPredicate::slt, row, seqQ);
    ifThen(inBounds, [&] {
      Value gRow = arith::AddIOp::create(b, headRow0, row);
      Value gRow64 = arith::ExtUIOp::create(b, i64, gRow);
      Value rowBase = arith::MulIOp::create(b, gRow64, cI64(spec.headDim));
      Value col64 = arith::ExtUIOp::create(b, i64, col0);
      Value rowCol = arith::AddIOp::create(b, rowBase, col64);
      for (int64_t g = 0; g < spec.headDim / 8; ++g) {
        Value a0 = arith::MulFOp::create(b, accFinal[4 * g + 2 * r], inv[r]);
        Value a1 =
            arith::MulFOp::create(b, accFinal[4 * g + 2 * r + 1], inv[r]);
        Value word = packPair(a0, a1);
        Value idx = arith::AddIOp::create(b, rowCol, cI64(8 * g));
        Value ptr = LLVM::GEPOp::create(b, globalPtr, spec.elementType, outPtr,
                                        ValueRange{idx});
        LLVM::StoreOp::create(b, word, ptr, /*alignment=*/4);
      }
      if (!spec.hasLse)
        return;
      Value quad0 =
          arith::CmpIOp::create(b, arith::CmpIPredicate::eq, quad, cI32(0));
      ifThen(quad0, [&] {
        Value ptr =
            LLVM::GEPOp::create(b, globalPtr, f32, lsePtr, ValueRange{gRow64});
        LLVM::StoreOp::create(b, lse[r], ptr, /*alignment=*/4);
      });
    });
  }
}
