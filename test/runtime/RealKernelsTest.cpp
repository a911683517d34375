//===- RealKernelsTest.cpp - Test-kernel metadata vs the built cubins -----===//
//
// Without a GPU: every hand-written kernel.json in the test-kernel directory
// parses, and its cubin (built by nvcc in test/gpu) has the arch and symbol
// the metadata names. Skipped where the cubins were not built.
//
//===----------------------------------------------------------------------===//

#include "flashc/Runtime/BinaryCheck.h"
#include "flashc/Runtime/KernelMetadata.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"

#include "gtest/gtest.h"

#include <cstdlib>

using namespace flashc::rt;
using namespace llvm;

namespace {

TEST(RealKernels, MetadataMatchesCubins) {
  const char *env = std::getenv("FLASHRT_TEST_KERNEL_DIR");
  std::string dir = env ? env : FLASHRT_DEFAULT_TEST_KERNEL_DIR;
  std::error_code ec;
  unsigned checked = 0;
  for (sys::fs::directory_iterator it(dir, ec), end; !ec && it != end;
       it.increment(ec)) {
    StringRef path = it->path();
    if (!path.ends_with(".json"))
      continue;
    auto text = MemoryBuffer::getFile(path);
    ASSERT_TRUE(bool(text)) << path.str();
    auto meta = parseKernelMetadata((*text)->getBuffer());
    ASSERT_TRUE(bool(meta)) << path.str() << ": " << toString(meta.takeError());
    SmallString<256> bin(sys::path::parent_path(path));
    sys::path::append(bin, meta->binary);
    auto bytes = MemoryBuffer::getFile(bin);
    ASSERT_TRUE(bool(bytes)) << bin.str().str();
    Error err = checkBinary(*meta, (*bytes)->getBuffer());
    EXPECT_FALSE(bool(err)) << path.str() << ": " << toString(std::move(err));
    // One parameter fewer in the metadata than in the binary is named.
    size_t count = meta->paramSizes().size();
    meta->params.pop_back();
    err = checkBinary(*meta, (*bytes)->getBuffer());
    std::string msg = err ? toString(std::move(err)) : "<ok>";
    EXPECT_NE(msg.find(formatv("the binary has {0} parameters, the metadata "
                               "{1}",
                               count, count - 1)
                           .str()),
              std::string::npos)
        << msg;
    ++checked;
  }
  if (!checked)
    GTEST_SKIP() << "no test kernels in " << dir;
}

} // namespace
