#pragma once
// Text placed in the CLI's SVG drawings, escaped for XML.
#include <string>

namespace fa4jit::tools {

inline std::string xmlEscape(const std::string &s) {
  std::string o;
  for (char c : s) {
    if (c == '&')
      o += "&amp;";
    else if (c == '<')
      o += "&lt;";
    else if (c == '>')
      o += "&gt;";
    else if (c == '"')
      o += "&quot;";
    else
      o += c;
  }
  return o;
}

} // namespace fa4jit::tools
