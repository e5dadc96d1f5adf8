// parseJsonBounded (json_limits.h).
#include "fa4jit/codegen/json_limits.h"

#include "llvm/Support/FormatVariadic.h"

namespace fa4jit {

llvm::Expected<llvm::json::Value> parseJsonBounded(llvm::StringRef text, llvm::StringRef what) {
  auto fail = [&](const std::string &why) {
    return llvm::createStringError(llvm::inconvertibleErrorCode(), what.str() + ": " + why);
  };
  if (text.size() > kMaxJsonBytes)
    return fail(llvm::formatv("{0} bytes of JSON, more than the {1} fa4jit reads", text.size(), kMaxJsonBytes));
  unsigned depth = 0;
  bool in_string = false, escaped = false;
  for (char c : text) {
    if (in_string) {
      if (escaped)
        escaped = false;
      else if (c == '\\')
        escaped = true;
      else if (c == '"')
        in_string = false;
      continue;
    }
    if (c == '"')
      in_string = true;
    else if (c == '[' || c == '{') {
      if (++depth > kMaxJsonDepth)
        return fail(llvm::formatv("JSON nested deeper than {0} levels", kMaxJsonDepth));
    } else if ((c == ']' || c == '}') && depth > 0)
      --depth;
  }
  return llvm::json::parse(text);
}

} // namespace fa4jit
