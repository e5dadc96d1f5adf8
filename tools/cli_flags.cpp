#include "cli_flags.h"

#include "llvm/ADT/SmallVector.h"

#include <fmt/format.h>

namespace fa4jit::tools {

namespace {
llvm::Error fail(const std::string &m) { return llvm::createStringError(llvm::inconvertibleErrorCode(), m); }
} // namespace

namespace shared_flags {
FlagDef route() { return {"route", FlagValue::Required, {"routes"}}; }
FlagDef headDim() { return {"head-dim", FlagValue::Required, {"head-dims"}}; }
FlagDef seqlen() { return {"seqlen", FlagValue::Required, {"seqlens"}}; }
FlagDef causal() { return {"causal", FlagValue::Optional}; }
FlagDef target() { return {"target", FlagValue::Required, {"targets"}}; }
FlagDef threads() { return {"threads"}; }
FlagDef json() { return {"json", FlagValue::None}; }
} // namespace shared_flags

CliFlags::CliFlags(std::vector<FlagDef> flags, int command_words)
    : flags_(std::move(flags)), command_words_(command_words) {
  flags_.push_back({"help", FlagValue::None, {"h"}});
}

const FlagDef *CliFlags::find(llvm::StringRef spelled) const {
  for (const FlagDef &f : flags_) {
    if (f.name == spelled)
      return &f;
    for (const std::string &a : f.aliases)
      if (a == spelled)
        return &f;
  }
  return nullptr;
}

llvm::Error CliFlags::parse(int argc, char **argv) {
  for (int i = 1; i < argc; ++i) {
    const llvm::StringRef arg(argv[i]);
    if (arg == "-h") {
      values_["help"] = "1";
      continue;
    }
    if (!arg.startswith("--")) {
      if (static_cast<int>(words_.size()) < command_words_ && !arg.startswith("-")) {
        words_.push_back(arg.str());
        continue;
      }
      return fail("unexpected argument '" + arg.str() + "'");
    }
    const auto [spelled, inline_value] = arg.drop_front(2).split('=');
    const bool has_inline = arg.contains('=');
    const FlagDef *flag = find(spelled);
    if (!flag)
      return fail("unknown option '--" + spelled.str() + "' (see --help)");
    std::string &slot = values_[flag->name];
    switch (flag->value) {
    case FlagValue::None:
      if (has_inline)
        return fail("--" + spelled.str() + " takes no value");
      slot = "1";
      break;
    case FlagValue::Required:
      if (has_inline) {
        slot = inline_value.str();
      } else {
        if (i + 1 >= argc)
          return fail("--" + spelled.str() + " needs a value");
        slot = argv[++i];
      }
      break;
    case FlagValue::Optional:
      if (has_inline)
        slot = inline_value.str();
      else if (i + 1 < argc && !llvm::StringRef(argv[i + 1]).startswith("-"))
        slot = argv[++i];
      else
        slot = flag->implicit;
      break;
    }
  }
  return llvm::Error::success();
}

int CliFlags::countGiven(std::initializer_list<llvm::StringRef> names) const {
  int n = 0;
  for (llvm::StringRef name : names)
    n += has(name) ? 1 : 0;
  return n;
}

std::string CliFlags::str(llvm::StringRef name, llvm::StringRef fallback) const {
  auto it = values_.find(name.str());
  return it == values_.end() ? fallback.str() : it->second;
}

namespace {
llvm::Expected<long> parseInteger(llvm::StringRef name, llvm::StringRef text, long lo, long hi) {
  long v = 0;
  if (text.trim().getAsInteger(10, v))
    return fail(fmt::format("--{}: '{}' is not an integer", name.str(), text.str()));
  if (v < lo || v > hi)
    return fail(fmt::format("--{} {}: give {} to {}", name.str(), v, lo, hi));
  return v;
}

llvm::Expected<double> parseNumber(llvm::StringRef name, llvm::StringRef text) {
  double v = 0;
  if (text.trim().getAsDouble(v) || !(v == v) || v > 1e300 || v < -1e300)
    return fail(fmt::format("--{}: '{}' is not a finite number", name.str(), text.str()));
  return v;
}
} // namespace

llvm::Expected<long> CliFlags::integer(llvm::StringRef name, long fallback, long lo, long hi) const {
  if (!has(name))
    return fallback;
  return parseInteger(name, str(name, ""), lo, hi);
}

llvm::Expected<double> CliFlags::number(llvm::StringRef name, double fallback) const {
  if (!has(name))
    return fallback;
  return parseNumber(name, str(name, ""));
}

llvm::Expected<std::vector<std::string>> CliFlags::list(llvm::StringRef name, llvm::StringRef fallback) const {
  const std::string text = str(name, fallback); // parts point into it
  llvm::SmallVector<llvm::StringRef, 8> parts;
  llvm::StringRef(text).split(parts, ',', -1, true);
  std::vector<std::string> out;
  for (llvm::StringRef p : parts) {
    if (p.trim().empty())
      return fail(fmt::format("--{} '{}': an empty item (give a comma-separated list of values)", name.str(), text));
    out.push_back(p.trim().str());
  }
  return out;
}

llvm::Expected<std::vector<long>> CliFlags::integers(llvm::StringRef name, llvm::StringRef fallback, long lo,
                                                     long hi) const {
  auto items = list(name, fallback);
  if (!items)
    return items.takeError();
  std::vector<long> out;
  for (const std::string &s : *items) {
    auto v = parseInteger(name, s, lo, hi);
    if (!v)
      return v.takeError();
    out.push_back(*v);
  }
  return out;
}

llvm::Expected<std::vector<double>> CliFlags::numbers(llvm::StringRef name, llvm::StringRef fallback) const {
  auto items = list(name, fallback);
  if (!items)
    return items.takeError();
  std::vector<double> out;
  for (const std::string &s : *items) {
    auto v = parseNumber(name, s);
    if (!v)
      return v.takeError();
    out.push_back(*v);
  }
  return out;
}

llvm::Expected<std::vector<bool>> CliFlags::booleans(llvm::StringRef name, llvm::StringRef fallback) const {
  auto items = list(name, fallback);
  if (!items)
    return items.takeError();
  std::vector<bool> out;
  for (const std::string &s : *items) {
    if (s == "1" || s == "true")
      out.push_back(true);
    else if (s == "0" || s == "false")
      out.push_back(false);
    else
      return fail(fmt::format("--{} {}: give 0, 1, false or true", name.str(), s));
  }
  return out;
}

llvm::Expected<bool> CliFlags::boolean(llvm::StringRef name, bool fallback) const {
  auto items = booleans(name, fallback ? "1" : "0");
  if (!items)
    return items.takeError();
  if (items->size() != 1)
    return fail(fmt::format("--{} {}: this command takes one value", name.str(), str(name, "")));
  return items->front();
}

} // namespace fa4jit::tools
