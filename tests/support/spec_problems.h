#pragma once
// The spec validator's violations of a spec joined into one string ("" when it is valid), so that a
// test can CHECK_THAT it contains the field a rule names.
#include "fa4jit/codegen/spec_validate.h"

#include <string>

namespace fa4jit::testing {

inline std::string specProblems(const KernelSpec &s) {
  std::string all;
  for (const std::string &v : specViolations(s))
    all += v + "\n";
  return all;
}

} // namespace fa4jit::testing
