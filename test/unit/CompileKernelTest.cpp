//===- CompileKernelTest.cpp - the one compile entry point ----------------===//
//
// flashc and flash-tune compile through flashc::compileKernel: the stages it
// stops at, the schedule it records, and how each kind of failure comes
// back (diagnosed by a pass, or a message of its own). The stages up to MLIR
// need no CUDA toolkit; the CPU target's shared library needs only a C
// compiler driver (cc) to link.
//
//===----------------------------------------------------------------------===//

#include "flashc/InitAll.h"
#include "flashc/Pipeline/CompileKernel.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"

#include <gtest/gtest.h>

#include <tuple>

using namespace mlir;

namespace {

constexpr const char *kKernel = R"(
func.func @attention(%q: memref<?x?x?x128xbf16>, %k: memref<?x?x?x128xbf16>,
                     %v: memref<?x?x?x128xbf16>, %o: memref<?x?x?x128xbf16>) {
  flash.attention %q, %k, %v -> %o
      {causal, config = #flash.config<block_m = 128, block_n = 128, warpgroups = 2>}
      : memref<?x?x?x128xbf16>, memref<?x?x?x128xbf16>,
        memref<?x?x?x128xbf16> -> memref<?x?x?x128xbf16>
  return
})";

class CompileKernelTest : public ::testing::Test {
protected:
  CompileKernelTest() {
    DialectRegistry registry;
    flashc::registerAllDialects(registry);
    context.appendDialectRegistry(registry);
    context.loadAllAvailableDialects();
    context.printOpOnDiagnostic(false);
  }

  OwningOpRef<ModuleOp> parse(const char *text) {
    return parseSourceString<ModuleOp>(text, &context);
  }

  /// The stage of the failure, "" for one that is not DiagnosedFailure,
  /// and its message in `message`.
  std::string stageOf(llvm::Error error, std::string &message) {
    std::string stage;
    llvm::handleAllErrors(
        std::move(error),
        [&](const flashc::DiagnosedFailure &failure) {
          stage = failure.stage;
          message = failure.message();
        },
        [&](const llvm::ErrorInfoBase &other) { message = other.message(); });
    return stage;
  }

