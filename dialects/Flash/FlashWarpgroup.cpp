//===- FlashWarpgroup.cpp - the warp-specialised level --------------------===//
//
// Syntax and verifiers of the fragment and descriptor types and of the
// flash.wg ops (FlashWarpgroup.td): what is checked here is what wgmma
// accepts, so a malformed MMA fails at its op rather than in ptxas.
//
//===----------------------------------------------------------------------===//

#include "Flash/FlashOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"
#include "mlir/IR/OpImplementation.h"

#include "llvm/ADT/StringExtras.h"

using namespace mlir;
using namespace mlir::flash;

static bool isWgmmaOperandElement(Type t) {
  return isa<BFloat16Type, Float16Type>(t);
}

//===----------------------------------------------------------------------===//
// FragmentType
//===----------------------------------------------------------------------===//

Type FragmentType::parse(AsmParser &parser) {
  SmallVector<int64_t> shape;
  Type elementType;
  Attribute layout;
  if (parser.parseLess() ||
      parser.parseDimensionList(shape, /*allowDynamic=*/false) ||
      parser.parseType(elementType) || parser.parseComma() ||
      parser.parseAttribute(layout) || parser.parseGreater())
    return {};
  return parser.getChecked<FragmentType>(parser.getContext(), ArrayRef(shape),
                                         elementType, layout);
}

void FragmentType::print(AsmPrinter &printer) const {
  printer << "<";
  for (int64_t d : getShape())
    printer << d << "x";
  printer << getElementType() << ", " << getLayout() << ">";
}

LogicalResult FragmentType::verify(function_ref<InFlightDiagnostic()> emitError,
                                   ArrayRef<int64_t> shape, Type elementType,
                                   Attribute layout) {
  if (isa<WgmmaRowsLayoutAttr, WgmmaRowPartialsLayoutAttr>(layout)) {
    if (shape.size() != 1 || shape[0] != 64)
      return emitError() << "a row vector of a warpgroup accumulator must be "
                            "64 (one value per row), got "
                         << shape.size() << "-d";
    if (!elementType.isF32() && !elementType.isInteger(32))
      return emitError() << "a row vector must be f32 or i32, got "
                         << elementType;
    return success();
  }
  if (shape.size() != 2)
    return emitError() << "fragment must be 2-d, got rank " << shape.size();
  if (shape[0] != 64)
    return emitError() << "fragment of a warpgroup must have 64 rows (the M "
                          "of wgmma), got "
                       << shape[0];
  if (isa<WgmmaAccumulatorLayoutAttr>(layout)) {
    if (shape[1] < 8 || shape[1] > 256 || shape[1] % 8 != 0)
      return emitError() << "wgmma accumulator N must be a multiple of 8 in "
                            "[8, 256], got "
                         << shape[1];
    if (!elementType.isF32())
      return emitError() << "wgmma accumulator must be f32, got "
                         << elementType;
    return success();
  }
  if (isa<WgmmaOperandALayoutAttr>(layout)) {
    if (shape[1] < 16 || shape[1] > 256 || shape[1] % 16 != 0)
      return emitError() << "wgmma register A operand must be 64xK, K a "
                            "multiple of 16 (k16 steps) in [16, 256], got 64x"
                         << shape[1];
    if (!isWgmmaOperandElement(elementType))
      return emitError() << "wgmma register A operand must be bf16 or f16, "
                            "got "
                         << elementType;
    return success();
  }
  return emitError() << "unknown fragment layout " << layout
                     << " (expected #flash.wgmma_accumulator, "
                        "#flash.wgmma_operand_a, #flash.wgmma_rows or "
                        "#flash.wgmma_row_partials)";
}

int64_t FragmentType::getNumRegisters() const {
  if (isRows())
    return 2;
  // 64 x cols elements over 128 threads, two 16-bit values per A register.
  int64_t perThread = 64 * getShape()[1] / 128;
  return isOperandA() ? perThread / 2 : perThread;
}

Type FragmentType::getRegisterType() const {
  if (isOperandA())
    return IntegerType::get(getContext(), 32);
  return getElementType();
}

//===----------------------------------------------------------------------===//
// SmemDescriptorType
//===----------------------------------------------------------------------===//

