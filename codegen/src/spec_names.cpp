// Printable names of the spec enums; the same strings are used by the JSON form and the CLI.
#include "fa4jit/codegen/spec.h"

namespace fa4jit {

const char *toString(Target t) {
  switch (t) {
  case Target::Sm80: return "sm_80";
  case Target::Sm89: return "sm_89";
  case Target::Sm90a: return "sm_90a";
  case Target::Sm100a: return "sm_100a";
  }
  return "?";
}

const char *toString(Route r) {
  switch (r) {
  case Route::Bf16: return "bf16";
  case Route::Nvfp8: return "nvfp8";
  case Route::DirectP: return "directp";
  }
  return "?";
}

const char *toString(Widening w) {
  switch (w) {
  case Widening::Bf16: return "bf16";
  case Widening::E4m3: return "e4m3";
  case Widening::Native: return "native";
  }
  return "?";
}

const char *toString(QkFormat f) {
  switch (f) {
  case QkFormat::Nvfp4: return "nvfp4";
  case QkFormat::E4m3: return "e4m3";
  }
  return "?";
}

const char *toString(ClassifierKind k) {
  switch (k) {
  case ClassifierKind::Threshold: return "threshold";
  case ClassifierKind::Affine: return "affine";
  case ClassifierKind::Mixed: return "mixed";
  case ClassifierKind::Piecewise: return "piecewise";
  }
  return "?";
}

const char *toString(GuardKind k) {
  switch (k) {
  case GuardKind::OnlineExact: return "online-exact";
  case GuardKind::SampledAnchor: return "sampled-anchor";
  }
  return "?";
}

const char *toString(AttentionSchedule s) {
  switch (s) {
  case AttentionSchedule::MmaSync: return "mma-sync";
  case AttentionSchedule::WgmmaWarpSpecialized: return "wgmma-ws";
  }
  return "?";
}

const char *toString(StageAblation a) {
  switch (a) {
  case StageAblation::None: return "none";
  case StageAblation::SkipLoads: return "skip-loads";
  case StageAblation::SkipQk: return "skip-qk";
  case StageAblation::SkipSoftmax: return "skip-softmax";
  case StageAblation::SkipPv: return "skip-pv";
  case StageAblation::SoftmaxTwice: return "softmax-twice";
  }
  return "?";
}

const char *toString(KvStaging k) {
  switch (k) {
  case KvStaging::InKernel: return "in-kernel";
  case KvStaging::Prewidened: return "prewidened";
  case KvStaging::TensorMap: return "tensor-map";
  }
  return "?";
}

const char *toString(QuantFormat f) {
  switch (f) {
  case QuantFormat::Nvfp4: return "nvfp4";
  case QuantFormat::Mxfp4: return "mxfp4";
  case QuantFormat::Fp8PerHead: return "fp8";
  case QuantFormat::Bf16: return "bf16";
  case QuantFormat::E4m3Rows: return "e4m3_rows";
  }
  return "?";
}

const char *toString(QuantLayout l) {
  switch (l) {
  case QuantLayout::RowMajorK: return "row-major-k";
  case QuantLayout::Transposed: return "transposed";
  }
  return "?";
}

const char *toString(KernelFamily f) {
  switch (f) {
  case KernelFamily::AttentionForward: return "attention";
  case KernelFamily::Quantize: return "quantize";
  case KernelFamily::AttentionBackward: return "attention-backward";
  case KernelFamily::MergeStates: return "merge-states";
  case KernelFamily::PagedKv: return "paged-kv";
  }
  return "?";
}

const char *toString(BackwardPvFormat f) {
  switch (f) {
  case BackwardPvFormat::E4m3: return "e4m3";
  case BackwardPvFormat::Mxfp4: return "mxfp4";
  }
  return "?";
}

const char *toString(BackwardMma m) {
  switch (m) {
  case BackwardMma::MmaSync: return "mma-sync";
  case BackwardMma::Wgmma: return "wgmma";
  }
  return "?";
}

const char *toString(BackwardQkOperands q) {
  switch (q) {
  case BackwardQkOperands::Bf16: return "bf16";
  case BackwardQkOperands::SavedNvfp4: return "saved-nvfp4";
  }
  return "?";
}

const char *toString(KvValueFormat f) {
  switch (f) {
  case KvValueFormat::Fp8: return "fp8";
  case KvValueFormat::Mxfp4: return "mxfp4";
  }
  return "?";
}

const char *toString(StateType t) {
  switch (t) {
  case StateType::Bf16: return "bf16";
  case StateType::F16: return "f16";
  case StateType::F32: return "f32";
  }
  return "?";
}

} // namespace fa4jit