  MLIRContext context;
};

TEST_F(CompileKernelTest, TileStageIsTheFusedTileProgram) {
  OwningOpRef<ModuleOp> module = parse(kKernel);
  ASSERT_TRUE(module);
  flashc::KernelCompileOptions options;
  options.stage = flashc::KernelStage::Tile;
  llvm::Expected<flashc::CompiledKernel> compiled =
      flashc::compileKernel(*module, options);
  ASSERT_TRUE(static_cast<bool>(compiled)) << toString(compiled.takeError());
  EXPECT_NE(compiled->artefact.find("flash.grid"), std::string::npos);
  EXPECT_NE(compiled->artefact.find("flash.softmax_update"), std::string::npos);
  EXPECT_EQ(compiled->artefact.find("gpu.module"), std::string::npos);
  EXPECT_FALSE(compiled->metadata);
}

TEST_F(CompileKernelTest, MlirStageIsTheScheduledKernel) {
  OwningOpRef<ModuleOp> module = parse(kKernel);
  ASSERT_TRUE(module);
  flashc::KernelCompileOptions options;
  options.stage = flashc::KernelStage::Mlir;
  options.overrides.switches.values[0] = 0; // overlap off
  llvm::Expected<flashc::CompiledKernel> compiled =
      flashc::compileKernel(*module, options);
  ASSERT_TRUE(static_cast<bool>(compiled)) << toString(compiled.takeError());
  const std::string &text = compiled->artefact;
  EXPECT_NE(text.find("gpu.module @attention_kernels"), std::string::npos);
  // The kernel keeps the schedule chosen for it, overrides applied.
  EXPECT_NE(text.find("flash.schedule = #flash.schedule<overlap = false, "
                      "pingpong = true"),
            std::string::npos);
  EXPECT_NE(text.find("grid = sections"), std::string::npos);
}

TEST_F(CompileKernelTest, PassErrorsAreDiagnosed) {
  OwningOpRef<ModuleOp> module = parse(kKernel);
  ASSERT_TRUE(module);
  std::string diagnostics;
  ScopedDiagnosticHandler handler(&context, [&](Diagnostic &diag) {
    diagnostics += diag.str();
    return success();
  });
  flashc::KernelCompileOptions options;
  options.stage = flashc::KernelStage::Mlir;
  options.overrides.stages = 8; // more shared memory than a block has
  llvm::Expected<flashc::CompiledKernel> compiled =
      flashc::compileKernel(*module, options);
  ASSERT_FALSE(static_cast<bool>(compiled));
  std::string message;
  EXPECT_EQ(stageOf(compiled.takeError(), message), "conversion");
  EXPECT_NE(diagnostics.find("bytes of shared memory"), std::string::npos)
      << diagnostics;
}

TEST_F(CompileKernelTest, TileStageNeedsKernelLevelInput) {
  OwningOpRef<ModuleOp> module = parse("func.func @empty() { return }");
  ASSERT_TRUE(module);
  flashc::KernelCompileOptions options;
  options.stage = flashc::KernelStage::Tile;
  llvm::Expected<flashc::CompiledKernel> compiled =
      flashc::compileKernel(*module, options);
  ASSERT_FALSE(static_cast<bool>(compiled));
  std::string message;
  EXPECT_EQ(stageOf(compiled.takeError(), message), "");
  EXPECT_NE(message.find("kernel-level input"), std::string::npos) << message;
}

TEST_F(CompileKernelTest, CpuTargetWritesASharedLibrary) {
  OwningOpRef<ModuleOp> module = parse(kKernel);
  ASSERT_TRUE(module);
  flashc::KernelCompileOptions options;
  options.targetKind = flashc::TargetKind::Cpu;
  options.stage = flashc::KernelStage::SharedLibrary;
  options.binaryName = "kernel.so";
  llvm::Expected<flashc::CompiledKernel> compiled =
      flashc::compileKernel(*module, options);
  ASSERT_TRUE(static_cast<bool>(compiled)) << toString(compiled.takeError());
  EXPECT_TRUE(llvm::StringRef(compiled->artefact).starts_with("\177ELF"));
  ASSERT_TRUE(compiled->metadata);
  const llvm::json::Object &metadata = *compiled->metadata;
  EXPECT_EQ(metadata.getString("kernel"), "_mlir_ciface_attention");
  EXPECT_EQ(metadata.getString("binary"), "kernel.so");
  EXPECT_EQ(metadata.getString("binary_format"), "so");
  EXPECT_EQ(metadata.getString("dtype"), "bf16");
  EXPECT_EQ(metadata.getInteger("head_dim"), 128);
  EXPECT_EQ(metadata.getBoolean("causal"), true);
  EXPECT_EQ(metadata.getBoolean("has_lse"), false);
  const llvm::json::Array *params = metadata.getArray("params");
  ASSERT_TRUE(params);
  ASSERT_EQ(params->size(), 4u);
  EXPECT_EQ((*params)[3].getAsObject()->getString("tensor"), "o");
}

TEST_F(CompileKernelTest, TargetsRefuseEachOthersArtefacts) {
  std::string message;
  for (auto [target, stage, expected] :
       {std::tuple{flashc::TargetKind::Cpu, flashc::KernelStage::Ptx,
                   "PTX and cubin are GPU artefacts"},
        std::tuple{flashc::TargetKind::Gpu, flashc::KernelStage::SharedLibrary,
                   "a shared library is the CPU target's artefact"}}) {
    OwningOpRef<ModuleOp> module = parse(kKernel);
    ASSERT_TRUE(module);
    flashc::KernelCompileOptions options;
    options.targetKind = target;
    options.stage = stage;
    llvm::Expected<flashc::CompiledKernel> compiled =
        flashc::compileKernel(*module, options);
    ASSERT_FALSE(static_cast<bool>(compiled));
    EXPECT_EQ(stageOf(compiled.takeError(), message), "");
    EXPECT_NE(message.find(expected), std::string::npos) << message;
  }
}

} // namespace
