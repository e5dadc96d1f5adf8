#pragma once
// The autotuner's real timing source: the candidate's attention kernel alone (operands quantized
// beforehand, as `fa4jit bench` times it) through the Engine, between CUDA events on the legacy
// default stream, after warm-up launches; the median of the repeats. Before every timed repeat a
// buffer twice the size of L2 is overwritten, so no repeat finds K/V in L2 left by the one before
// (a kernel in a real model reads its inputs cold), and input sets are rotated. Inputs are
// Gaussian BF16 (never zeros) and are made once per (problem, route, head dim) and reused by
// every candidate of the shape.
#include "fa4jit/runtime/device_objects.h"
#include "fa4jit/runtime/tuner.h"

#include <map>
#include <memory>
#include <string>
#include <vector>

namespace fa4jit {
class Engine;
}

namespace fa4jit::runtime {

struct EngineTimingOptions {
  int warmup = 5;
  int reps = 20;
  int input_sets = 2;  // rotated between repeats
  bool cold_l2 = true; // overwrite 2 x L2 before each timed repeat
  // Time the call from BF16 tensors (quantization included) instead of the kernel on operands
  // quantized beforehand: what choosing between routes must compare.
  bool from_bf16 = false;
};

class EngineTimingSource : public TimingSource {
public:
  explicit EngineTimingSource(Engine &engine, EngineTimingOptions options = {});
  ~EngineTimingSource() override;
  std::string describe() const override;
  llvm::Expected<TimingStats> time(const KernelSpec &spec, const TuneProblem &problem) override;

private:
  struct Inputs;
  llvm::Expected<Inputs &> inputsFor(const KernelSpec &spec, const TuneProblem &problem);

  Engine &engine_;
  EngineTimingOptions options_;
  std::map<std::string, std::unique_ptr<Inputs>> inputs_;
  std::unique_ptr<DeviceBuffer> flush_;
};

// The statistics of a set of repeat times (ms): median, min, max and the relative interquartile
// spread used as the tie band's noise. Precondition: ms is not empty.
TimingStats summarizeRepeats(std::vector<double> ms);

} // namespace fa4jit::runtime
