// The generator's decisions, pinned: every variant `fa4jit compile --all` emits, every default the
// engine picks per (target, route, head dim, causal, keys) and every tuner alternative, each as its
// kernel name, canonical spec hash and a hash of its generated source. A change to the list is a
// change to what users' caches hold and what their calls run, so it has to be made on purpose:
// the test writes the current list beside the build and names the file to copy over the golden one.
#include "fa4jit/codegen/emitter.h"
#include "fa4jit/codegen/alternatives.h"
#include "fa4jit/codegen/heuristics.h"
#include "fa4jit/codegen/variants.h"
#include "fa4jit/codegen/spec_io.h"

#include <catch2/catch.hpp>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/SHA256.h"

using namespace fa4jit;

namespace {

std::string sha256Hex(const std::string &text) {
  llvm::SHA256 sha;
  sha.update(text);
  return llvm::toHex(llvm::arrayRefFromStringRef(sha.final()), /*LowerCase=*/true);
}

std::string describe(const KernelSpec &spec) {
  std::string line = std::string(toString(spec.target)) + " " + kernelName(spec) + " " + specHash(spec);
  llvm::Expected<EmittedKernel> k = emitKernel(spec);
  if (!k)
    return line + " error: " + llvm::toString(k.takeError());
  return line + " source " + sha256Hex(k->source).substr(0, 16);
}

std::string currentList() {
  std::ostringstream out;
  out << "# compile --all\n";
  for (const KernelSpec &s : enumerateVariants())
    out << describe(s) << "\n";
  out << "# defaults by keys, and each default's tuner alternatives\n";
  for (Target t : {Target::Sm80, Target::Sm89, Target::Sm90a, Target::Sm100a})
    for (Route r : {Route::Bf16, Route::Nvfp8, Route::DirectP}) {
      if (r != Route::Bf16 && t == Target::Sm80)
        continue;
      for (int d : {64, 128, 256})
        for (bool causal : {false, true})
          for (int keys : {1024, 4096, 8192, 16384, 32768}) {
            const KernelSpec s = defaultAttentionSpecForKeys(r, d, causal, t, keys);
            out << "default " << toString(r) << " d" << d << " c" << causal << " k" << keys << ": " << describe(s)
                << "\n";
            if (keys != 4096)
              continue;
            for (const KernelSpec &alt : wgmmaScheduleAlternatives(s))
              out << "  alternative: " << describe(alt) << "\n";
            if (r != Route::Bf16)
              for (AttentionOperand o : {AttentionOperand::Q, AttentionOperand::K, AttentionOperand::V})
                out << "  quantizer: " << describe(quantizerFor(s, o)) << "\n";
          }
    }
  return out.str();
}

} // namespace

TEST_CASE("the emitted variants, defaults and alternatives are the pinned list", "[codegen][golden]") {
  const std::string golden_path = std::string(FA4JIT_SOURCE_DIR) + "/tests/codegen/golden/variants.txt";
  const std::string actual_path = std::string(FA4JIT_BINARY_DIR) + "/tests/variants.actual.txt";
  const std::string actual = currentList();
  std::ifstream in(golden_path);
  std::stringstream golden;
  golden << in.rdbuf();
  if (golden.str() != actual) {
    std::ofstream(actual_path) << actual;
    FAIL("the generator's variants changed; review `diff " << golden_path << " " << actual_path
                                                           << "` and copy the new list over the golden one "
                                                              "if the change is intended");
  }
  SUCCEED();
}
