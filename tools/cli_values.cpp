#include "cli_values.h"

#include "fa4jit/codegen/spec_io.h"

#include <fmt/format.h>

namespace fa4jit::tools {

namespace {
llvm::Error fail(const std::string &m) { return llvm::createStringError(llvm::inconvertibleErrorCode(), m); }

template <class T, class Parse>
llvm::Expected<std::vector<T>> parsedList(const CliFlags &flags, llvm::StringRef name, llvm::StringRef fallback,
                                          Parse parse) {
  auto items = flags.list(name, fallback);
  if (!items)
    return items.takeError();
  std::vector<T> out;
  for (const std::string &s : *items) {
    auto v = parse(s);
    if (!v)
      return fail("--" + name.str() + ": " + llvm::toString(v.takeError()));
    out.push_back(*v);
  }
  return out;
}

template <class T> llvm::Expected<T> theOne(llvm::Expected<std::vector<T>> values, llvm::StringRef name) {
  if (!values)
    return values.takeError();
  if (values->size() != 1)
    return fail("--" + name.str() + ": this command takes one value");
  return values->front();
}
} // namespace

llvm::Expected<std::vector<Route>> routesFlag(const CliFlags &flags, llvm::StringRef fallback) {
  return parsedList<Route>(flags, "route", fallback, [](llvm::StringRef s) { return parseRoute(s); });
}

llvm::Expected<std::vector<RoutePreset>> routePresetsFlag(const CliFlags &flags, llvm::StringRef fallback) {
  return parsedList<RoutePreset>(flags, "route", fallback, [](llvm::StringRef s) { return parseRoutePreset(s); });
}

llvm::Expected<RoutePreset> routePresetFlag(const CliFlags &flags, llvm::StringRef fallback) {
  return theOne(routePresetsFlag(flags, fallback), "route");
}

llvm::Expected<std::vector<Target>> targetsFlag(const CliFlags &flags, llvm::StringRef fallback) {
  return parsedList<Target>(flags, "target", fallback,
                                     [](llvm::StringRef s) { return parseTarget(s); });
}

llvm::Expected<std::vector<int>> headDimsFlag(const CliFlags &flags, llvm::StringRef fallback) {
  auto dims = flags.integers("head-dim", fallback);
  if (!dims)
    return dims.takeError();
  std::vector<int> out;
  for (long d : *dims) {
    if (d != 64 && d != 128 && d != 256)
      return fail(fmt::format("--head-dim {}: give 64, 128 or 256", d));
    out.push_back(static_cast<int>(d));
  }
  return out;
}

llvm::Expected<std::vector<int>> seqlensFlag(const CliFlags &flags, llvm::StringRef fallback) {
  auto lens = flags.integers("seqlen", fallback, 1, kMaxCliSeqlen);
  if (!lens)
    return lens.takeError();
  return std::vector<int>(lens->begin(), lens->end());
}

llvm::Expected<std::vector<bool>> causalFlag(const CliFlags &flags, llvm::StringRef fallback) {
  return flags.booleans("causal", fallback);
}

llvm::Expected<unsigned> threadsFlag(const CliFlags &flags) {
  auto n = flags.integer("threads", 0, 0, kMaxCliThreads);
  if (!n)
    return n.takeError();
  return static_cast<unsigned>(*n);
}

llvm::Expected<Route> routeFlag(const CliFlags &flags, llvm::StringRef fallback) {
  return theOne(routesFlag(flags, fallback), "route");
}

llvm::Expected<Target> targetFlag(const CliFlags &flags, llvm::StringRef fallback) {
  return theOne(targetsFlag(flags, fallback), "target");
}

llvm::Expected<int> headDimFlag(const CliFlags &flags, llvm::StringRef fallback) {
  return theOne(headDimsFlag(flags, fallback), "head-dim");
}

} // namespace fa4jit::tools
