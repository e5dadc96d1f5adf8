// Engine: configuration, JIT and device, and the kernel lookup every launch goes through.
#include "fa4jit/runtime/engine.h"

#include "engine/auto_routes.h"

#include "fa4jit/logging/log.h"

#include "fa4jit/cache/cache_version.h"
#include "fa4jit/codegen/candidates.h"
#include "fa4jit/codegen/heuristics.h"
#include "fa4jit/codegen/spec_validate.h"
#include "fa4jit/runtime/tuner.h"
#include "fa4jit/runtime/kernel_module.h"

#include "llvm/Support/FormatVariadic.h"

namespace fa4jit {

const char *toString(DType t) { return t == DType::BF16 ? "bf16" : t == DType::F16 ? "f16" : "f32"; }

llvm::Expected<Target> targetForDevice(int major, int minor) {
  if (major == 9 && minor == 0)
    return Target::Sm90a;
  if (major == 10 && minor == 0)
    return Target::Sm100a;
  if (major == 8 && minor == 9)
    return Target::Sm89;
  if (major == 8)
    return Target::Sm80;
  return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                 "no fa4jit kernels for compute capability %d.%d (supported: 8.x, 9.0, 10.0)",
                                 major, minor);
}

Engine::Engine(runtime::RuntimeConfig config, runtime::CudaDriver &driver, runtime::DeviceInfo device,
               std::unique_ptr<runtime::KernelJit> jit, Target target)
    : config_(std::move(config)), driver_(driver), device_(std::move(device)), jit_(std::move(jit)),
      target_(target), workspace_(std::make_unique<Workspace>()), auto_routes_(std::make_unique<AutoRoutes>()) {}

Engine::~Engine() = default;

llvm::Expected<std::unique_ptr<Engine>> Engine::create(const EngineOptions &options) {
  runtime::RuntimeConfig config;
  if (options.config) {
    config = *options.config;
  } else {
    auto loaded = runtime::loadConfig();
    if (!loaded)
      return loaded.takeError();
    config = std::move(*loaded);
  }
  if (options.nonfinite)
    config.nonfinite = *options.nonfinite;
  if (options.quantize_passes)
    config.quantize_passes = *options.quantize_passes;
  logging::logger().set_level(config.log_level); // (FA4JIT_LOG_LEVEL, or the caller's config)
  // The JIT and its cache first: they need no device, so what they report (an unusable cache
  // directory, say) reaches the log even on a machine where no GPU is found next.
  auto jit = runtime::KernelJit::create(config);
  if (!jit)
    return jit.takeError();
  auto driver = runtime::CudaDriver::get();
  if (!driver)
    return driver.takeError();
  if (options.device < 0 || options.device >= driver->deviceCount())
    return llvm::createStringError(llvm::inconvertibleErrorCode(), "device %d does not exist (%d CUDA devices)",
                                   options.device, driver->deviceCount());
  auto device = driver->device(options.device);
  if (!device)
    return device.takeError();
  auto target = targetForDevice(device->cc_major, device->cc_minor);
  if (!target)
    return target.takeError();
  if (auto err = driver->makeCurrent(options.device))
    return err;
  cache::TuningIdentity identity{device->name, device->sm_count, driver->driverVersionString(),
                                 (*jit)->nvrtcIdentity(), cache::writerVersion()};
  auto tuning = std::make_unique<cache::TuningDb>(runtime::tuningDbConfigFor(config), std::move(identity));
  std::unique_ptr<Engine> engine(new Engine(std::move(config), *driver, std::move(*device), std::move(*jit), *target));
  engine->tuning_ = std::move(tuning);
  return engine;
}

llvm::Expected<runtime::Kernel &> Engine::kernel(const KernelSpec &spec, const std::string &entry) {
  auto compiled = jit_->get(spec);
  if (!compiled)
    return compiled.takeError();
  std::lock_guard<std::mutex> lock(modules_mutex_);
  auto it = modules_.find((*compiled)->cache_key);
  if (it == modules_.end()) {
    auto module = runtime::KernelModule::load(driver_, device_.ordinal, (*compiled)->cubin);
    if (!module)
      return module.takeError();
    it = modules_.emplace((*compiled)->cache_key, std::move(*module)).first;
  }
  return it->second->kernel(entry);
}

llvm::Expected<KernelSpec> Engine::attentionSpecFor(Route route, int head_dim, bool causal, int seqlen_k,
                                                    const std::optional<ClassifierSpec> &classifier,
                                                    QkFormat qk_format) const {
  const cache::TuningKey key{KernelFamily::AttentionForward, target_, route, head_dim, causal, seqlenBucket(seqlen_k)};
  KernelSpec spec;
  if (auto tuned = tuning_->winnerSpec(key))
    spec = *tuned;
  else if (config_.tune == runtime::TuneMode::Replay)
    return runtime::replayMiss(*tuning_, key);
  else
    spec = defaultAttentionSpecForKeys(route, head_dim, causal, target_, seqlen_k);
  if (classifier)
    spec.attention.classifier = *classifier;
  if (qk_format != QkFormat::Nvfp4 && route != Route::Bf16) {
    // A tuned spec of another schedule (mma.sync) cannot read E4M3 Q/K: then the default's tiles.
    KernelSpec with = withQkFormat(spec, qk_format);
    if (!specViolations(with).empty())
      with = withQkFormat(defaultAttentionSpecForKeys(route, head_dim, causal, target_, seqlen_k), qk_format);
    if (classifier)
      with.attention.classifier = *classifier;
    return with;
  }
  return spec;
}

std::size_t Engine::workspaceBytes() const {
  const Workspace &w = *workspace_;
  const QuantizedTensor &c = w.check_scratch;
  return w.buffer.size() + c.payload.size() + c.scales.size() + c.head_scalar.size() + c.nonfinite_rows.size() +
         c.amax_partial.size();
}

} // namespace fa4jit
