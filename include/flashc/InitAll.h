//===- InitAll.h - what every flashc tool registers -------------*- C++ -*-===//
//
// One place that lists the dialects and passes the tools know, so flash-opt,
// flashc and flash-tune accept the same IR.
//
//===----------------------------------------------------------------------===//

#ifndef FLASHC_INITALL_H
#define FLASHC_INITALL_H

#include "Flash/FlashDialect.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlow.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Index/IR/IndexDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/DialectRegistry.h"

namespace flashc {

/// Registers the flash dialect and the upstream dialects its pipelines use.
inline void registerAllDialects(mlir::DialectRegistry &registry) {
  registry.insert<
      mlir::flash::FlashDialect, mlir::arith::ArithDialect,
      mlir::bufferization::BufferizationDialect, mlir::cf::ControlFlowDialect,
      mlir::func::FuncDialect, mlir::gpu::GPUDialect, mlir::index::IndexDialect,
      mlir::LLVM::LLVMDialect, mlir::linalg::LinalgDialect,
      mlir::math::MathDialect, mlir::memref::MemRefDialect,
      mlir::NVVM::NVVMDialect, mlir::nvgpu::NVGPUDialect, mlir::scf::SCFDialect,
      mlir::tensor::TensorDialect, mlir::vector::VectorDialect>();
}

} // namespace flashc

#endif // FLASHC_INITALL_H
