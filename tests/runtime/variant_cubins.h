#pragma once
// Every generated variant for sm_90a and sm_100a, compiled once per test process (NVRTC, in
// parallel), shared by the test cases that inspect the cubins.
#include "fa4jit/codegen/emitter.h"
#include "fa4jit/codegen/heuristics.h"
#include "fa4jit/codegen/variants.h"
#include "fa4jit/runtime/compiler.h"
#include "fa4jit/runtime/kernel_jit.h"

#include <llvm/Support/Error.h>

#include <memory>
#include <string>
#include <thread>
#include <vector>

namespace fa4jit::testing {

struct VariantCubin {
  KernelSpec spec;
  EmittedKernel emitted;
  std::string error; // empty when the variant emitted and compiled
  runtime::CompileResult result;
};

inline const std::vector<VariantCubin> &variantCubins() {
  static const std::vector<VariantCubin> all = [] {
    std::vector<VariantCubin> out;
    std::vector<runtime::CompileRequest> requests;
    std::vector<size_t> index; // request -> out position
    for (const KernelSpec &s : enumerateVariants({Target::Sm80, Target::Sm89, Target::Sm90a, Target::Sm100a})) {
      VariantCubin v;
      v.spec = s;
      llvm::Expected<EmittedKernel> e = emitKernel(s);
      if (!e) {
        v.error = "emit: " + llvm::toString(e.takeError());
      } else {
        v.emitted = *e;
        runtime::CompileRequest r;
        r.name = e->name + ".cu";
        r.source = e->source;
        r.options = runtime::compileOptionsFor(s);
        requests.push_back(std::move(r));
        index.push_back(out.size());
      }
      out.push_back(std::move(v));
    }
    const unsigned threads = std::max(1u, std::thread::hardware_concurrency());
    std::vector<llvm::Expected<runtime::CompileResult>> results =
        runtime::compileMany(requests, runtime::CompilerConfig{}, threads);
    for (size_t i = 0; i < results.size(); ++i) {
      VariantCubin &v = out[index[i]];
      if (results[i])
        v.result = std::move(*results[i]);
      else
        v.error = "compile: " + llvm::toString(results[i].takeError());
    }
    return out;
  }();
  return all;
}

} // namespace fa4jit::testing