Type SmemDescriptorType::parse(AsmParser &parser) {
  Type elementType;
  StringRef major;
  int64_t swizzle = 0, lbo = 0, sbo = 0;
  auto keyword = [&](StringRef name) {
    return failure(parser.parseComma() || parser.parseKeyword(name) ||
                   parser.parseEqual());
  };
  if (parser.parseLess() || parser.parseType(elementType) ||
      failed(keyword("major")) || parser.parseKeyword(&major))
    return {};
  if (major != "k" && major != "mn") {
    parser.emitError(parser.getCurrentLocation(),
                     "expected `k` or `mn` for major, got ")
        << major;
    return {};
  }
  if (failed(keyword("swizzle")) || parser.parseInteger(swizzle) ||
      failed(keyword("lbo")) || parser.parseInteger(lbo) ||
      failed(keyword("sbo")) || parser.parseInteger(sbo) ||
      parser.parseGreater())
    return {};
  return parser.getChecked<SmemDescriptorType>(
      parser.getContext(), elementType, major == "mn", swizzle, lbo, sbo);
}

void SmemDescriptorType::print(AsmPrinter &printer) const {
  printer << "<" << getElementType()
          << ", major = " << (getMnMajor() ? "mn" : "k")
          << ", swizzle = " << getSwizzle() << ", lbo = " << getLbo()
          << ", sbo = " << getSbo() << ">";
}

LogicalResult
SmemDescriptorType::verify(function_ref<InFlightDiagnostic()> emitError,
                           Type elementType, bool mnMajor, int64_t swizzle,
                           int64_t lbo, int64_t sbo) {
  if (!isWgmmaOperandElement(elementType))
    return emitError() << "wgmma shared-memory operand must be bf16 or f16, "
                          "got "
                       << elementType;
  if (swizzle != 0 && swizzle != 32 && swizzle != 64 && swizzle != 128)
    return emitError() << "swizzle must be 0, 32, 64 or 128 bytes, got "
                       << swizzle;
  // The descriptor keeps each offset >> 4 in a 14-bit field.
  for (auto [name, bytes] : {std::pair<StringRef, int64_t>{"lbo", lbo},
                             std::pair<StringRef, int64_t>{"sbo", sbo}})
    if (bytes <= 0 || bytes % 16 != 0 || bytes >= (int64_t(1) << 18))
      return emitError() << name
                         << " must be a positive multiple of 16 below 2^18 "
                            "bytes, got "
                         << bytes;
  return success();
}

uint64_t SmemDescriptorType::getLayoutBits() const {
  uint64_t mode = 0;
  switch (getSwizzle()) {
  case 128:
    mode = 1;
    break;
  case 64:
    mode = 2;
    break;
  case 32:
    mode = 3;
    break;
  }
  return mode << 62 | uint64_t(getSbo() >> 4) << 32 |
         uint64_t(getLbo() >> 4) << 16;
}

LogicalResult WgAdvanceDescriptorOp::verify() {
  int64_t bytes = getBytes();
  if (bytes % 16 != 0)
    return emitOpError("bytes must be a multiple of 16 (the start address "
                       "field counts 16-byte units), got ")
           << bytes;
  // The start address field spans 2^18 bytes; a larger step would reach
  // the layout fields.
  if (bytes <= -(int64_t(1) << 18) || bytes >= (int64_t(1) << 18))
    return emitOpError("bytes must lie within the 2^18 bytes the start "
                       "address field spans, got ")
           << bytes;
  return success();
}

//===----------------------------------------------------------------------===//
// Fragment <-> registers
//===----------------------------------------------------------------------===//

ParseResult WgFragmentFromValuesOp::parse(OpAsmParser &parser,
                                          OperationState &result) {
  SmallVector<OpAsmParser::UnresolvedOperand> values;
  Type type;
  if (parser.parseOperandList(values) ||
      parser.parseOptionalAttrDict(result.attributes) ||
      parser.parseColonType(type))
    return failure();
  auto fragment = dyn_cast<FragmentType>(type);
  if (!fragment)
    return parser.emitError(parser.getNameLoc(),
                            "expected a !flash.fragment type, got ")
           << type;
  result.addTypes(fragment);
  return parser.resolveOperands(values, fragment.getRegisterType(),
                                result.operands);
}

void WgFragmentFromValuesOp::print(OpAsmPrinter &printer) {
  printer << " " << getValues();
  printer.printOptionalAttrDict((*this)->getAttrs());
  printer << " : " << getResult().getType();
}

