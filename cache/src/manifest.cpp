#include "fa4jit/cache/manifest.h"
#include "fa4jit/codegen/json_limits.h"

#include "fa4jit/cache/cache_entry.h"
#include "fa4jit/cache/sha256.h"

#include "llvm/Support/JSON.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>

namespace fa4jit::cache {
namespace {

constexpr llvm::StringLiteral kSelfHashField = "\"self_sha256\":\"";
const std::string kZeroHash(64, '0');

llvm::Error manifestError(const llvm::Twine &why) {
  return llvm::createStringError(std::errc::invalid_argument, "bad manifest: %s", why.str().c_str());
}

} // namespace

std::string serializeManifest(const Manifest &manifest) {
  std::string text;
  llvm::raw_string_ostream os(text);
  llvm::json::OStream j(os);
  j.object([&] {
    j.attribute("schema", manifest.schema);
    j.attribute("key", manifest.key);
    j.attribute("fa4jit_version", manifest.writer_version);
    j.attribute("created_unix", manifest.created_unix_seconds);
    j.attributeArray("files", [&] {
      for (const ManifestFile &f : manifest.files)
        j.object([&] {
          j.attribute("name", f.name);
          j.attribute("size", int64_t(f.size));
          j.attribute("sha256", f.sha256);
        });
    });
    j.attributeObject("key_parts", [&] {
      for (const auto &[name, value] : manifest.key_parts)
        j.attribute(name, value);
    });
    j.attribute("self_sha256", kZeroHash);
  });
  os << "\n";
  os.flush();
  size_t at = text.rfind(kSelfHashField) + kSelfHashField.size();
  text.replace(at, 64, sha256Hex(text));
  return text;
}

llvm::Expected<Manifest> parseManifest(llvm::StringRef text) {
  size_t at = text.find(kSelfHashField);
  if (at == llvm::StringRef::npos || text.rfind(kSelfHashField) != at)
    return manifestError("no single self_sha256 field");
  at += kSelfHashField.size();
  if (at + 64 > text.size())
    return manifestError("truncated self_sha256");
  std::string zeroed = text.str();
  std::string stored = zeroed.substr(at, 64);
  zeroed.replace(at, 64, kZeroHash);
  if (sha256Hex(zeroed) != stored)
    return manifestError("its bytes do not match its self_sha256");

  llvm::Expected<llvm::json::Value> parsed = parseJsonBounded(text, "manifest");
  if (!parsed)
    return manifestError(llvm::toString(parsed.takeError()));
  const llvm::json::Object *obj = parsed->getAsObject();
  if (!obj)
    return manifestError("not a JSON object");
  Manifest m;
  auto schema = obj->getInteger("schema");
  auto key = obj->getString("key");
  auto version = obj->getString("fa4jit_version");
  auto created = obj->getInteger("created_unix");
  const llvm::json::Array *files = obj->getArray("files");
  const llvm::json::Object *parts = obj->getObject("key_parts");
  if (!schema || !key || !version || !created || !files || !parts)
    return manifestError("a required field is missing");
  m.schema = int(*schema);
  m.key = key->str();
  m.writer_version = version->str();
  m.created_unix_seconds = *created;
  for (const llvm::json::Value &v : *files) {
    const llvm::json::Object *f = v.getAsObject();
    auto name = f ? f->getString("name") : llvm::None;
    auto size = f ? f->getInteger("size") : llvm::None;
    auto hash = f ? f->getString("sha256") : llvm::None;
    if (!name || !size || *size < 0 || !hash || !isSha256Hex(*hash))
      return manifestError("a file record is malformed");
    if (std::string why = checkEntryFileName(*name); !why.empty())
      return manifestError(why);
    m.files.push_back({name->str(), uint64_t(*size), hash->str()});
  }
  for (const auto &[name, value] : *parts) {
    auto s = value.getAsString();
    if (!s)
      return manifestError("key part '" + name.str() + "' is not a string");
    m.key_parts.emplace_back(name.str(), s->str());
  }
  std::sort(m.key_parts.begin(), m.key_parts.end()); // JSON objects have no order
  return m;
}

} // namespace fa4jit::cache
