#pragma once
// What the tuner tests share: a scratch directory and a compiler that compiles nothing.
#include "fa4jit/runtime/tuner.h"

#include "llvm/Support/FileSystem.h"

#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

namespace fa4jit::testing {

class TunerScratch {
public:
  TunerScratch() {
    std::string pattern = "/tmp/fa4jit-tuner-test.XXXXXX";
    path_ = ::mkdtemp(pattern.data()) ? pattern : "";
  }
  ~TunerScratch() { llvm::sys::fs::remove_directories(path_); }
  std::string sub(const std::string &n) const { return path_ + "/" + n; }

private:
  std::string path_;
};

inline cache::TuningIdentity tunerTestIdentity() { return {"NVIDIA H200", 132, "13.0", "nvrtc 13.0 test", "0.1.0"}; }

// Compiles nothing; fails the specs `fails` says (with a ptxas-like message), counts calls.
class FakeCompiler : public runtime::CandidateCompiler {
public:
  std::function<bool(const KernelSpec &)> fails = [](const KernelSpec &) { return false; };
  int specs_seen = 0;
  std::vector<llvm::Error> compileAll(llvm::ArrayRef<KernelSpec> specs,
                                      const std::function<void(size_t, size_t)> &progress) override {
    std::vector<llvm::Error> out;
    for (size_t i = 0; i < specs.size(); ++i) {
      ++specs_seen;
      out.push_back(fails(specs[i]) ? llvm::createStringError(llvm::inconvertibleErrorCode(),
                                                              "ptxas error: entry uses too much shared data "
                                                              "(too many resources)")
                                    : llvm::Error::success());
      if (progress)
        progress(i + 1, specs.size());
    }
    return out;
  }
};

} // namespace fa4jit::testing
