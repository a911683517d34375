//===- flash-opt.cpp - the flash dialect's opt driver ---------------------===//
//
// mlir-opt with the flash dialect and flashc's passes: the driver of every lit
// test of the dialect and the passes.
//
//===----------------------------------------------------------------------===//

#include "flashc/InitAll.h"

#include "mlir/InitAllPasses.h"
#include "mlir/Target/LLVMIR/Dialect/All.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"

int main(int argc, char **argv) {
  mlir::DialectRegistry registry;
  flashc::registerAllDialects(registry);
  // -gpu-lower-to-nvvm-pipeline serialises gpu.modules through LLVM IR.
  mlir::registerAllToLLVMIRTranslations(registry);
  mlir::registerAllPasses();
  flashc::registerAllPasses();
  return mlir::asMainReturnCode(
      mlir::MlirOptMain(argc, argv, "flashc optimizer driver\n", registry));
}
