//===- BinaryCheckTest.cpp - cubin/PTX checks against metadata ------------===//
//
// Synthetic CUDA ELF images and PTX texts: wrong machine, wrong arch,
// missing symbol, and which arch runs on which GPU.
//
//===----------------------------------------------------------------------===//

#include "TestMetadata.h"

#include "flashc/Runtime/BinaryCheck.h"

#include "gtest/gtest.h"

#include <cstring>

using namespace flashc::rt;
using namespace flashc::rt::test;
using namespace llvm;

namespace {

void put16(std::string &s, size_t off, uint16_t v) {
  std::memcpy(&s[off], &v, 2);
}
void put32(std::string &s, size_t off, uint32_t v) {
  std::memcpy(&s[off], &v, 4);
}
void put64(std::string &s, size_t off, uint64_t v) {
  std::memcpy(&s[off], &v, 8);
}

/// A minimal 64-bit ELF: header, a section-name table, section headers.
std::string makeElf(uint16_t machine, uint32_t flags,
                    std::vector<std::string> sections, std::string note = "") {
  std::string strtab(1, '\0');
  std::vector<uint32_t> nameOffsets = {0};
  sections.insert(sections.begin(), ".shstrtab");
  for (const std::string &s : sections) {
    nameOffsets.push_back(uint32_t(strtab.size()));
    strtab += s + '\0';
  }
  std::string elf(64, '\0');
  elf.replace(0, 4,
              "\x7f"
              "ELF");
  elf[4] = 2; // 64-bit
  elf[5] = 1; // little endian
  elf[6] = 1;
  elf[7] = 0x41; // CUDA OS/ABI
  elf[8] = 8;    // ABI version 8: SM in bits 8..15 of e_flags
  put16(elf, 18, machine);
  put32(elf, 48, flags);
  size_t strOff = elf.size();
  elf += strtab + note;
  while (elf.size() % 8)
    elf += '\0';
  size_t shoff = elf.size();
  unsigned shnum = unsigned(sections.size()) + 1;
  elf.append(64 * shnum, '\0');
  put64(elf, 40, shoff);
  put16(elf, 58, 64);
  put16(elf, 60, uint16_t(shnum));
  put16(elf, 62, 1); // .shstrtab is section 1
  for (unsigned i = 1; i < shnum; ++i)
    put32(elf, shoff + 64 * i, nameOffsets[i]);
  put64(elf, shoff + 64 + 24, strOff);
  put64(elf, shoff + 64 + 32, strtab.size());
  return elf;
}

constexpr uint16_t kEmCuda = 190, kEmX86_64 = 62;
const char *kSection = ".text.ref_attention_bf16_d128_full";

std::string errorOf(Error err) {
  return err ? toString(std::move(err)) : "<ok>";
}

TEST(BinaryCheck, AcceptsMatchingCubin) {
  KernelMetadata meta = validMetadata();
  std::string elf = makeElf(kEmCuda, 0x6005a04, {kSection, ".nv.info"},
                            std::string("-arch sm_90a -m 64 ") + '\0');
  auto arch = cubinArch(elf);
  ASSERT_TRUE(bool(arch));
  EXPECT_EQ(*arch, "sm_90a");
  EXPECT_EQ(errorOf(checkBinary(meta, elf)), "<ok>");
}

TEST(BinaryCheck, NotElf) {
  KernelMetadata meta = validMetadata();
  std::string text(100, ' ');
  EXPECT_NE(errorOf(checkBinary(meta, text)).find("not an ELF file"),
            std::string::npos);
}

TEST(BinaryCheck, NotCudaMachine) {
  KernelMetadata meta = validMetadata();
  std::string elf = makeElf(kEmX86_64, 0, {kSection});
  EXPECT_NE(errorOf(checkBinary(meta, elf))
                .find("ELF machine is 62, not CUDA (190): this is no cubin"),
            std::string::npos);
}

TEST(BinaryCheck, OtherArch) {
  KernelMetadata meta = validMetadata();
  std::string elf = makeElf(kEmCuda, 0x6005004, {kSection}); // sm_80
  EXPECT_NE(errorOf(checkBinary(meta, elf))
                .find("was built for sm_80 but its metadata says sm_90a"),
            std::string::npos);
}

TEST(BinaryCheck, MissingSymbol) {
  KernelMetadata meta = validMetadata();
  std::string elf = makeElf(kEmCuda, 0x6005a04, {".text.other"},
                            std::string("-arch sm_90a ") + '\0');
  EXPECT_NE(errorOf(checkBinary(meta, elf))
                .find("has no kernel 'ref_attention_bf16_d128_full'"),
            std::string::npos);
}

TEST(BinaryCheck, Ptx) {
  KernelMetadata meta = validMetadata();
  meta.binaryFormat = BinaryFormat::Ptx;
  std::string ptx = ".version 8.0\n.target sm_90a\n.address_size 64\n"
                    ".visible .entry ref_attention_bf16_d128_full(\n)\n{}\n";
  EXPECT_EQ(errorOf(checkBinary(meta, ptx)), "<ok>");
  std::string other = ".version 8.0\n.target sm_80\n.visible .entry "
                      "ref_attention_bf16_d128_full(\n)\n";
  EXPECT_NE(errorOf(checkBinary(meta, other))
                .find("targets sm_80 but its metadata says sm_90a"),
            std::string::npos);
  std::string noEntry = ".target sm_90a\n.visible .entry "
                        "ref_attention_bf16_d128_full_v2(\n)\n";
  EXPECT_NE(errorOf(checkBinary(meta, noEntry)).find("has no .entry"),
            std::string::npos);
}

TEST(BinaryCheck, ArchRunsOn) {
  EXPECT_EQ(errorOf(checkArchRunsOn("sm_90a", BinaryFormat::Cubin, 9, 0)),
            "<ok>");
  EXPECT_NE(errorOf(checkArchRunsOn("sm_90a", BinaryFormat::Cubin, 10, 0))
                .find("built for sm_90a but the GPU is sm_100"),
            std::string::npos);
  EXPECT_EQ(errorOf(checkArchRunsOn("sm_80", BinaryFormat::Cubin, 8, 6)),
            "<ok>");
  EXPECT_NE(errorOf(checkArchRunsOn("sm_80", BinaryFormat::Cubin, 9, 0)),
            "<ok>");
  EXPECT_EQ(errorOf(checkArchRunsOn("sm_80", BinaryFormat::Ptx, 9, 0)), "<ok>");
  EXPECT_NE(errorOf(checkArchRunsOn("sm_90a", BinaryFormat::Ptx, 10, 0)),
            "<ok>");
}

} // namespace