LogicalResult WgFragmentFromValuesOp::verify() {
  auto type = cast<FragmentType>(getResult().getType());
  if (int64_t(getValues().size()) != type.getNumRegisters())
    return emitOpError("expects ") << type.getNumRegisters() << " values for "
                                   << type << ", got " << getValues().size();
  for (Value v : getValues())
    if (v.getType() != type.getRegisterType())
      return emitOpError("expects values of type ")
             << type.getRegisterType() << " for " << type << ", got "
             << v.getType();
  return success();
}

void WgFragmentValuesOp::build(OpBuilder &builder, OperationState &state,
                               Value fragment) {
  auto type = cast<FragmentType>(fragment.getType());
  state.addOperands(fragment);
  state.addTypes(
      SmallVector<Type>(type.getNumRegisters(), type.getRegisterType()));
}

ParseResult WgFragmentValuesOp::parse(OpAsmParser &parser,
                                      OperationState &result) {
  OpAsmParser::UnresolvedOperand fragment;
  Type type;
  if (parser.parseOperand(fragment) ||
      parser.parseOptionalAttrDict(result.attributes) ||
      parser.parseColonType(type))
    return failure();
  auto fragmentType = dyn_cast<FragmentType>(type);
  if (!fragmentType)
    return parser.emitError(parser.getNameLoc(),
                            "expected a !flash.fragment type, got ")
           << type;
  result.addTypes(SmallVector<Type>(fragmentType.getNumRegisters(),
                                    fragmentType.getRegisterType()));
  return parser.resolveOperand(fragment, fragmentType, result.operands);
}

void WgFragmentValuesOp::print(OpAsmPrinter &printer) {
  printer << " " << getFragment();
  printer.printOptionalAttrDict((*this)->getAttrs());
  printer << " : " << getFragment().getType();
}

LogicalResult WgFragmentValuesOp::verify() {
  auto type = cast<FragmentType>(getFragment().getType());
  if (int64_t(getValues().size()) != type.getNumRegisters())
    return emitOpError("expects ") << type.getNumRegisters() << " results for "
                                   << type << ", got " << getValues().size();
  for (Value v : getValues())
    if (v.getType() != type.getRegisterType())
      return emitOpError("expects results of type ")
             << type.getRegisterType() << " for " << type << ", got "
             << v.getType();
  return success();
}

//===----------------------------------------------------------------------===//
// WgMmaOp
//===----------------------------------------------------------------------===//

LogicalResult WgMmaOp::verify() {
  auto d = cast<FragmentType>(getD().getType());
  if (!d.isAccumulator())
    return emitOpError("result must be a #flash.wgmma_accumulator fragment, "
                       "got ")
           << d;
  auto b = cast<SmemDescriptorType>(getB().getType());
  Type aElement;
  if (auto aFragment = dyn_cast<FragmentType>(getA().getType())) {
    if (!aFragment.isOperandA())
      return emitOpError("A in registers must be a #flash.wgmma_operand_a "
                         "fragment, got ")
             << aFragment;
    if (aFragment.getShape()[1] != 16)
      return emitOpError("A in registers must be one k16 step (64x16), got ")
             << aFragment;
    aElement = aFragment.getElementType();
  } else {
    aElement = cast<SmemDescriptorType>(getA().getType()).getElementType();
  }
  if (aElement != b.getElementType())
    return emitOpError("A and B element types differ: ")
           << aElement << " and " << b.getElementType();
  return success();
}

//===----------------------------------------------------------------------===//
// The online softmax on accumulator fragments
//===----------------------------------------------------------------------===//

/// Checks that `type` is an accumulator fragment; `what` names the operand.
static LogicalResult expectAccumulator(Operation *op, Type type,
                                       StringRef what) {
  auto fragment = cast<FragmentType>(type);
  if (!fragment.isAccumulator())
    return op->emitOpError() << what
                             << " must be a #flash.wgmma_accumulator "
                                "fragment, got "
                             << type;
  return success();
}

/// Checks that `type` is a #flash.wgmma_rows vector of `element`.
static LogicalResult expectRows(Operation *op, Type type, Type element,
                                StringRef what) {
  auto fragment = cast<FragmentType>(type);
  if (!isa<WgmmaRowsLayoutAttr>(fragment.getLayout()) ||
      fragment.getElementType() != element)
  {
    std::string shape;
    llvm::raw_string_ostream(shape) << "64x" << element;
    return op->emitOpError() << what << " must be a " << shape
                             << " #flash.wgmma_rows vector, got " << type;
  }
  return success();
}

