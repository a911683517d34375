//===- CApiTest.cpp - The flashrt_* C API without a GPU -------------------===//
//
// Status codes and the thread-local message of flashrt_last_error(), through
// flashrt_validate (which needs no driver) and, where there is no driver,
// the "no CUDA driver" path of flashrt_kernel_load.
//
//===----------------------------------------------------------------------===//

#include "TestMetadata.h"

#include "flashc/Runtime/flashrt.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/raw_ostream.h"

#include "gtest/gtest.h"

#include <string>
#include <thread>

using namespace flashc::rt::test;
using namespace llvm;

namespace {

std::string writeMetadata(const json::Object &obj = validMetadataJson()) {
  SmallString<128> path;
  sys::fs::createTemporaryFile("flashrt-capi", "json", path);
  std::error_code ec;
  raw_fd_ostream os(path, ec);
  os << toText(obj);
  return std::string(path);
}

flashrt_tensor tensor(int64_t b, int64_t h, int64_t n, int64_t d,
                      uintptr_t addr) {
  flashrt_tensor t = {};
  t.data = reinterpret_cast<void *>(addr);
  t.dtype = FLASHRT_DTYPE_BF16;
  t.rank = 4;
  int64_t sizes[4] = {b, h, n, d}, strides[4] = {h * n * d, n * d, d, 1};
  for (int i = 0; i < 4; ++i)
    t.sizes[i] = sizes[i], t.strides[i] = strides[i];
  return t;
}

/// A contiguous f32 B x H x N tensor (the LSE) at `addr`.
flashrt_tensor lseTensor(int64_t b, int64_t h, int64_t n, uintptr_t addr) {
  flashrt_tensor t = {};
  t.data = reinterpret_cast<void *>(addr);
  t.dtype = FLASHRT_DTYPE_F32;
  t.rank = 3;
  int64_t sizes[3] = {b, h, n}, strides[3] = {h * n, n, 1};
  for (int i = 0; i < 3; ++i)
    t.sizes[i] = sizes[i], t.strides[i] = strides[i];
  return t;
}

TEST(CApi, ValidateOkAndErrors) {
  std::string path = writeMetadata();
  flashrt_tensor q = tensor(1, 2, 64, 128, 0x10000),
                 k = tensor(1, 2, 64, 128, 0x20000),
                 v = tensor(1, 2, 64, 128, 0x30000),
                 o = tensor(1, 2, 64, 128, 0x40000);
  flashrt_tensor lse = lseTensor(1, 2, 64, 0x50000);
  EXPECT_EQ(flashrt_validate(path.c_str(), &q, &k, &v, &o, &lse), FLASHRT_OK)
      << flashrt_last_error();

  EXPECT_EQ(flashrt_validate(path.c_str(), &q, &k, &v, &o, nullptr),
            FLASHRT_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(flashrt_last_error()).find("lse is missing"),
            std::string::npos);

  // The message is per thread.
  std::string other = "unset";
  std::thread([&] { other = flashrt_last_error(); }).join();
  EXPECT_EQ(other, "");

  k.dtype = 99;
  EXPECT_EQ(flashrt_validate(path.c_str(), &q, &k, &v, &o, &lse),
            FLASHRT_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(flashrt_last_error()).find("unknown dtype code 99"),
            std::string::npos);
  sys::fs::remove(path);
}

TEST(CApi, EmptyTensorIsNamedNotMissing) {
  std::string path = writeMetadata();
  flashrt_tensor q = tensor(1, 2, 64, 128, 0x10000),
                 o = tensor(1, 2, 64, 128, 0x40000);
  flashrt_tensor k = tensor(1, 2, 0, 128, 0), v = tensor(1, 2, 0, 128, 0);
  EXPECT_EQ(flashrt_validate(path.c_str(), &q, &k, &v, &o, nullptr),
            FLASHRT_ERROR_INVALID_ARGUMENT);
  std::string err = flashrt_last_error();
  EXPECT_NE(err.find("has seq_k = 0"), std::string::npos) << err;
  EXPECT_EQ(err.find("k is missing"), std::string::npos) << err;
  sys::fs::remove(path);
}

TEST(CApi, MissingMetadataFile) {
  flashrt_tensor q = {};
  EXPECT_EQ(flashrt_validate("/nonexistent/k.json", &q, &q, &q, &q, nullptr),
            FLASHRT_ERROR_IO);
  EXPECT_NE(std::string(flashrt_last_error()).find("/nonexistent/k.json"),
            std::string::npos);
}

TEST(CApi, PackedLaunchChecksItsArguments) {
  // Refused before any driver call, with the same messages as
  // flashrt_launch's.
  EXPECT_EQ(flashrt_launch_packed(nullptr, nullptr),
            FLASHRT_ERROR_INVALID_ARGUMENT);
  EXPECT_STREQ(flashrt_last_error(), "args is NULL");
  flashrt_tensor q = tensor(1, 2, 64, 64, 0x1000);
  flashrt_launch_args args = {&q, &q, &q, &q, nullptr, nullptr};
  EXPECT_EQ(flashrt_launch_packed(nullptr, &args),
            FLASHRT_ERROR_INVALID_ARGUMENT);
  EXPECT_STREQ(flashrt_last_error(), "kernel is NULL");
}

TEST(CApi, VarlenValidateOkAndErrors) {
  // Two sequences of 3 and 5 rows in T x H x D storage, H = 2, D = 128.
  std::string path = writeMetadata(packedMetadataJson());
  auto packed = [](int64_t t, uintptr_t addr) {
    flashrt_tensor x = tensor(1, 2, t, 128, addr);
    x.strides[0] = t * 2 * 128, x.strides[1] = 128, x.strides[2] = 2 * 128;
    return x;
  };
  flashrt_tensor q = packed(8, 0x10000), k = packed(8, 0x20000),
                 v = packed(8, 0x30000), o = packed(8, 0x40000);
  flashrt_tensor lse = lseTensor(1, 2, 8, 0x50000);
  flashrt_tensor cu = {};
  cu.data = reinterpret_cast<void *>(0x60000);
  cu.dtype = FLASHRT_DTYPE_I32;
  cu.rank = 1;
  cu.sizes[0] = 3;
  cu.strides[0] = 1;
  flashrt_varlen_args args = {&q, &k, &v, &o, &lse, &cu, &cu, 5, nullptr};
  EXPECT_EQ(flashrt_validate_varlen(path.c_str(), &args), FLASHRT_OK)
      << flashrt_last_error();
  flashrt_tensor wrong = cu;
  wrong.dtype = FLASHRT_DTYPE_F32;
  args.cu_seqlens_k = &wrong;
  EXPECT_EQ(flashrt_validate_varlen(path.c_str(), &args),
            FLASHRT_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(flashrt_last_error())
                .find("cu_seqlens_k has dtype f32; expected i32"),
            std::string::npos)
      << flashrt_last_error();
  // The dense entry point gives no cu_seqlens: a packed kernel names them.
  EXPECT_EQ(flashrt_validate(path.c_str(), &q, &k, &v, &o, &lse),
            FLASHRT_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(flashrt_last_error()).find("cu_seqlens_q is missing"),
            std::string::npos);
  EXPECT_EQ(flashrt_launch_varlen(nullptr, &args),
            FLASHRT_ERROR_INVALID_ARGUMENT);
  EXPECT_STREQ(flashrt_last_error(), "kernel or args is NULL");
  sys::fs::remove(path);
}

TEST(CApi, DecodeValidateOkAndErrors) {
  // B = 2, 8 query heads over 2 K/V heads, one new token, 10 vLLM pages of
  // 64 x 2 x 128 viewed [10, 2, 64, 128], 3 pages a batch at most.
  std::string path = writeMetadata(decodeMetadataJson(64, true));
  flashrt_tensor q = tensor(2, 8, 1, 128, 0x10000),
                 o = tensor(2, 8, 1, 128, 0x20000);
  flashrt_tensor lse = lseTensor(2, 8, 1, 0x30000);
  flashrt_tensor cache = tensor(10, 2, 64, 128, 0x100000);
  cache.strides[1] = 128, cache.strides[2] = 2 * 128;
  flashrt_tensor table = {};
  table.data = reinterpret_cast<void *>(0x60000);
  table.dtype = FLASHRT_DTYPE_I32;
  table.rank = 2;
  table.sizes[0] = 2, table.sizes[1] = 3;
  table.strides[0] = 3, table.strides[1] = 1;
  flashrt_tensor lens = {};
  lens.data = reinterpret_cast<void *>(0x70000);
  lens.dtype = FLASHRT_DTYPE_I32;
  lens.rank = 1;
  lens.sizes[0] = 2;
  lens.strides[0] = 1;
  flashrt_decode_args args = {&q,    &cache, &cache,  &o, &lse,   &table,
                              &lens, 0,      nullptr, 0,  nullptr};
  EXPECT_EQ(flashrt_validate_decode(path.c_str(), &args, nullptr), FLASHRT_OK)
      << flashrt_last_error();
  flashrt_tensor short_table = table;
  short_table.sizes[0] = 1;
  args.page_table = &short_table;
  EXPECT_EQ(flashrt_validate_decode(path.c_str(), &args, nullptr),
            FLASHRT_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(flashrt_last_error())
                .find("page_table is int32 [1, 3]; the kernel needs int32 "
                      "[B=2, max_pages]"),
            std::string::npos)
      << flashrt_last_error();
  args.page_table = nullptr;
  args.num_splits = -2;
  EXPECT_EQ(flashrt_validate_decode(path.c_str(), &args, nullptr),
            FLASHRT_ERROR_INVALID_ARGUMENT);
  std::string err = flashrt_last_error();
  EXPECT_NE(err.find("page_table is missing"), std::string::npos) << err;
  EXPECT_NE(err.find("num_splits = -2"), std::string::npos) << err;
  // The other entry points refuse a decoding kernel, naming this one.
  flashrt_tensor k = tensor(2, 2, 64, 128, 0x100000);
  EXPECT_EQ(flashrt_validate(path.c_str(), &q, &k, &k, &o, &lse),
            FLASHRT_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(flashrt_last_error()).find("flashrt_launch_decode"),
            std::string::npos)
      << flashrt_last_error();
  EXPECT_EQ(flashrt_launch_decode(nullptr, &args, nullptr),
            FLASHRT_ERROR_INVALID_ARGUMENT);
  EXPECT_STREQ(flashrt_last_error(), "kernel or args is NULL");
  uint64_t bytes = 0;
  EXPECT_EQ(flashrt_decode_workspace_bytes(nullptr, &args, &bytes),
            FLASHRT_ERROR_INVALID_ARGUMENT);
  int32_t splits = 0;
  EXPECT_EQ(flashrt_decode_num_splits(nullptr, &args, &splits),
            FLASHRT_ERROR_INVALID_ARGUMENT);
  sys::fs::remove(path);
}

TEST(CApi, NoDriverIsNamed) {
  int count = -1;
  if (flashrt_device_count(&count) != FLASHRT_ERROR_NO_DRIVER)
    GTEST_SKIP() << "a CUDA driver is present";
  EXPECT_NE(std::string(flashrt_last_error()).find("no CUDA driver"),
            std::string::npos);
  EXPECT_STREQ(flashrt_status_string(FLASHRT_ERROR_NO_DRIVER),
               "no CUDA driver");
}

} // namespace
