//===- BinaryCheck.cpp - Kernel binary vs metadata, before the driver -----===//
//
// A minimal reader of CUDA ELF headers and section names, and of PTX
// directives, to name a wrong arch or a missing symbol precisely.
//
//===----------------------------------------------------------------------===//

#include "flashc/Runtime/BinaryCheck.h"
#include "flashc/Runtime/Error.h"

#include "llvm/Support/Endian.h"
#include "llvm/Support/FormatVariadic.h"

#include <optional>

using namespace llvm;

namespace flashc::rt {

namespace {
constexpr uint16_t kEmCuda = 190;

uint16_t read16(StringRef b, size_t off) {
  return support::endian::read16le(b.data() + off);
}
uint32_t read32(StringRef b, size_t off) {
  return support::endian::read32le(b.data() + off);
}
uint64_t read64(StringRef b, size_t off) {
  return support::endian::read64le(b.data() + off);
}

Error badCubin(const Twine &why) {
  return makeError(ErrorCode::InvalidKernel, "kernel binary: " + why);
}

struct Section {
  StringRef name;
  StringRef contents;
};

/// Sections of a 64-bit little-endian ELF; empty if unreadable.
SmallVector<Section> sections(StringRef b) {
  SmallVector<Section> result;
  uint64_t shoff = read64(b, 40);
  uint16_t shentsize = read16(b, 58), shnum = read16(b, 60),
           shstrndx = read16(b, 62);
  if (shentsize < 64 || shstrndx >= shnum ||
      shoff + uint64_t(shnum) * shentsize > b.size())
    return result;
  auto sec = [&](unsigned i) { return shoff + uint64_t(i) * shentsize; };
  uint64_t strOff = read64(b, sec(shstrndx) + 24);
  uint64_t strSize = read64(b, sec(shstrndx) + 32);
  if (strOff + strSize > b.size())
    return result;
  StringRef strtab = b.substr(strOff, strSize);
  for (unsigned i = 0; i < shnum; ++i) {
    uint32_t nameOff = read32(b, sec(i));
    if (nameOff >= strtab.size())
      continue;
    Section s;
    s.name = strtab.substr(nameOff).take_until([](char c) { return c == 0; });
    uint32_t type = read32(b, sec(i) + 4);
    uint64_t off = read64(b, sec(i) + 24), size = read64(b, sec(i) + 32);
    if (type != 8 /*SHT_NOBITS*/ && off + size <= b.size())
      s.contents = b.substr(off, size);
    result.push_back(s);
  }
  return result;
}

/// Parameter sizes from a kernel's .nv.info.<kernel> section (EIATTR_KPARAM_
/// INFO records), in ordinal order; std::nullopt if the section has none.
std::optional<SmallVector<unsigned, 32>> paramSizes(StringRef info) {
  constexpr uint8_t kFmtNoValue = 1, kFmtSized = 4, kAttrKParamInfo = 0x17;
  SmallVector<unsigned, 32> sizes;
  bool any = false;
  size_t i = 0;
  while (i + 4 <= info.size()) {
    uint8_t fmt = uint8_t(info[i]), attr = uint8_t(info[i + 1]);
    if (fmt == kFmtNoValue) {
      i += 2;
      continue;
    }
    if (fmt != kFmtSized) {
      i += 4;
      continue;
    }
    uint16_t size = read16(info, i + 2);
    if (i + 4 + size > info.size())
      break;
    if (attr == kAttrKParamInfo && size >= 12) {
      uint16_t ordinal = read16(info, i + 8);
      uint32_t flags = read32(info, i + 12);
      if (ordinal >= sizes.size())
        sizes.resize(ordinal + 1, 0);
      sizes[ordinal] = (flags >> 18) & 0x3fff;
      any = true;
    }
    i += 4 + size;
  }
  if (!any)
    return std::nullopt;
  return sizes;
}
} // namespace

Error checkParamSizes(const KernelMetadata &meta, ArrayRef<unsigned> have) {
  SmallVector<unsigned, 32> want = meta.paramSizes();
  for (size_t i = 0; i < std::min(want.size(), have.size()); ++i)
    if (want[i] != have[i])
      return makeError(ErrorCode::InvalidKernel,
                       formatv("metadata does not match kernel {0}: parameter "
                               "{1} is {2} bytes in the binary, {3} in the "
                               "metadata",
                               meta.kernel, i, have[i], want[i]));
  if (want.size() != have.size())
    return makeError(ErrorCode::InvalidKernel,
                     formatv("metadata does not match kernel {0}: the binary "
                             "has {1} parameters, the metadata {2} (after "
                             "memref expansion)",
                             meta.kernel, have.size(), want.size()));
  return Error::success();
}

Expected<std::string> cubinArch(StringRef b) {
  if (b.size() < 64 || !b.starts_with("\x7f"
                                      "ELF"))
    return badCubin("not an ELF file (is it PTX or a fatbin? set "
                    "\"binary_format\" accordingly)");
  if (b[4] != 2 || b[5] != 1)
    return badCubin("not a 64-bit little-endian ELF");
  uint16_t machine = read16(b, 18);
  if (machine != kEmCuda)
    return badCubin(formatv("ELF machine is {0}, not CUDA ({1}): this is no "
                            "cubin",
                            machine, kEmCuda));
  uint32_t flags = read32(b, 48);
  unsigned abiVersion = uint8_t(b[8]);
  unsigned sm = abiVersion >= 8 ? (flags >> 8) & 0xff : flags & 0xff;
  std::string arch = "sm_" + std::to_string(sm);
  // ptxas records its command line ("-arch sm_90a") in .note.nv.tkinfo; the
  // arch-specific 'a' suffix is only visible there.
  size_t at = b.find("-arch sm_");
  if (at != StringRef::npos) {
    StringRef tok = b.substr(at + 6).take_until(
        [](char c) { return c == ' ' || c == 0 || c == '\n'; });
    unsigned noteSm;
    bool specific;
    if (parseArch(tok, noteSm, specific) && noteSm == sm)
      return tok.str();
  }
  return arch;
}

Error checkBinary(const KernelMetadata &meta, StringRef bytes) {
  if (meta.binaryFormat == BinaryFormat::Cubin) {
    auto arch = cubinArch(bytes);
    if (!arch)
      return arch.takeError();
    if (*arch != meta.arch)
      return makeError(ErrorCode::InvalidKernel,
                       formatv("kernel binary was built for {0} but its "
                               "metadata says {1}",
                               *arch, meta.arch));
    std::string text = ".text." + meta.kernel, info = ".nv.info." + meta.kernel;
    bool found = false;
    std::optional<SmallVector<unsigned, 32>> have;
    for (const Section &s : sections(bytes)) {
      found |= s.name == text;
      if (s.name == info)
        have = paramSizes(s.contents);
    }
    if (!found)
      return makeError(ErrorCode::InvalidKernel,
                       formatv("kernel binary has no kernel '{0}' (the symbol "
                               "the metadata names)",
                               meta.kernel));
    if (have)
      return checkParamSizes(meta, *have);
    return Error::success();
  }
  // PTX: text with a .target directive and the entry.
  size_t at = bytes.find(".target");
  if (at == StringRef::npos)
    return makeError(ErrorCode::InvalidKernel,
                     "kernel binary: no .target directive: not PTX");
  StringRef target = bytes.substr(at + 7).ltrim(" \t").take_until(
      [](char c) { return c == ',' || c == ' ' || c == '\n' || c == '\r'; });
  if (target != meta.arch)
    return makeError(ErrorCode::InvalidKernel,
                     formatv("kernel PTX targets {0} but its metadata says {1}",
                             target, meta.arch));
  for (size_t pos = bytes.find(".entry"); pos != StringRef::npos;
       pos = bytes.find(".entry", pos + 1)) {
    StringRef rest = bytes.substr(pos + 6).ltrim(" \t");
    if (rest.starts_with(meta.kernel)) {
      char next =
          rest.size() > meta.kernel.size() ? rest[meta.kernel.size()] : 0;
      if (next == '(' || next == ' ' || next == '\n' || next == '\t' ||
          next == '\r')
        return Error::success();
    }
  }
  return makeError(ErrorCode::InvalidKernel,
                   formatv("kernel PTX has no .entry '{0}' (the symbol the "
                           "metadata names)",
                           meta.kernel));
}

Error checkArchRunsOn(StringRef arch, BinaryFormat format, int ccMajor,
                      int ccMinor) {
  unsigned sm;
  bool specific;
  if (!parseArch(arch, sm, specific))
    return makeError(ErrorCode::InvalidKernel, "bad arch '" + arch + "'");
  int major = int(sm / 10), minor = int(sm % 10);
  bool ok;
  if (specific)
    ok = major == ccMajor && minor == ccMinor;
  else if (format == BinaryFormat::Cubin)
    ok = major == ccMajor && minor <= ccMinor;
  else
    ok = major < ccMajor || (major == ccMajor && minor <= ccMinor);
  if (ok)
    return Error::success();
  return makeError(ErrorCode::NoDevice,
                   formatv("kernel {0} was built for {1} but the GPU is "
                           "sm_{2}{3} ({4} code cannot run on it)",
                           format == BinaryFormat::Cubin ? "cubin" : "PTX",
                           arch, ccMajor, ccMinor,
                           specific ? "arch-specific" : "this"));
}

} // namespace flashc::rt
