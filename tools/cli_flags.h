#pragma once
// The one flag parser of every subcommand: `--name VALUE`, `--name=VALUE`, boolean `--name`, and
// flags whose value is optional (`--causal` alone means 1). Unknown flags, missing values and bad
// values are errors naming the flag; the subcommand turns them into exit status 2. The flags that
// several subcommands share are defined once in `shared_flags`, so that every subcommand spells
// them alike and accepts a list wherever it takes several values.
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <initializer_list>
#include <map>
#include <string>
#include <vector>

namespace fa4jit::tools {

enum class FlagValue {
  None,     // a switch: `--json`
  Required, // `--reps 20` or `--reps=20`
  Optional, // `--causal` (the implicit value), `--causal 0,1` or `--causal=0`
};

struct FlagDef {
  std::string name; // without the dashes
  FlagValue value = FlagValue::Required;
  std::vector<std::string> aliases = {}; // other spellings of the same flag
  std::string implicit = "1";            // the value of an Optional flag given alone
};

namespace shared_flags {
FlagDef route();   // --route LIST: bf16, nvfp8, directp (also --routes)
FlagDef headDim(); // --head-dim LIST: 64, 128, 256 (also --head-dims)
FlagDef seqlen();  // --seqlen LIST (also --seqlens)
FlagDef causal();  // --causal [LIST]: 0, 1, false, true; alone it means 1
FlagDef target();  // --target LIST: sm_80, sm_89, sm_90a, sm_100a
FlagDef threads(); // --threads N
FlagDef json();    // --json
} // namespace shared_flags

class CliFlags {
public:
  // `--help` (and `-h`) is always known. With `command_words` > 0 the first that many arguments
  // not starting with '-' are words (`fa4jit cache ls`), read back by words().
  explicit CliFlags(std::vector<FlagDef> flags, int command_words = 0);
  llvm::Error parse(int argc, char **argv); // argv[0] is the subcommand

  bool has(llvm::StringRef name) const { return values_.count(name.str()) != 0; }
  bool help() const { return has("help"); }
  const std::vector<std::string> &words() const { return words_; }
  // How many of `names` were given (emit refuses spec flags beside --spec).
  int countGiven(std::initializer_list<llvm::StringRef> names) const;

  std::string str(llvm::StringRef name, llvm::StringRef fallback) const;
  // Numbers, checked to lie in [lo, hi].
  llvm::Expected<long> integer(llvm::StringRef name, long fallback, long lo = -(1L << 40), long hi = 1L << 40) const;
  llvm::Expected<double> number(llvm::StringRef name, double fallback) const;
  // Comma-separated lists: an empty list or an empty item is an error, so that a list naming
  // nothing never runs as "0 kernels".
  llvm::Expected<std::vector<std::string>> list(llvm::StringRef name, llvm::StringRef fallback) const;
  llvm::Expected<std::vector<long>> integers(llvm::StringRef name, llvm::StringRef fallback, long lo = -(1L << 40),
                                             long hi = 1L << 40) const;
  llvm::Expected<std::vector<double>> numbers(llvm::StringRef name, llvm::StringRef fallback) const;
  llvm::Expected<std::vector<bool>> booleans(llvm::StringRef name, llvm::StringRef fallback) const;
  llvm::Expected<bool> boolean(llvm::StringRef name, bool fallback) const;

private:
  const FlagDef *find(llvm::StringRef spelled) const;

  std::vector<FlagDef> flags_;
  int command_words_;
  std::map<std::string, std::string> values_; // by canonical name
  std::vector<std::string> words_;
};

} // namespace fa4jit::tools
