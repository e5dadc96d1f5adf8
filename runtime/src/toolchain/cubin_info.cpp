#include "fa4jit/runtime/cubin_info.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <elf.h>
#include <map>

namespace fa4jit::runtime {
namespace {

constexpr uint16_t kEmCuda = 190;
// On sm_90 and later ptxas places a 1 KiB system reservation inside each kernel's .nv.shared
// section (observed with CUDA 13.0: 300 floats -> 0x8b0 bytes, ptxas "1200 bytes smem"); the
// driver adds it on every architecture, so it is not part of what the kernel asked for.
constexpr int kSm90SectionReservedShared = 1024;

// .nv.info entry formats and the attributes read here (checked against ptxas -v on CUDA 13.0).
enum : uint8_t { kFmtNval = 1, kFmtBval = 2, kFmtHval = 3, kFmtSval = 4 };
enum : uint8_t {
  kAttrMaxThreads = 0x05,
  kAttrFrameSize = 0x11,
  kAttrCbankParamSize = 0x19,
  kAttrRegCount = 0x2f,
  kAttrClusterDims = 0x3d,
};

llvm::Error malformed(const llvm::Twine &what) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                 "malformed cubin: " + what.str());
}

template <typename T> bool readAt(llvm::ArrayRef<uint8_t> bytes, uint64_t offset, T *out) {
  if (offset > bytes.size() || bytes.size() - offset < sizeof(T))
    return false;
  std::memcpy(out, bytes.data() + offset, sizeof(T));
  return true;
}

struct Section {
  Elf64_Shdr header;
  std::string name;
  llvm::ArrayRef<uint8_t> data; // empty for NOBITS
};

uint32_t readU32(llvm::ArrayRef<uint8_t> d, size_t at) {
  uint32_t v = 0;
  std::memcpy(&v, d.data() + at, sizeof v);
  return v;
}

// Calls fn(attr, value_bytes) for each .nv.info entry; values are the bytes after the 4-byte
// entry header (SVAL) or the 2 header bytes themselves (BVAL/HVAL).
template <typename Fn> llvm::Error forEachAttribute(const Section &s, Fn fn) {
  llvm::ArrayRef<uint8_t> d = s.data;
  size_t at = 0;
  while (at + 4 <= d.size()) {
    uint8_t format = d[at], attr = d[at + 1];
    if (format == kFmtSval) {
      uint16_t size = 0;
      std::memcpy(&size, d.data() + at + 2, sizeof size);
      if (at + 4 + size > d.size())
        return malformed("attribute runs past the end of " + s.name);
      fn(attr, d.slice(at + 4, size));
      at += 4 + size;
    } else if (format == kFmtNval || format == kFmtBval || format == kFmtHval) {
      fn(attr, d.slice(at + 2, 2));
      at += 4;
    } else {
      return malformed(fmt::format("unknown attribute format {0} in {1}", int(format), s.name));
    }
  }
  return llvm::Error::success();
}

} // namespace

const CubinKernelInfo *CubinInfo::find(llvm::StringRef kernel_name) const {
  for (const CubinKernelInfo &k : kernels)
    if (k.name == kernel_name)
      return &k;
  return nullptr;
}

