//===- RuntimeGpuTest.cpp - libflashrt on a real GPU ----------------------===//
//
// Loads the hand-written test kernels and checks what only a driver can:
// a launch that computes, and the errors for a missing symbol, a cubin for
// another arch, metadata whose parameters differ from the binary's, a host
// pointer, and a bad argument that must not fault the GPU. Exits 77
// (skipped, for ctest) with "skipped: ..." where there is no driver or GPU.
//
//===----------------------------------------------------------------------===//

#include "flashc/Runtime/Kernel.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include "gtest/gtest.h"

#include <cmath>
#include <cstdlib>
#include <vector>

using namespace flashc::rt;
using namespace llvm;

namespace {

std::string kernelDir() {
  if (const char *dir = std::getenv("FLASHRT_TEST_KERNEL_DIR"))
    return dir;
  return FLASHRT_TEST_KERNEL_DIR;
}

std::string kernelPath(StringRef name) {
  SmallString<256> p(kernelDir());
  sys::path::append(p, name);
  return std::string(p);
}

/// Copies `binary` into a fresh directory beside a metadata file derived
/// from `jsonName` by `edit`; returns the new binary's path.
std::string variant(StringRef binary, StringRef jsonName,
                    function_ref<void(json::Object &)> edit) {
  SmallString<128> dir;
  EXPECT_FALSE(sys::fs::createUniqueDirectory("flashrt-gpu-test", dir));
  // A missing fixture fails the test, never crashes the whole binary
  // (prepare-gpu-host.sh with FLASHC_ONLY=1 leaves the fixtures out).
  auto text = MemoryBuffer::getFile(kernelPath(jsonName));
  if (!text) {
    ADD_FAILURE() << "cannot read " << kernelPath(jsonName);
    return "";
  }
  auto doc = json::parse((*text)->getBuffer());
  if (!doc) {
    ADD_FAILURE() << kernelPath(jsonName) << ": " << toString(doc.takeError());
    return "";
  }
  json::Object &obj = *doc->getAsObject();
  SmallString<256> bin(dir);
  sys::path::append(bin, "k.cubin");
  obj["binary"] = "k.cubin";
  edit(obj);
  EXPECT_FALSE(sys::fs::copy_file(kernelPath(binary), bin));
  SmallString<256> json(dir);
  sys::path::append(json, "k.json");
  std::error_code ec;
  raw_fd_ostream os(json, ec);
  os << json::Value(std::move(obj));
  return std::string(bin);
}

std::string loadError(StringRef path) {
  auto k = Kernel::load(path, 0);
  return k ? "<ok>" : toString(k.takeError());
}

/// Device buffers for a contiguous B x H x N x D problem, freed at the end.
struct Buffers {
  const DriverApi &cu;
  std::vector<CUdeviceptr> ptrs;
  explicit Buffers(const DriverApi &cu) : cu(cu) {}
  ~Buffers() {
    for (CUdeviceptr p : ptrs)
      cu.cuMemFree(p);
  }
  CUdeviceptr alloc(size_t bytes) {
    CUdeviceptr p = 0;
    EXPECT_EQ(cu.cuMemAlloc(&p, bytes), CUDA_SUCCESS);
    ptrs.push_back(p);
    return p;
  }
};

LaunchArgs argsFor(Buffers &buf, int64_t b, int64_t h, int64_t n, int64_t d,
                   bool lse) {
  LaunchArgs args;
  for (unsigned i = 0; i < 4; ++i) {
    TensorArg &t = args.tensors[i];
    t.data = buf.alloc(size_t(b * h * n * d) * 2);
    t.dtype = DType::BF16;
    t.rank = 4;
    int64_t sizes[4] = {b, h, n, d}, strides[4] = {h * n * d, n * d, d, 1};
    for (unsigned k = 0; k < 4; ++k)
      t.sizes[k] = sizes[k], t.strides[k] = strides[k];
  }
  if (lse) {
    TensorArg &t = args[TensorId::LSE];
    t.data = buf.alloc(size_t(b * h * n) * 4);
    t.dtype = DType::F32;
    t.rank = 3;
    int64_t sizes[3] = {b, h, n}, strides[3] = {h * n, n, 1};
    for (unsigned k = 0; k < 3; ++k)
      t.sizes[k] = sizes[k], t.strides[k] = strides[k];
  }
  return args;
}

const char *kName = "ref_attention_bf16_d64_full";

TEST(RuntimeGpu, LaunchComputes) {
  auto k = Kernel::load(kernelPath(std::string(kName) + ".cubin"), 0);
  ASSERT_TRUE(bool(k)) << toString(k.takeError());
  const DriverApi &cu = **getDriver();
  ScopedContext scope((*k)->getContext());
  Buffers buf(cu);
  int64_t b = 2, h = 3, n = 100, d = 64, elems = b * h * n * d;
  LaunchArgs args = argsFor(buf, b, h, n, d, true);
  // q = k = v = 1 (bf16 0x3f80): every O element is exactly 1, LSE = log(n).
  for (unsigned i = 0; i < 3; ++i)
    ASSERT_EQ(cu.cuMemsetD16(args.tensors[i].data, 0x3f80, size_t(elems)),
              CUDA_SUCCESS);
  ASSERT_EQ(cu.cuMemsetD16(args[TensorId::O].data, 0x7fc0, size_t(elems)),
            CUDA_SUCCESS);
  Error err = (*k)->launch(args, nullptr);
  ASSERT_FALSE(bool(err)) << toString(std::move(err));
  ASSERT_EQ(cu.cuCtxSynchronize(), CUDA_SUCCESS);
  std::vector<uint16_t> o(static_cast<size_t>(elems));
  std::vector<float> lse(size_t(b * h * n));
  cu.cuMemcpyDtoH(o.data(), args[TensorId::O].data, o.size() * 2);
  cu.cuMemcpyDtoH(lse.data(), args[TensorId::LSE].data, lse.size() * 4);
  for (uint16_t x : o)
    ASSERT_EQ(x, 0x3f80);
  double want = 0.125 * 64 + std::log(100.0); // scale * q.k + log(n)
  for (float x : lse)
    ASSERT_NEAR(x, want, 1e-4);
}

TEST(RuntimeGpu, MissingSymbol) {
  std::string bin =
      variant(std::string(kName) + ".cubin", std::string(kName) + ".json",
              [](json::Object &o) { o["kernel"] = "nope"; });
  EXPECT_NE(loadError(bin).find("has no kernel 'nope'"), std::string::npos)
      << loadError(bin);
}

TEST(RuntimeGpu, CubinForOtherArch) {
  std::string bin =
      variant("ref_attention_sm80.cubin", std::string(kName) + ".json",
              [](json::Object &o) { o["arch"] = "sm_80"; });
  std::string err = loadError(bin);
  EXPECT_NE(err.find("was built for sm_80 but the GPU is sm_9"),
            std::string::npos)
      << err;
}

TEST(RuntimeGpu, MetadataArchDisagreesWithCubin) {
  std::string bin =
      variant("ref_attention_sm80.cubin", std::string(kName) + ".json",
              [](json::Object &) {});
  std::string err = loadError(bin);
  EXPECT_NE(err.find("built for sm_80 but its metadata says sm_90a"),
            std::string::npos)
      << err;
}

TEST(RuntimeGpu, ParamsDifferFromBinary) {
  std::string bin =
      variant(std::string(kName) + ".cubin", std::string(kName) + ".json",
              [](json::Object &o) { o.getArray("params")->pop_back(); });
  std::string err = loadError(bin);
  EXPECT_NE(err.find("metadata does not match kernel"), std::string::npos)
      << err;
  EXPECT_NE(err.find("23 parameters, the metadata 22"), std::string::npos)
      << err;
}

TEST(RuntimeGpu, HostPointerRefused) {
  auto k = Kernel::load(kernelPath(std::string(kName) + ".cubin"), 0);
  ASSERT_TRUE(bool(k)) << toString(k.takeError());
  ScopedContext scope((*k)->getContext());
  Buffers buf(**getDriver());
  LaunchArgs args = argsFor(buf, 1, 1, 64, 64, true);
  alignas(16) static uint16_t host[64 * 64];
  args[TensorId::V].data = reinterpret_cast<uint64_t>(host);
  Error err = (*k)->launch(args, nullptr);
  ASSERT_TRUE(bool(err));
  std::string msg = toString(std::move(err));
  EXPECT_NE(msg.find("v data pointer"), std::string::npos) << msg;
  EXPECT_NE(msg.find("not memory the CUDA driver knows"), std::string::npos)
      << msg;
}

TEST(RuntimeGpu, BadArgumentDoesNotFault) {
  auto k = Kernel::load(kernelPath(std::string(kName) + ".cubin"), 0);
  ASSERT_TRUE(bool(k)) << toString(k.takeError());
  const DriverApi &cu = **getDriver();
  ScopedContext scope((*k)->getContext());
  Buffers buf(cu);
  LaunchArgs bad = argsFor(buf, 1, 2, 64, 32, true); // head dim 32, not 64
  Error err = (*k)->launch(bad, nullptr);
  ASSERT_TRUE(bool(err));
  EXPECT_NE(toString(std::move(err)).find("head dim 32"), std::string::npos);
  LaunchArgs missing = argsFor(buf, 1, 2, 64, 64, false); // no LSE
  err = (*k)->launch(missing, nullptr);
  ASSERT_TRUE(bool(err));
  EXPECT_NE(toString(std::move(err)).find("lse is missing"), std::string::npos);
  LaunchArgs good = argsFor(buf, 1, 2, 64, 64, true);
  for (unsigned i = 0; i < 3; ++i)
    cu.cuMemsetD16(good.tensors[i].data, 0x3f80, 64 * 64 * 2);
  err = (*k)->launch(good, nullptr);
  ASSERT_FALSE(bool(err)) << toString(std::move(err));
  EXPECT_EQ(cu.cuCtxSynchronize(), CUDA_SUCCESS);
}

} // namespace

int main(int argc, char **argv) {
  ::testing::InitGoogleTest(&argc, argv);
  auto info = getDeviceInfo(0);
  if (!info) {
    outs() << "skipped: " << toString(info.takeError()) << "\n";
    return 77;
  }
  outs() << "device 0: " << info->name << " (sm_" << info->ccMajor
         << info->ccMinor << ", " << info->numSMs << " SMs)\n";
  if (info->ccMajor != 9 || info->ccMinor != 0) {
    outs() << "skipped: the test kernels are sm_90a cubins\n";
    return 77;
  }
  return RUN_ALL_TESTS();
}
