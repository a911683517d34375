//===- AutotunePruneTest.cpp - pruning through the existing rules ---------===//
//
// flash-tune prunes with the dialect's ConfigAttr verifier and with
// -convert-flash-to-gpu's own diagnostics, and finds configs that lower to
// one kernel from what the conversion recorded. These tests run the real
// verifier and conversion on the shipped kernels (no NVVM, no ptxas, no GPU).
//
//===----------------------------------------------------------------------===//

#include "flashc/Autotune/Compile.h"
#include "flashc/Autotune/SearchSpace.h"

#include "mlir/IR/MLIRContext.h"

#include "gtest/gtest.h"

using namespace flashc::tune;
using flashc::ScheduleSwitches;

namespace {

KernelSource kernel(llvm::StringRef name) {
  llvm::Expected<KernelSource> source =
      loadKernelSource(std::string(FLASHC_KERNELS_DIR) + "/" + name.str());
  EXPECT_TRUE(bool(source));
  if (!source) {
    llvm::consumeError(source.takeError());
    return {};
  }
  return *source;
}

TEST(Prune, KernelSourceFacts) {
  KernelSource source = kernel("attention.mlir");
  EXPECT_EQ(source.kernel, "attention");
  EXPECT_EQ(source.headDim, 128);
  EXPECT_EQ(source.dtype, "bf16");
  EXPECT_FALSE(source.causal);
  EXPECT_EQ(source.hash.size(), 64u);
  EXPECT_TRUE(kernel("attention_d64_causal.mlir").causal);
}

TEST(Prune, VerifierMessageIsTheReason) {
  std::unique_ptr<mlir::MLIRContext> context = createTuneContext();
  EXPECT_FALSE(checkConfigAttr(*context, {128, 128, 2, 2}).has_value());
  std::optional<std::string> why = checkConfigAttr(*context, {96, 128, 2, 2});
  ASSERT_TRUE(why.has_value());
  EXPECT_NE(why->find("block_m must be a positive multiple of 128"),
            std::string::npos)
      << *why;
  why = checkConfigAttr(*context, {128, 272, 2, 2});
  ASSERT_TRUE(why.has_value());
  EXPECT_NE(why->find("block_n must be at most 256"), std::string::npos)
      << *why;
}

TEST(Prune, ConversionMessageIsTheReason) {
  KernelSource source = kernel("attention.mlir");
  std::unique_ptr<mlir::MLIRContext> context = createTuneContext();
  // Valid for the verifier, but each consumer warpgroup owns 64 rows.
  llvm::Expected<LoweredKernel> rows =
      lowerCandidate(*context, source, {128, 128, 2, 1}, "sm_90a");
  ASSERT_FALSE(bool(rows));
  std::string text = llvm::toString(rows.takeError());
  EXPECT_NE(text.find("block_m = 64 * warpgroups"), std::string::npos) << text;
  // K and V rings of 4 x 256 rows do not fit in 227 KiB.
  llvm::Expected<LoweredKernel> smem =
      lowerCandidate(*context, source, {128, 256, 4, 2}, "sm_90a");
  ASSERT_FALSE(bool(smem));
  text = llvm::toString(smem.takeError());
  EXPECT_NE(text.find("bytes of shared memory"), std::string::npos) << text;

  llvm::Expected<LoweredKernel> ok =
      lowerCandidate(*context, source, {128, 128, 2, 2}, "sm_90a");
  ASSERT_TRUE(bool(ok)) << llvm::toString(ok.takeError());
  EXPECT_EQ(ok->applied, (TuneConfig{128, 128, 2, 2, true, true, true}));
  EXPECT_EQ(ok->accumulatorRegs, 64 + 64 + 32);
  EXPECT_EQ(ok->consumerRegs, 240);
}

TEST(Prune, RegisterFitCountsTheAccumulators) {
  KernelSource source = kernel("attention.mlir");
  std::unique_ptr<mlir::MLIRContext> context = createTuneContext();
  auto lower = [&](const TuneConfig &config) {
    llvm::Expected<LoweredKernel> k =
        lowerCandidate(*context, source, config, "sm_90a");
    EXPECT_TRUE(bool(k)) << llvm::toString(k.takeError());
    return std::make_pair(k->accumulatorRegs, k->consumerRegs);
  };
  // The conversion counts, per consumer thread, O (D/2 = 64), S (block_n/2)
  // and with overlap P (block_n/4).
  EXPECT_EQ(lower({128, 128, 2, 2, true, true, true}),
            std::make_pair(int64_t(160), int64_t(240)));
  EXPECT_EQ(lower({128, 256, 1, 2, false, true, true}),
            std::make_pair(int64_t(192), int64_t(240)));
  EXPECT_EQ(lower({256, 64, 2, 4, false, true, true}),
            std::make_pair(int64_t(96), int64_t(112)));
  // 160 + 32 fits 240; 256 + 32 does not.
  EXPECT_FALSE(checkRegisterFit(160, 240));
  std::optional<std::string> wide = checkRegisterFit(256, 240);
  ASSERT_TRUE(wide);
  EXPECT_NE(wide->find("at least 288 registers"), std::string::npos) << *wide;
  EXPECT_NE(wide->find("setmaxnreg gives 240"), std::string::npos) << *wide;
  // Four consumers get 112: 96 + 32 does not fit.
  EXPECT_TRUE(checkRegisterFit(96, 112));
}

TEST(Prune, OverBudgetConfigsAreNotCompiled) {
  KernelSource source = kernel("attention.mlir");
  SearchSpace space;
  space.blockM = {128};
  space.blockN = {128, 256};
  space.stages = {1};
  space.warpgroups = {2};
  space.axis(&ScheduleSwitches::overlap) = {true, false};
  std::vector<TuneConfig> configs = enumerateConfigs(space);
  CompileOptions options;
  options.threads = 2;
  PruneResult result = pruneConfigs(source, configs, options);
  ASSERT_EQ(result.pruned.size(), 1u);
  EXPECT_EQ(result.pruned[0].stage, "registers");
  EXPECT_EQ(result.pruned[0].config,
            (TuneConfig{128, 256, 1, 2, true, true, true}));
  EXPECT_EQ(result.kept.size(), 3u);
}

TEST(Prune, SameKernelIsOneCandidate) {
  KernelSource source = kernel("attention.mlir");
  SearchSpace space;
  space.blockM = {64, 128};
  space.blockN = {128};
  space.stages = {2};
  space.warpgroups = {1, 2};
  space.axis(&ScheduleSwitches::overlap) = {true};
  space.axis(&ScheduleSwitches::pingpong) = {true, false};
  space.axis(&ScheduleSwitches::splitRelease) = {true};
  std::vector<TuneConfig> configs = enumerateConfigs(space);
  ASSERT_EQ(configs.size(), 8u);
  CompileOptions options;
  options.threads = 2;
  PruneResult result = pruneConfigs(source, configs, options);
  // (64, wg 1) and (128, wg 2) lower; ping-pong needs two consumers, so
  // (64, wg 1) with and without it is one kernel.
  ASSERT_EQ(result.kept.size(), 3u);
  EXPECT_EQ(result.kept[0], (TuneConfig{64, 128, 2, 1, true, false, true}));
  EXPECT_EQ(result.kept[1], (TuneConfig{128, 128, 2, 2, true, true, true}));
  EXPECT_EQ(result.kept[2], (TuneConfig{128, 128, 2, 2, true, false, true}));
  std::map<std::string, int> stages;
  for (const PrunedConfig &p : result.pruned)
    ++stages[p.stage];
  EXPECT_EQ(stages["config"], 2);     // (64, wg 2) twice
  EXPECT_EQ(stages["conversion"], 2); // (128, wg 1) twice
  EXPECT_EQ(stages["duplicate"], 1);
  EXPECT_EQ(result.kept.size() + result.pruned.size(), configs.size());
}

} // namespace