LogicalResult WgMaskColumnsOp::verify() {
  if (failed(expectAccumulator(*this, getScores().getType(), "scores")))
    return failure();
  return expectRows(*this, getLimit().getType(),
                    IntegerType::get(getContext(), 32), "limit");
}

LogicalResult WgModScoresOp::verify() {
  if (failed(expectAccumulator(*this, getScores().getType(), "scores")))
    return failure();
  Type i32 = IntegerType::get(getContext(), 32);
  if (failed(expectRows(*this, getRows().getType(), i32, "rows")))
    return failure();
  if (getHeads())
    return expectRows(*this, getHeads().getType(), i32, "heads");
  return success();
}

LogicalResult WgModScoresOp::verifyRegions() {
  return verifyMods(*this, getScoreMod(), getMaskMod(), getCaptures());
}

LogicalResult WgMaskKeysOp::verify() {
  if (failed(expectAccumulator(*this, getScores().getType(), "scores")))
    return failure();
  return expectRows(*this, getRows().getType(),
                    IntegerType::get(getContext(), 32), "rows");
}

/// row_max and row_sum: accumulator -> rows or row partials, and (sum only)
/// row partials -> rows.
static LogicalResult verifyRowReduce(Operation *op, FragmentType input,
                                     FragmentType result, bool fromPartials) {
  if (!result.isRows() || !result.getElementType().isF32())
    return op->emitOpError("result must be a 64xf32 #flash.wgmma_rows or "
                           "#flash.wgmma_row_partials vector, got ")
           << result;
  if (input.isAccumulator())
    return success();
  if (fromPartials && isa<WgmmaRowPartialsLayoutAttr>(input.getLayout()) &&
      input.getElementType().isF32() &&
      isa<WgmmaRowsLayoutAttr>(result.getLayout()))
    return success();
  return op->emitOpError(fromPartials
                             ? "reduces a #flash.wgmma_accumulator fragment, "
                               "or #flash.wgmma_row_partials to "
                               "#flash.wgmma_rows; got "
                             : "reduces a #flash.wgmma_accumulator fragment; "
                               "got ")
         << input << " -> " << result;
}

LogicalResult WgRowMaxOp::verify() {
  return verifyRowReduce(*this, cast<FragmentType>(getInput().getType()),
                         cast<FragmentType>(getResult().getType()),
                         /*fromPartials=*/false);
}

LogicalResult WgRowSumOp::verify() {
  return verifyRowReduce(*this, cast<FragmentType>(getInput().getType()),
                         cast<FragmentType>(getResult().getType()),
                         /*fromPartials=*/true);
}

LogicalResult WgScaledExp2Op::verify() {
  if (failed(expectAccumulator(*this, getScores().getType(), "scores")))
    return failure();
  return expectRows(*this, getBias().getType(), Float32Type::get(getContext()),
                    "bias");
}

LogicalResult WgScaleRowsOp::verify() {
  if (failed(expectAccumulator(*this, getInput().getType(), "input")))
    return failure();
  return expectRows(*this, getFactor().getType(),
                    Float32Type::get(getContext()), "factor");
}

LogicalResult WgSoftmaxUpdateOp::verify() {
  auto scores = cast<FragmentType>(getScores().getType());
  if (failed(expectAccumulator(*this, scores, "scores")))
    return failure();
  Type f32 = Float32Type::get(getContext());
  if (failed(expectRows(*this, getMOld().getType(), f32, "m_old")))
    return failure();
  auto lOld = cast<FragmentType>(getLOld().getType());
  if (!isa<WgmmaRowPartialsLayoutAttr>(lOld.getLayout()) ||
      !lOld.getElementType().isF32())
    return emitOpError("l_old must be a 64xf32 #flash.wgmma_row_partials "
                       "vector, got ")
           << lOld;
  auto p = cast<FragmentType>(getP().getType());
  if (!p.isOperandA() || p.getShape() != scores.getShape())
    return emitOpError("p must be a #flash.wgmma_operand_a fragment of the "
                       "scores' shape, got ")
           << p << " for " << scores;
  if (getLagMax() && getSpeculative())
    return emitOpError("takes lag_max or speculative, not both: each is its "
                       "own rule for when the running max moves");
  return success();
}

