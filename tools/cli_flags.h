#pragma once
// A small flag parser for the subcommands written on it (run, bench, compile): `--name VALUE`,
// `--name=VALUE` and boolean `--name`; unknown flags and bad values are errors naming the flag.
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <map>
#include <string>
#include <vector>

namespace fa4jit::tools {

class CliFlags {
public:
  // `value_flags` take a value; `bool_flags` do not.
  CliFlags(std::vector<std::string> value_flags, std::vector<std::string> bool_flags);
  llvm::Error parse(int argc, char **argv); // argv[0] is the subcommand

  bool has(llvm::StringRef name) const { return values_.count(name.str()) != 0; }
  std::string str(llvm::StringRef name, llvm::StringRef fallback) const;
  llvm::Expected<long> integer(llvm::StringRef name, long fallback) const;
  llvm::Expected<std::vector<long>> integers(llvm::StringRef name, llvm::StringRef fallback) const;
  std::vector<std::string> strings(llvm::StringRef name, llvm::StringRef fallback) const;

private:
  std::vector<std::string> value_flags_, bool_flags_;
  std::map<std::string, std::string> values_;
};

} // namespace fa4jit::tools