llvm::Expected<CubinInfo> readCubinInfo(llvm::ArrayRef<uint8_t> cubin) {
  Elf64_Ehdr eh;
  if (!readAt(cubin, 0, &eh) || std::memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0)
    return malformed("not an ELF file");
  if (eh.e_ident[EI_CLASS] != ELFCLASS64 || eh.e_machine != kEmCuda)
    return malformed(fmt::format("not a 64-bit CUDA ELF (class {0}, machine {1})",
                                   int(eh.e_ident[EI_CLASS]), int(eh.e_machine)));
  if (eh.e_shentsize != sizeof(Elf64_Shdr))
    return malformed("unexpected section header size");

  std::vector<Section> sections(eh.e_shnum);
  for (unsigned i = 0; i < eh.e_shnum; ++i) {
    if (!readAt(cubin, eh.e_shoff + uint64_t(i) * sizeof(Elf64_Shdr), &sections[i].header))
      return malformed("section header table out of bounds");
    const Elf64_Shdr &sh = sections[i].header;
    if (sh.sh_type != SHT_NOBITS && sh.sh_size > 0) {
      if (sh.sh_offset > cubin.size() || cubin.size() - sh.sh_offset < sh.sh_size)
        return malformed(fmt::format("section {0} out of bounds", i));
      sections[i].data = cubin.slice(sh.sh_offset, sh.sh_size);
    }
  }
  if (eh.e_shstrndx >= sections.size())
    return malformed("no section name table");
  llvm::ArrayRef<uint8_t> names = sections[eh.e_shstrndx].data;
  auto cString = [](llvm::ArrayRef<uint8_t> table, uint64_t at) -> std::string {
    if (at >= table.size())
      return {};
    const char *p = reinterpret_cast<const char *>(table.data()) + at;
    return std::string(p, strnlen(p, table.size() - at));
  };
  for (Section &s : sections)
    s.name = cString(names, s.header.sh_name);

  CubinInfo info;
  info.elf_abi_version = eh.e_ident[EI_ABIVERSION];
  // ELF ABI 8 (CUDA 12.8+) moved the SM number from bits 0-7 to bits 8-15 of e_flags.
  unsigned sm = info.elf_abi_version >= 8 ? (eh.e_flags >> 8) & 0xff : eh.e_flags & 0xff;
  info.arch.major = static_cast<int>(sm / 10);
  info.arch.minor = static_cast<int>(sm % 10);

  // The 'a'/'f' suffix is not in e_flags (sm_90 and sm_90a cubins share them); ptxas records
  // its command line, "-arch sm_90a", in the .note.nv.tkinfo note.
  for (const Section &s : sections) {
    if (s.name != ".note.nv.tkinfo")
      continue;
    llvm::StringRef text(reinterpret_cast<const char *>(s.data.data()), s.data.size());
    size_t at = text.find("-arch sm_");
    if (at == llvm::StringRef::npos)
      continue;
    llvm::StringRef word = text.substr(at + 6).take_until([](char c) { return c == ' ' || c == '\0'; });
    if (llvm::Expected<GpuArch> parsed = parseGpuArch(word)) {
      if (parsed->smNumber() != static_cast<int>(sm))
        return malformed("ptxas note says " + word + " but e_flags say sm_" + std::to_string(sm));
      info.arch.suffix = parsed->suffix;
      info.suffix_known = true;
    } else {
      llvm::consumeError(parsed.takeError());
    }
  }

  // Symbol names for the symbol indices in .nv.info.
  std::vector<std::string> symbolNames;
  for (const Section &s : sections) {
    if (s.header.sh_type != SHT_SYMTAB)
      continue;
    if (s.header.sh_link >= sections.size() || s.header.sh_entsize != sizeof(Elf64_Sym))
      return malformed("bad symbol table");
    llvm::ArrayRef<uint8_t> strtab = sections[s.header.sh_link].data;
    for (size_t at = 0; at + sizeof(Elf64_Sym) <= s.data.size(); at += sizeof(Elf64_Sym)) {
      Elf64_Sym sym;
      std::memcpy(&sym, s.data.data() + at, sizeof sym);
      symbolNames.push_back(cString(strtab, sym.st_name));
    }
    break;
  }

  bool hasSystemReservation = false;
  for (const Section &s : sections)
    hasSystemReservation |= llvm::StringRef(s.name).startswith(".nv.shared.reserved.");

  std::map<std::string, CubinKernelInfo> kernels;
  for (const Section &s : sections) {
    llvm::StringRef name(s.name);
    if (name.consume_front(".nv.info.")) {
      CubinKernelInfo &k = kernels[name.str()];
      k.name = name.str();
      if (llvm::Error e = forEachAttribute(s, [&](uint8_t attr, llvm::ArrayRef<uint8_t> v) {
            if (attr == kAttrMaxThreads && v.size() >= 12)
              k.max_threads = static_cast<int>(readU32(v, 0) * readU32(v, 4) * readU32(v, 8));
            else if (attr == kAttrCbankParamSize && v.size() == 2)
              k.param_bytes = v[0] | (v[1] << 8);
            else if (attr == kAttrClusterDims && v.size() >= 12)
              for (int i = 0; i < 3; ++i)
                k.cluster_dims[i] = static_cast<int>(readU32(v, 4 * i));
          }))
        return e;
    }
  }
  for (const Section &s : sections) {
    llvm::StringRef name(s.name);
    if (name.consume_front(".nv.shared.")) {
      auto it = kernels.find(name.str());
      if (it == kernels.end())
        continue;
      int64_t bytes = static_cast<int64_t>(s.header.sh_size);
      if (hasSystemReservation && info.arch.major >= 9)
        bytes = std::max<int64_t>(0, bytes - kSm90SectionReservedShared);
      it->second.static_shared_bytes = static_cast<int>(bytes);
    }
  }
  for (const Section &s : sections) {
    if (s.name != ".nv.info")
      continue;
    if (llvm::Error e = forEachAttribute(s, [&](uint8_t attr, llvm::ArrayRef<uint8_t> v) {
          if ((attr != kAttrRegCount && attr != kAttrFrameSize) || v.size() < 8)
            return;
          uint32_t symbol = readU32(v, 0), value = readU32(v, 4);
          if (symbol >= symbolNames.size())
            return;
          auto it = kernels.find(symbolNames[symbol]);
          if (it == kernels.end())
            return;
          if (attr == kAttrRegCount)
            it->second.registers = static_cast<int>(value);
          else
            it->second.stack_frame_bytes = static_cast<int>(value);
        }))
      return e;
  }
  for (auto &entry : kernels)
    info.kernels.push_back(std::move(entry.second));
  return info;
}

} // namespace fa4jit::runtime