LogicalResult WgTruncFOp::verify() {
  auto input = cast<FragmentType>(getInput().getType());
  auto result = cast<FragmentType>(getResult().getType());
  if (failed(expectAccumulator(*this, input, "input")))
    return failure();
  if (!result.isOperandA() || result.getShape() != input.getShape())
    return emitOpError("result must be a #flash.wgmma_operand_a fragment of "
                       "the input's shape, got ")
           << result << " for " << input;
  return success();
}

//===----------------------------------------------------------------------===//
// The epilogue
//===----------------------------------------------------------------------===//

LogicalResult WgStoreGlobalOp::verify() {
  auto value = cast<FragmentType>(getValue().getType());
  if (getRowBase() && !getHeadStride())
    return emitOpError("row_base needs the tensor's strides");
  if (value.isOperandA())
    return success();
  if (isa<WgmmaRowsLayoutAttr, WgmmaAccumulatorLayoutAttr>(value.getLayout()) &&
      value.getElementType().isF32())
    return success();
  return emitOpError("stores a 16-bit #flash.wgmma_operand_a fragment, an "
                     "f32 #flash.wgmma_accumulator or a 64xf32 "
                     "#flash.wgmma_rows vector, got ")
         << value;
}

LogicalResult WgStoreSharedOp::verify() {
  auto value = cast<FragmentType>(getValue().getType());
  if (!value.isOperandA())
    return emitOpError("stores a 16-bit #flash.wgmma_operand_a fragment, got ")
           << value;
  if (value.getShape()[1] % 64 != 0)
    return emitOpError("writes whole 64-column (128-byte) boxes: K must be a "
                       "multiple of 64, got ")
           << value;
  if (getBoxStride() % 1024 != 0)
    return emitOpError("box_stride must keep every box 1024-byte aligned (the "
                       "128-byte swizzle's period), got ")
           << getBoxStride();
  return success();
}

//===----------------------------------------------------------------------===//
// Roles
//===----------------------------------------------------------------------===//

LogicalResult WgWarpSpecializeOp::verify() {
  for (auto [name, regs] :
       {std::pair<StringRef, int64_t>{"producer_regs", getProducerRegs()},
        std::pair<StringRef, int64_t>{"consumer_regs", getConsumerRegs()}})
    if (regs < 24 || regs > 256 || regs % 8 != 0)
      return emitOpError() << name
                           << " must be a multiple of 8 in [24, 256] (what "
                              "setmaxnreg takes), got "
                           << regs;
  // 64K registers per SM, the block alone on it: each warpgroup's 128
  // threads hold their count.
  int64_t total =
      128 * (getProducerRegs() + getConsumers() * getConsumerRegs());
  if (total > 65536)
    return emitOpError() << "the roles hold " << total
                         << " registers, more than an SM's 65536";
  auto i32 = IntegerType::get(getContext(), 32);
  auto checkArgs = [&](Region &region,
                       ArrayRef<StringRef> names) -> LogicalResult {
    Block &block = region.front();
    if (block.getNumArguments() != names.size() ||
        llvm::any_of(block.getArgumentTypes(),
                     [&](Type t) { return t != i32; }))
      return emitOpError()
             << "the " << (names.size() == 1 ? "producer" : "consumer")
             << " region takes (" << llvm::join(names, ", ")
             << ") as i32, got " << block.getNumArguments() << " argument(s)";
    return success();
  };
  if (failed(checkArgs(getProducer(), {"thread"})) ||
      failed(checkArgs(getConsumer(), {"consumer", "thread"})))
    return failure();
  for (Region *region : getRegions())
    if (region->front().getTerminator()->getNumOperands() != 0)
      return emitOpError("a role's region yields nothing");
  return success();
}

LogicalResult WgPingpongTurnOp::verify() {
  Block &body = getBody().front();
  if (body.getNumArguments() != 0)
    return emitOpError("the turn's region takes no arguments");
  TypeRange yielded = body.getTerminator()->getOperandTypes();
  if (yielded != getResultTypes())
    return emitOpError("the region yields ")
           << yielded.size() << " value(s) of other types than the "
           << getNumResults() << " result(s)";
  return success();
}
