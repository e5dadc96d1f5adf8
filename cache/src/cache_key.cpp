#include "fa4jit/cache/cache_key.h"

#include "fa4jit/cache/cache_version.h"
#include "fa4jit/cache/sha256.h"

#include "llvm/Support/SHA256.h"
#include "llvm/ADT/StringExtras.h"

#include <algorithm>
#include <cassert>
#include <cstdint>

namespace fa4jit::cache {
namespace {

// Values longer than this are shown in the manifest by their hash only.
constexpr size_t kMaxShownPartBytes = 160;

// The option name that decides which options may be reordered: "-DX" for "-DX=1", "-arch" for
// "-arch sm_100a", "--gpu-architecture" for "--gpu-architecture=sm_100a".
llvm::StringRef optionName(llvm::StringRef option) {
  return option.take_until([](char c) { return c == '=' || c == ' '; });
}

void updateLengthPrefixed(llvm::SHA256 &hasher, llvm::StringRef text) {
  uint64_t n = text.size();
  uint8_t le[8];
  for (int i = 0; i < 8; ++i)
    le[i] = static_cast<uint8_t>(n >> (8 * i));
  hasher.update(llvm::ArrayRef<uint8_t>(le, 8));
  hasher.update(text);
}

} // namespace

CacheKeyBuilder &CacheKeyBuilder::part(llvm::StringRef name, llvm::StringRef value) {
  bool inserted = parts_.emplace(name.str(), value.str()).second;
  assert(inserted && "a cache key part was set twice");
  (void)inserted;
  return *this;
}

CacheKeyBuilder &CacheKeyBuilder::source(llvm::StringRef generatedSource) {
  return part("source", generatedSource);
}

CacheKeyBuilder &CacheKeyBuilder::header(llvm::StringRef name, llvm::StringRef contents) {
  return part(("header:" + name).str(), sha256Hex(contents));
}

CacheKeyBuilder &CacheKeyBuilder::nvrtcVersion(int major, int minor, llvm::StringRef build) {
  return part("nvrtc", std::to_string(major) + "." + std::to_string(minor) + " " + build.str());
}

CacheKeyBuilder &CacheKeyBuilder::target(llvm::StringRef targetName) { return part("target", targetName); }

CacheKeyBuilder &CacheKeyBuilder::options(llvm::ArrayRef<std::string> compilerOptions) {
  return part("options", llvm::join(normalizeOptions(compilerOptions), "\n"));
}

CacheKey CacheKeyBuilder::build() const {
  auto all = parts_;
  all["schema"] = std::to_string(schemaVersion());
  llvm::SHA256 hasher;
  CacheKey key;
  // std::map iterates by name, so the order parts were added in does not matter; length prefixes
  // keep ("ab","c") and ("a","bc") apart.
  for (const auto &[name, value] : all) {
    updateLengthPrefixed(hasher, name);
    updateLengthPrefixed(hasher, value);
    bool shown = value.size() <= kMaxShownPartBytes && value.find('\n') == std::string::npos;
    key.parts.emplace_back(name, shown ? value : "sha256:" + sha256Hex(value));
  }
  key.digest = llvm::toHex(hasher.final(), /*LowerCase=*/true);
  return key;
}

std::vector<std::string> normalizeOptions(llvm::ArrayRef<std::string> compilerOptions) {
  std::vector<std::string> bound;
  for (const std::string &raw : compilerOptions) {
    llvm::StringRef token = llvm::StringRef(raw).trim();
    if (token.empty())
      continue;
    if (!token.startswith("-") && !bound.empty() && bound.back().find(' ') == std::string::npos &&
        bound.back().find('=') == std::string::npos)
      bound.back() += " " + token.str();
    else
      bound.push_back(token.str());
  }
  std::stable_sort(bound.begin(), bound.end(), [](const std::string &a, const std::string &b) {
    return optionName(a) < optionName(b);
  });
  bound.erase(std::unique(bound.begin(), bound.end()), bound.end());
  return bound;
}

} // namespace fa4jit::cache
