#include "fa4jit/runtime/gpu_arch.h"

#include <fmt/format.h>

#include <cassert>

namespace fa4jit::runtime {

std::string GpuArch::name() const {
  std::string s = "sm_" + std::to_string(smNumber());
  if (suffix != ArchSuffix::None)
    s.push_back(static_cast<char>(suffix));
  return s;
}

llvm::Expected<GpuArch> parseGpuArch(llvm::StringRef text) {
  llvm::StringRef rest = text.trim();
  auto bad = [&](const char *why) {
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   "invalid GPU architecture '%s': %s", text.str().c_str(), why);
  };
  if (rest.startswith("compute_"))
    return bad("a virtual (PTX) architecture; fa4jit compiles to SASS cubins, use sm_XY[a|f]");
  if (!rest.consume_front("sm_"))
    return bad("expected sm_XY, sm_XYa or sm_XYf");
  GpuArch arch;
  if (rest.endswith("a") || rest.endswith("f")) {
    arch.suffix = static_cast<ArchSuffix>(rest.back());
    rest = rest.drop_back();
  }
  unsigned number = 0;
  if (rest.size() < 2 || rest.getAsInteger(10, number) || number < 10 || number > 999)
    return bad("expected a two- or three-digit SM number");
  arch.major = static_cast<int>(number / 10);
  arch.minor = static_cast<int>(number % 10);
  return arch;
}

GpuArch archForTarget(Target target) {
  switch (target) {
  case Target::Sm80: return {8, 0, ArchSuffix::None};
  case Target::Sm89: return {8, 9, ArchSuffix::None};
  case Target::Sm90a: return {9, 0, ArchSuffix::ArchSpecific};
  case Target::Sm100a: return {10, 0, ArchSuffix::ArchSpecific};
  }
  assert(false && "unknown Target");
  return {};
}

llvm::Error checkArchCompatible(const GpuArch &kernel, const DeviceArch &device) {
  bool ok = false;
  if (kernel.suffix == ArchSuffix::ArchSpecific)
    ok = kernel.major == device.cc_major && kernel.minor == device.cc_minor;
  else
    ok = kernel.major == device.cc_major && kernel.minor <= device.cc_minor;
  if (ok)
    return llvm::Error::success();
  std::string msg = fmt::format("kernel compiled for {0} cannot run on {1} (sm_{2}{3})",
                                  kernel.name(), device.name.empty() ? "this device" : device.name,
                                  device.cc_major, device.cc_minor);
  if (kernel.suffix == ArchSuffix::ArchSpecific)
    msg += "; arch-specific ('a') cubins run only on their exact compute capability";
  return llvm::createStringError(llvm::inconvertibleErrorCode(), msg);
}

} // namespace fa4jit::runtime
