//===- FlashDialect.cpp - the flash dialect -------------------------------===//
//
// Registers the flash dialect's ops, attributes and types.
//
//===----------------------------------------------------------------------===//

#include "Flash/FlashDialect.h"
#include "Flash/FlashAttrs.h"
#include "Flash/FlashOps.h"
#include "Flash/FlashTypes.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace mlir::flash;

#include "Flash/FlashDialect.cpp.inc"

#define GET_ATTRDEF_CLASSES
#include "Flash/FlashAttrs.cpp.inc"

#define GET_TYPEDEF_CLASSES
#include "Flash/FlashTypes.cpp.inc"

void FlashDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "Flash/FlashOps.cpp.inc"
      >();
  addAttributes<
#define GET_ATTRDEF_LIST
#include "Flash/FlashAttrs.cpp.inc"
      >();
  addTypes<
#define GET_TYPEDEF_LIST
#include "Flash/FlashTypes.cpp.inc"
      >();
}
