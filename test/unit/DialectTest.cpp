//===- DialectTest.cpp - unit tests of the flash dialect's C++ API --------===//
//
// What lit cannot see: the C++ accessors and the attribute verifier driven
// directly, as passes and flash-tune use them.
//
//===----------------------------------------------------------------------===//

#include "Flash/FlashAttrs.h"
#include "Flash/FlashOps.h"
#include "flashc/InitAll.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"

#include <gtest/gtest.h>

#include <cmath>

using namespace mlir;

namespace {

class FlashDialectTest : public ::testing::Test {
protected:
  FlashDialectTest() {
    DialectRegistry registry;
    flashc::registerAllDialects(registry);
    context.appendDialectRegistry(registry);
    context.loadAllAvailableDialects();
  }

  /// Builds a config through the verifying constructor; collects the message.
  flash::ConfigAttr makeConfig(int64_t blockM, int64_t blockN, int64_t stages,
                               int64_t warpgroups) {
    lastError.clear();
    auto emitError = [&] { return mlir::emitError(UnknownLoc::get(&context)); };
    ScopedDiagnosticHandler handler(&context, [&](Diagnostic &diag) {
      lastError = diag.str();
      return success();
    });
    return flash::ConfigAttr::getChecked(emitError, &context, blockM, blockN,
                                         stages, warpgroups,
                                         flashc::ScheduleSwitches());
  }

  /// Parses the body of a function holding one flash.attention.
  OwningOpRef<ModuleOp> parseAttention(StringRef attention) {
    std::string source =
        "func.func @f(%q: memref<2x4x100x64xf16>, %k: memref<2x4x70x64xf16>, "
        "%v: memref<2x4x70x64xf16>, %o: memref<2x4x100x64xf16>) {\n" +
        attention.str() + "\n  return\n}";
    return parseSourceString<ModuleOp>(source, &context);
  }

  MLIRContext context;
  std::string lastError;
};

TEST_F(FlashDialectTest, ConfigKeepsItsParameters) {
  flash::ConfigAttr config = makeConfig(128, 64, 3, 2);
  ASSERT_TRUE(config) << lastError;
  EXPECT_EQ(config.getBlockM(), 128);
  EXPECT_EQ(config.getBlockN(), 64);
  EXPECT_EQ(config.getStages(), 3);
  EXPECT_EQ(config.getWarpgroups(), 2);
}

TEST_F(FlashDialectTest, ConfigRejectsBlockMBelowTheWarpgroupRows) {
  EXPECT_FALSE(makeConfig(64, 64, 2, 2));
  EXPECT_NE(lastError.find("block_m must be a positive multiple of 128"),
            std::string::npos)
      << lastError;
}

TEST_F(FlashDialectTest, ConfigRejectsBlockNThatIsNotAnMmaMultiple) {
  EXPECT_FALSE(makeConfig(128, 40, 2, 1));
  EXPECT_NE(lastError.find("block_n must be a positive multiple of 16"),
            std::string::npos)
      << lastError;
  EXPECT_FALSE(makeConfig(128, 272, 2, 1));
  EXPECT_NE(lastError.find("block_n must be at most 256"), std::string::npos)
      << lastError;
}

TEST_F(FlashDialectTest, ConfigRejectsStagesOutOfRange) {
  EXPECT_FALSE(makeConfig(128, 64, 0, 1));
  EXPECT_FALSE(makeConfig(128, 64, 9, 1));
  EXPECT_TRUE(makeConfig(128, 64, 8, 1));
}

TEST_F(FlashDialectTest, DefaultScaleIsInverseSqrtHeadDim) {
  OwningOpRef<ModuleOp> module = parseAttention(
      "flash.attention %q, %k, %v -> %o : memref<2x4x100x64xf16>, "
      "memref<2x4x70x64xf16>, memref<2x4x70x64xf16> -> "
      "memref<2x4x100x64xf16>");
  ASSERT_TRUE(module);
  flash::AttentionOp attention;
  module->walk([&](flash::AttentionOp op) { attention = op; });
  ASSERT_TRUE(attention);
  EXPECT_EQ(attention.getHeadDim(), 64);
  EXPECT_FLOAT_EQ(attention.getEffectiveScale(), 0.125f);
  EXPECT_FALSE(attention.getCausal());
  EXPECT_FALSE(attention.getConfig());
}

TEST_F(FlashDialectTest, ExplicitScaleAndConfigAreReadBack) {
  OwningOpRef<ModuleOp> module = parseAttention(
      "flash.attention %q, %k, %v -> %o {causal, scale = 0.5 : f32, config = "
      "#flash.config<block_m = 128, block_n = 32>} : memref<2x4x100x64xf16>, "
      "memref<2x4x70x64xf16>, memref<2x4x70x64xf16> -> "
      "memref<2x4x100x64xf16>");
  ASSERT_TRUE(module);
  flash::AttentionOp attention;
  module->walk([&](flash::AttentionOp op) { attention = op; });
  ASSERT_TRUE(attention);
  EXPECT_FLOAT_EQ(attention.getEffectiveScale(), 0.5f);
  EXPECT_TRUE(attention.getCausal());
  ASSERT_TRUE(attention.getConfig());
  EXPECT_EQ(attention.getConfig()->getBlockN(), 32);
  EXPECT_EQ(attention.getConfig()->getStages(), 2);
  EXPECT_EQ(attention.getConfig()->getWarpgroups(), 1);
}

TEST_F(FlashDialectTest, MismatchedHeadDimFailsToParse) {
  ScopedDiagnosticHandler quiet(&context,
                                [](Diagnostic &) { return success(); });
  std::string source =
      "func.func @f(%q: memref<2x4x100x64xf16>, %k: memref<2x4x70x128xf16>, "
      "%v: memref<2x4x70x64xf16>, %o: memref<2x4x100x64xf16>) {\n"
      "flash.attention %q, %k, %v -> %o : memref<2x4x100x64xf16>, "
      "memref<2x4x70x128xf16>, memref<2x4x70x64xf16> -> "
      "memref<2x4x100x64xf16>\n return\n}";
  EXPECT_FALSE(parseSourceString<ModuleOp>(source, &context));
}

} // namespace
