// The baked / run-time split of every kernel family (baked_dims.h).
#include "fa4jit/codegen/baked_dims.h"

#include <cmath>
#include <cstdio>

#include "fa4jit/codegen/sm100_attention.h"
#include "fa4jit/codegen/spec_fields.h"
#include "fa4jit/codegen/spec_io.h"
#include "fa4jit/codegen/spec_validate.h"

namespace fa4jit {
namespace {

std::string intText(int v) { return std::to_string(v); }
std::string boolText(bool v) { return v ? "true" : "false"; }

BakedConstant floatConstant(const char *name, float v, const char *why) {
  return {name, "float", cppFloatLiteral(v), formatFloat(v) + (why[0] ? std::string(": ") + why : "")};
}

// Enum spellings of the device templates (fa4jit::device::attention / ::quantize), which carry
// the numeric values of the codegen enums.
const char *deviceRoute(Route r) {
  switch (r) {
  case Route::Bf16: return "Route::Bf16";
  case Route::Nvfp8: return "Route::Nvfp8";
  case Route::DirectP: return "Route::DirectP";
  }
  return "?";
}
const char *deviceWidening(Widening w) {
  switch (w) {
  case Widening::Bf16: return "Widening::Bf16";
  case Widening::E4m3: return "Widening::E4m3";
  case Widening::Native: return "Widening::Native";
  }
  return "?";
}
const char *deviceGuard(GuardKind g) {
  return g == GuardKind::OnlineExact ? "GuardKind::OnlineExact" : "GuardKind::SampledAnchor";
}
const char *deviceAblation(StageAblation a) {
  switch (a) {
  case StageAblation::None: return "StageAblation::None";
  case StageAblation::SkipLoads: return "StageAblation::SkipLoads";
  case StageAblation::SkipQk: return "StageAblation::SkipQk";
  case StageAblation::SkipSoftmax: return "StageAblation::SkipSoftmax";
  case StageAblation::SkipPv: return "StageAblation::SkipPv";
  case StageAblation::SoftmaxTwice: return "StageAblation::SoftmaxTwice";
  }
  return "?";
}
const char *deviceQuantFormat(QuantFormat f) {
  switch (f) {
  case QuantFormat::Nvfp4: return "Format::Nvfp4";
  case QuantFormat::Mxfp4: return "Format::Mxfp4";
  case QuantFormat::Fp8PerHead: return "Format::Fp8";
  case QuantFormat::E4m3Rows: return "Format::E4m3Rows";
  case QuantFormat::Bf16: break; // rejected by the validator
  }
  return "?";
}

std::string classifierInitializer(const ClassifierSpec &c) {
  std::string s = "{" + intText(static_cast<int>(c.kind)) + ", " + cppFloatLiteral(c.alpha) + ", " +
                  cppFloatLiteral(c.beta) + ", {";
  for (int i = 0; i < 7; ++i)
    s += (i ? ", " : "") + cppFloatLiteral(c.thresholds[i]);
  s += "}, " + cppFloatLiteral(c.y_split);
  if (c.kind == ClassifierKind::Piecewise) { // the other kinds leave `piece` zero (aggregate init)
    s += ", {";
    for (int i = 0; i < 4; ++i)
      s += (i ? ", " : "") + cppFloatLiteral(c.pieces[i]);
    s += "}";
  }
  return s + "}";
}

std::string classifierNote(const ClassifierSpec &c) {
  std::string s = toString(c.kind);
  if (c.kind == ClassifierKind::Piecewise) {
    s += " pieces";
    for (float v : c.pieces)
      s += " " + formatFloat(v);
    return s;
  }
  if (c.kind != ClassifierKind::Threshold)
    s += " alpha " + formatFloat(c.alpha) + " beta " + formatFloat(c.beta);
  if (c.kind == ClassifierKind::Mixed)
    s += " y_split " + formatFloat(c.y_split);
  if (c.kind == ClassifierKind::Threshold) {
    s += " theta";
    for (float t : c.thresholds)
      s += " " + formatFloat(t);
  }
  return s;
}

// One tile field as the config struct's constants. KvStaging is two flags the templates test
// (kv_prewidened, kv_tensor_map); an enum is spelled as the device namespace's enum.
void appendTileConstants(const TileField &f, int v, std::vector<BakedConstant> &out) {
  switch (f.type) {
  case FieldType::Int: out.push_back({f.name, "int", intText(v), f.note}); return;
  case FieldType::Bool: out.push_back({f.name, "bool", boolText(v != 0), f.note}); return;
  case FieldType::KvStaging:
    out.push_back({"kv_prewidened", "bool", boolText(v == static_cast<int>(KvStaging::Prewidened)),
                   "K/V tiles widened by a separate pass, copied in bulk"});
    out.push_back({"kv_tensor_map", "bool", boolText(v == static_cast<int>(KvStaging::TensorMap)),
                   "bf16 Q/K/V tiles loaded by TMA tensor maps from the tensors as they are"});
    return;
  case FieldType::Ablation: {
    const auto ablation = static_cast<StageAblation>(v);
    out.push_back({"ablation", "StageAblation", deviceAblation(ablation),
                   ablation == StageAblation::None ? "" : "leave-one-out variant: results are wrong"});
    return;
  }
  case FieldType::Schedule: break; // (FieldBaked::Never: it picks the template)
  }
}

DimensionSplit attentionSplit(const KernelSpec &spec) {
  const AttentionSpec a = canonicalize(spec).attention;
  DimensionSplit d;
  d.family = KernelFamily::AttentionForward;
  d.device_namespace = "fa4jit::device::attention";
  d.params_type = "AttentionParams";
  d.params_header = "fa4jit/attention/params.cuh";
  const bool quantized = a.route != Route::Bf16;
  // The members of fa4jit/attention/config.cuh, in its order.
  d.baked = {
      {"route", "Route", deviceRoute(a.route), toString(a.route)},
      {"head_dim", "int", intText(a.head_dim), ""},
      {"causal", "bool", boolText(a.causal), "bottom-right aligned"},
      {"qk_widening", "Widening", deviceWidening(quantized ? a.operands.qk_widening : Widening::Bf16),
       quantized ? "how NVFP4 Q/K reach the tensor core" : "bf16 route: BF16 operands"},
      {"qk_widen_shift", "int", intText(a.operands.qk_widen_shift), ""},
      {"p_offset_log2", "int", intText(a.operands.p_offset_log2), quantized ? "P fed as E4M3(P * 2^off)" : "unused"},
      {"v_keys_permuted16", "bool", boolText(a.operands.v_keys_permuted16), ""},
      floatConstant("score_scale", foldedScoreScale(a),
                    a.operands.qk_widening == Widening::E4m3 && quantized ? "softmax_scale * log2(e) * 4^shift"
                                                                           : "softmax_scale * log2(e)"),
      {"classifier", "DirectPCoefficients", classifierInitializer(a.classifier),
       a.route == Route::DirectP ? classifierNote(a.classifier) : "unused outside directp"},
      {"guard", "GuardKind", deviceGuard(a.guard.kind), toString(a.guard.kind)},
      {"guard_sample_stride", "int", intText(a.guard.sample_stride), ""},
      floatConstant("guard_slack_log2", a.guard.slack_log2, ""),
  };
  // The tile fields, in the field table's order: every kernel's after `causal`, the wgmma
  // kernel's at the end.
  const bool wgmma = a.tile.schedule.kernel == AttentionSchedule::WgmmaWarpSpecialized;
  std::vector<BakedConstant> every, wgmma_only;
  for (const TileField &f : tileFields()) {
    if (f.baked == FieldBaked::Never || (f.baked == FieldBaked::Wgmma && !wgmma))
      continue;
    appendTileConstants(f, f.get(a.tile), f.baked == FieldBaked::Every ? every : wgmma_only);
  }
  d.baked.insert(d.baked.begin() + 3, every.begin(), every.end());
  d.baked.insert(d.baked.end(), wgmma_only.begin(), wgmma_only.end());
  // (baked only when set: the NVFP4 kernels' sources, and cache keys, stay as before)
  if (quantized && a.operands.qk_format == QkFormat::E4m3)
    d.baked.push_back({"qk_e4m3", "bool", "true", "Q/K stored as E4M3 codes: copied, not widened"});
  d.runtime = {
      {"q, k, v", "operand device addresses (payloads for the quantized routes)"},
      {"q_sf, k_sf, v_sf", "scale-factor tensors (NVFP4 Q/K, MXFP4 V^T)"},
      {"q_global_scale, k_global_scale", "per-head NVFP4 global scales"},
      {"v_scale, v_shift", "per-head FP8 s_v (nvfp8) or MXFP4 v_shift (directp)"},
      {"o, lse", "outputs"},
      {"*_batch_stride, *_head_stride, *_row_stride", "strides of every tensor"},
      {"batch", "B"},
      {"heads_q, heads_kv", "query and key/value heads (GQA ratio heads_q / heads_kv)"},
      {"seqlen_q, seqlen_k", "sequence lengths (any >= 1; causal alignment bottom-right)"},
  };
  return d;
}

DimensionSplit quantizeSplit(const KernelSpec &spec) {
  const QuantizeSpec q = canonicalize(spec).quantize;
  DimensionSplit d;
  d.family = KernelFamily::Quantize;
  d.device_namespace = "fa4jit::device::quantize";
  d.params_type = "QuantizeParams";
  d.params_header = "fa4jit/quantize/params.cuh";
  // The members of fa4jit/quantize/config.cuh, in its order.
  d.baked = {
      {"format", "Format", deviceQuantFormat(q.format), toString(q.format)},
      {"transposed", "bool", boolText(q.layout == QuantLayout::Transposed), toString(q.layout)},
      {"input_fp32", "bool", boolText(q.input_fp32), q.input_fp32 ? "fp32 input" : ""},
      {"input_fp16", "bool", boolText(q.input_fp16), q.input_fp16 ? "fp16 input" : ""},
      {"keys_permuted16", "bool", boolText(q.keys_permuted16), q.keys_permuted16 ? "Hopper register-P key order" : ""},
      {"head_dim", "int", intText(q.head_dim), ""},
      {"threads", "int", intText(q.threads), "CTA size of every pass"},
  };
  // (only the E4M3 rows have a shift: the other quantizers' sources, and cache keys, stay as before)
  if (q.format == QuantFormat::E4m3Rows)
    d.baked.push_back({"code_shift", "int", intText(q.code_shift), "codes are E4M3(x / g * 2^-code_shift)"});
  d.runtime = {
      {"x", "input [B, H, S, D] device address, head dim contiguous"},
      {"payload, scales, head_scalar", "outputs (layouts in fa4jit/quantize/params.cuh)"},
      {"amax_partial, amax_chunks", "per-head partial maxima workspace [B*H][amax_chunks]"},
      {"nonfinite_rows", "first non-finite row of each head and the row bitmask (outputs)"},
      {"sync", "MXFP4 only: 0 (two passes) or per-head words that make the encode pass enough"},
      {"x_batch_stride, x_head_stride, x_row_stride", "strides of x in elements"},
      {"batch, heads, seqlen", "B, H, S"},
  };
  return d;
}

float softmaxScaleOf(const AttentionSpec &a) {
  return a.softmax_scale != 0.0f ? a.softmax_scale
                                 : static_cast<float>(1.0 / std::sqrt(static_cast<double>(a.head_dim)));
}

DimensionSplit backwardSplit(const KernelSpec &spec) {
  const BackwardSpec b = canonicalize(spec).backward;
  const AttentionSpec &f = b.forward;
  DimensionSplit d;
  d.family = KernelFamily::AttentionBackward;
  d.device_namespace = "fa4jit::device::attention_backward";
  d.params_type = "BackwardParams";
  d.params_header = "fa4jit/attention_backward/params.cuh";
  // The members of fa4jit/attention_backward/config.cuh, in its order.
  d.baked = {
      {"head_dim", "int", intText(f.head_dim), ""},
      {"causal", "bool", boolText(f.causal), "bottom-right aligned"},
      {"pv_mxfp4", "bool", boolText(b.pv == BackwardPvFormat::Mxfp4), std::string("P and V fed as ") + toString(b.pv)},
      {"qk_saved_nvfp4", "bool", boolText(b.qk == BackwardQkOperands::SavedNvfp4),
       std::string("dS products read ") + toString(b.qk) + " Q/K"},
      {"qk_widen_shift", "int", intText(f.operands.qk_widen_shift), "the forward's e4m3 widening of Q/K"},
      floatConstant("score_scale", foldedScoreScale(f), "softmax_scale * log2(e) * 4^shift"),
      floatConstant("softmax_scale", softmaxScaleOf(f), "dQ and dK factor"),
      {"p_offset_log2", "int", intText(b.p_offset_log2), "P fed as E4M3(P * 2^off)"},
      {"block_m", "int", intText(b.tile.block_m), "queries per step"},
      {"block_n", "int", intText(b.tile.block_n), "keys per CTA"},
      {"warps", "int", intText(b.tile.warps), ""},
      {"deterministic", "bool", boolText(b.deterministic), "dQ added in key-block order"},
      {"wgmma", "bool", boolText(b.mma == BackwardMma::Wgmma), std::string("main pass on ") + toString(b.mma)},
  };
  d.runtime = {
      {"q, k, o, d_o", "BF16 inputs (q, k read when the dS products take BF16 Q/K)"},
      {"dq, dk, dv", "BF16 outputs"},
      {"lse", "the forward's LSE"},
      {"q_payload, q_sf, q_global_scale, k_payload, k_sf, k_global_scale", "the saved NVFP4 Q and K"},
      {"v_payload, v_sf, v_head_scalar", "the saved V^T (E4M3 and s_v, or MXFP4 and v_shift)"},
      {"delta, do_amax, dq_accum, dq_semaphore, q8, qb, do8, do_t, lse2", "workspace"},
      {"*_stride, *_bytes", "strides of every tensor"},
      {"batch, heads_q, heads_kv, seqlen_q, seqlen_k", "shape (GQA ratio heads_q / heads_kv)"},
  };
  return d;
}

const char *deviceStateType(StateType t) {
  switch (t) {
  case StateType::Bf16: return "StateType::Bf16";
  case StateType::F16: return "StateType::F16";
  case StateType::F32: return "StateType::F32";
  }
  return "?";
}

DimensionSplit mergeSplit(const KernelSpec &spec) {
  const MergeSpec m = canonicalize(spec).merge;
  DimensionSplit d;
  d.family = KernelFamily::MergeStates;
  d.device_namespace = "fa4jit::device::merge";
  d.params_type = "MergeParams";
  d.params_header = "fa4jit/merge/params.cuh";
  // The members of fa4jit/merge/config.cuh, in its order.
  d.baked = {
      {"value", "StateType", deviceStateType(m.value), std::string(toString(m.value)) + " O in and out"},
      {"head_dim", "int", intText(m.head_dim), ""},
      {"threads", "int", intText(m.threads), "CTA size"},
  };
  d.runtime = {
      {"parts, num_parts", "each part's O address and strides and its dense FP32 LSE [B, H, S]"},
      {"o, o_*_stride, lse", "the merged O (and its strides) and LSE (0: not written)"},
      {"batch, heads, seqlen", "B, H, S: rows merged independently"},
  };
  return d;
}

DimensionSplit pagedSplit(const KernelSpec &spec) {
  const PagedKvSpec p = canonicalize(spec).paged;
  DimensionSplit d;
  d.family = KernelFamily::PagedKv;
  d.device_namespace = "fa4jit::device::paged";
  d.params_type = "DecodeParams";
  d.params_header = "fa4jit/paged/params.cuh";
  // The members the config of fa4jit/paged/decode.cuh and append.cuh reads, in its order.
  d.baked = {
      {"head_dim", "int", intText(p.head_dim), ""},
      {"page_size", "int", intText(p.page_size), "tokens per page"},
      {"warps", "int", intText(p.warps), "decode warps per CTA"},
      {"value_format", "int", intText(int(p.value_format)), std::string(toString(p.value_format)) + " V codes"},
      {"kv_stages", "int", intText(p.kv_stages), "decode's shared-memory ring depth (0: registers)"},
      {"threads", "int", intText(kPagedAppendThreads), "append CTA size"},
  };
  d.runtime = {
      {"cache", "the pages' arrays, page count and kv heads (AppendParams and DecodeParams)"},
      {"k, v, slot_mapping", "append: the new tokens' BF16 rows and their cache slots"},
      {"q, block_table, seq_lens", "decode: queries, each sequence's pages and length"},
      {"o, lse, partial_o, partial_lse", "decode: outputs, and the splits' states (splits > 1)"},
      {"batch, q_heads, queries, splits, row_blocks", "decode: shape and grid"},
  };
  return d;
}

} // namespace

float log2SoftmaxScale(const AttentionSpec &a) {
  return static_cast<float>(static_cast<double>(softmaxScaleOf(a)) * M_LOG2E);
}

float foldedScoreScale(const AttentionSpec &a) {
  const float kscale = log2SoftmaxScale(a);
  if (a.route != Route::Bf16 && a.operands.qk_widening == Widening::E4m3)
    return std::ldexp(kscale, 2 * a.operands.qk_widen_shift);
  return kscale;
}

std::string cppFloatLiteral(float v) {
  char buf[48];
  std::snprintf(buf, sizeof buf, "%af", static_cast<double>(v));
  return buf;
}

llvm::Expected<DimensionSplit> splitDimensions(const KernelSpec &spec) {
  if (llvm::Error e = validateSpec(spec))
    return e;
  if (spec.family == KernelFamily::Quantize)
    return quantizeSplit(spec);
  if (spec.family == KernelFamily::AttentionBackward)
    return backwardSplit(spec);
  if (spec.family == KernelFamily::MergeStates)
    return mergeSplit(spec);
  if (spec.family == KernelFamily::PagedKv)
    return pagedSplit(spec);
  DimensionSplit d = attentionSplit(spec);
  if (isTcgen05Attention(spec)) { // sm_100a: the TMEM plan's columns are baked too
    llvm::Expected<std::vector<BakedConstant>> extra = tcgen05BakedConstants(spec);
    if (!extra)
      return extra.takeError();
    d.baked.insert(d.baked.end(), extra->begin(), extra->end());
  }
  return d;
}

} // namespace fa4jit
