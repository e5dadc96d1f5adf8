#include "cli_flags.h"

#include "llvm/ADT/SmallVector.h"

#include <algorithm>

namespace fa4jit::tools {

namespace {
llvm::Error fail(const std::string &m) { return llvm::createStringError(llvm::inconvertibleErrorCode(), m); }
bool contains(const std::vector<std::string> &v, const std::string &s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}
} // namespace

CliFlags::CliFlags(std::vector<std::string> value_flags, std::vector<std::string> bool_flags)
    : value_flags_(std::move(value_flags)), bool_flags_(std::move(bool_flags)) {}

llvm::Error CliFlags::parse(int argc, char **argv) {
  for (int i = 1; i < argc; ++i) {
    llvm::StringRef arg(argv[i]);
    if (!arg.startswith("--"))
      return fail("unexpected argument '" + arg.str() + "'");
    auto [name, value] = arg.drop_front(2).split('=');
    const std::string n = name.str();
    const bool inlineValue = arg.contains('=');
    if (contains(bool_flags_, n)) {
      if (inlineValue)
        return fail("--" + n + " takes no value");
      values_[n] = "1";
    } else if (contains(value_flags_, n)) {
      if (inlineValue) {
        values_[n] = value.str();
      } else {
        if (i + 1 >= argc)
          return fail("--" + n + " needs a value");
        values_[n] = argv[++i];
      }
    } else {
      return fail("unknown option '--" + n + "' (see --help)");
    }
  }
  return llvm::Error::success();
}

std::string CliFlags::str(llvm::StringRef name, llvm::StringRef fallback) const {
  auto it = values_.find(name.str());
  return it == values_.end() ? fallback.str() : it->second;
}

llvm::Expected<long> CliFlags::integer(llvm::StringRef name, long fallback) const {
  auto it = values_.find(name.str());
  if (it == values_.end())
    return fallback;
  long v = 0;
  if (llvm::StringRef(it->second).getAsInteger(10, v))
    return fail("--" + name.str() + ": '" + it->second + "' is not an integer");
  return v;
}

llvm::Expected<std::vector<long>> CliFlags::integers(llvm::StringRef name, llvm::StringRef fallback) const {
  std::vector<long> out;
  for (const std::string &s : strings(name, fallback)) {
    long v = 0;
    if (llvm::StringRef(s).getAsInteger(10, v))
      return fail("--" + name.str() + ": '" + s + "' is not an integer");
    out.push_back(v);
  }
  return out;
}

std::vector<std::string> CliFlags::strings(llvm::StringRef name, llvm::StringRef fallback) const {
  const std::string text = str(name, fallback); // parts point into it
  llvm::SmallVector<llvm::StringRef, 8> parts;
  llvm::StringRef(text).split(parts, ',', -1, false);
  std::vector<std::string> out;
  for (llvm::StringRef p : parts)
    out.push_back(p.trim().str());
  return out;
}

} // namespace fa4jit::tools
