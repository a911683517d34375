//===- ExternDynamicSharedMemory.cpp - dynamic smem as an extern array ----===//
//
// -flash-extern-dynamic-shared-memory: see Passes.td. Runs on the gpu.module
// after convert-gpu-to-nvvm, so that every kernel's tiles start after its
// static mbarriers instead of on top of them.
//
//===----------------------------------------------------------------------===//

#include "flashc/Conversion/Passes.h"

namespace mlir::flash {
#define GEN_PASS_DEF_EXTERNDYNAMICSHAREDMEMORY
#include "flashc/Conversion/Passes.h.inc"
} // namespace mlir::flash

using namespace mlir;

namespace {

/// NVVM's shared address space.
constexpr unsigned kSharedAddressSpace = 3;

struct ExternDynamicSharedMemoryPass
    : public mlir::flash::impl::ExternDynamicSharedMemoryBase<
          ExternDynamicSharedMemoryPass> {
  void runOnOperation() override {
    getOperation().walk([&](LLVM::GlobalOp global) {
      auto array = dyn_cast<LLVM::LLVMArrayType>(global.getGlobalType());
      if (global.getAddrSpace() != kSharedAddressSpace || !array ||
          array.getNumElements() != 0)
        return;
      // No initializer and external linkage: a declaration, sized at launch.
      global.removeValueAttr();
      global.setLinkageAttr(
          LLVM::LinkageAttr::get(&getContext(), LLVM::Linkage::External));
    });
  }
};

} // namespace
