// Canonical JSON of KernelSpec (see spec_io.h for what "canonical" promises).
#include "fa4jit/codegen/spec_io.h"
#include "fa4jit/codegen/json_limits.h"
#include "fa4jit/codegen/spec_fields.h"
#include "fa4jit/codegen/spec_validate.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <set>
#include <type_traits>

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/SHA256.h"
#include "llvm/Support/raw_ostream.h"

namespace fa4jit {
namespace {

// ---- enum tables: every value, so names parse back through the same toString spellings ----
constexpr Target kTargets[] = {Target::Sm80, Target::Sm89, Target::Sm90a, Target::Sm100a};
constexpr Route kRoutes[] = {Route::Bf16, Route::Nvfp8, Route::DirectP};
constexpr Widening kWidenings[] = {Widening::Bf16, Widening::E4m3, Widening::Native};
constexpr QkFormat kQkFormats[] = {QkFormat::Nvfp4, QkFormat::E4m3};
constexpr ClassifierKind kClassifierKinds[] = {ClassifierKind::Threshold, ClassifierKind::Affine,
                                               ClassifierKind::Mixed, ClassifierKind::Piecewise};
constexpr GuardKind kGuardKinds[] = {GuardKind::OnlineExact, GuardKind::SampledAnchor};
constexpr AttentionSchedule kSchedules[] = {AttentionSchedule::MmaSync, AttentionSchedule::WgmmaWarpSpecialized};
constexpr KvStaging kKvStagings[] = {KvStaging::InKernel, KvStaging::Prewidened, KvStaging::TensorMap};
constexpr StageAblation kAblations[] = {StageAblation::None,        StageAblation::SkipLoads, StageAblation::SkipQk,
                                        StageAblation::SkipSoftmax, StageAblation::SkipPv,    StageAblation::SoftmaxTwice};
constexpr QuantFormat kQuantFormats[] = {QuantFormat::Nvfp4, QuantFormat::Mxfp4,
                                         QuantFormat::Fp8PerHead, QuantFormat::Bf16, QuantFormat::E4m3Rows};
constexpr QuantLayout kQuantLayouts[] = {QuantLayout::RowMajorK, QuantLayout::Transposed};
constexpr KernelFamily kFamilies[] = {KernelFamily::AttentionForward, KernelFamily::Quantize,
                                      KernelFamily::AttentionBackward, KernelFamily::MergeStates,
                                      KernelFamily::PagedKv};
constexpr StateType kStateTypes[] = {StateType::Bf16, StateType::F16, StateType::F32};
constexpr KvValueFormat kKvValueFormats[] = {KvValueFormat::Fp8, KvValueFormat::Mxfp4};
constexpr BackwardPvFormat kBackwardPvFormats[] = {BackwardPvFormat::E4m3, BackwardPvFormat::Mxfp4};
constexpr BackwardQkOperands kBackwardQkOperands[] = {BackwardQkOperands::Bf16, BackwardQkOperands::SavedNvfp4};
constexpr BackwardMma kBackwardMmas[] = {BackwardMma::MmaSync, BackwardMma::Wgmma};

template <typename E, std::size_t N>
llvm::Expected<E> parseEnum(llvm::StringRef name, const E (&values)[N], const char *what) {
  std::string accepted;
  for (E v : values) {
    if (name == toString(v))
      return v;
    accepted += accepted.empty() ? "" : ", ";
    accepted += toString(v);
  }
  return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                 "unknown %s '%s' (expected one of: %s)", what,
                                 name.str().c_str(), accepted.c_str());
}

uint32_t floatBits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}

// ---- writing --------------------------------------------------------------------------------
// Keys inside each object are written in sorted order by hand (json::OStream keeps call order),
// which is what makes the text canonical; floats go through formatFloat as raw JSON numbers.
void writeFloat(llvm::json::OStream &j, llvm::StringRef key, float v) {
  if (std::isfinite(v))
    j.attributeBegin(key), j.rawValue(formatFloat(v)), j.attributeEnd();
  else
    j.attribute(key, formatFloat(v)); // JSON has no non-finite numbers: a string
}

template <std::size_t N>
void writeFloatArray(llvm::json::OStream &j, llvm::StringRef key, const std::array<float, N> &values) {
  j.attributeArray(key, [&] {
    for (float v : values) {
      if (std::isfinite(v))
        j.rawValue(formatFloat(v));
      else
        j.value(formatFloat(v));
    }
  });
}

void writeClassifier(llvm::json::OStream &j, const ClassifierSpec &c) {
  j.attributeObject("classifier", [&] {
    writeFloat(j, "alpha", c.alpha);
    writeFloat(j, "beta", c.beta);
    j.attribute("kind", toString(c.kind));
    // Only the piecewise kind reads its pieces: the other kinds' canonical text (and with it their
    // cache keys and kernel names) stays what it was before the kind existed.
    if (c.kind == ClassifierKind::Piecewise)
      writeFloatArray(j, "pieces", c.pieces);
    writeFloatArray(j, "thresholds", c.thresholds);
    writeFloat(j, "y_split", c.y_split);
  });
}

// The tile object, row by row of the field table (spec_fields.h): its order is the key order.
void writeTile(llvm::json::OStream &j, const TileSpec &t) {
  const TileSpec defaults;
  const bool wgmma = t.schedule.kernel == AttentionSchedule::WgmmaWarpSpecialized;
  for (const TileField &f : tileFields()) {
    const int v = f.get(t);
    if ((f.wgmma_only && !wgmma) || (f.json == FieldJson::UnlessDefault && v == f.get(defaults)))
      continue;
    if (f.type == FieldType::Int)
      j.attribute(f.name, v);
    else if (f.type == FieldType::Bool)
      j.attribute(f.name, v != 0);
    else
      j.attribute(f.name, fieldValueText(f, v));
  }
}

// Sub-objects that canonicalize() has reset to their defaults for this route or target are
// omitted (parsing restores the defaults): the JSON shows only what shapes the kernel.
void writeAttention(llvm::json::OStream &j, const AttentionSpec &a, Target target) {
  j.attributeObject("attention", [&] {
    j.attribute("causal", a.causal);
    if (a.route == Route::DirectP)
      writeClassifier(j, a.classifier);
    j.attributeObject("guard", [&] {
      j.attribute("kind", toString(a.guard.kind));
      j.attribute("sample_stride", a.guard.sample_stride);
      writeFloat(j, "slack_log2", a.guard.slack_log2);
    });
    j.attribute("head_dim", a.head_dim);
    if (a.route != Route::Bf16)
      j.attributeObject("operands", [&] {
      j.attribute("p_offset_log2", a.operands.p_offset_log2);
      if (a.operands.qk_format != QkFormat::Nvfp4) // (absent for NVFP4: the specs, and cache keys, written before it)
        j.attribute("qk_format", toString(a.operands.qk_format));
      j.attribute("qk_widen_shift", a.operands.qk_widen_shift);
      j.attribute("qk_widening", toString(a.operands.qk_widening));
      j.attribute("v_keys_permuted16", a.operands.v_keys_permuted16);
      j.attribute("v_widening", toString(a.operands.v_widening));
    });
    j.attribute("route", toString(a.route));
    writeFloat(j, "softmax_scale", a.softmax_scale);
    j.attributeObject("tile", [&] { writeTile(j, a.tile); });
    if (target == Target::Sm100a)
      j.attributeObject("tmem", [&] {
      auto pair = [&](const char *key, const int (&v)[2]) {
        j.attributeArray(key, [&] { j.value(v[0]), j.value(v[1]); });
      };
      j.attribute("columns_allocated", a.tmem.columns_allocated);
      pair("o_col", a.tmem.o_col);
      pair("p_col", a.tmem.p_col);
      pair("s_col", a.tmem.s_col);
      j.attribute("s_spare_col", a.tmem.s_spare_col);
      j.attribute("sf_col", a.tmem.sf_col);
      pair("sfk_col", a.tmem.sfk_col);
      pair("sfp_col", a.tmem.sfp_col);
      pair("sfq_col", a.tmem.sfq_col);
      pair("sfv_col", a.tmem.sfv_col);
    });
  });
}

void writeQuantize(llvm::json::OStream &j, const QuantizeSpec &q) {
  j.attributeObject("quantize", [&] {
    if (q.format == QuantFormat::E4m3Rows) // (the other formats have no shift)
      j.attribute("code_shift", q.code_shift);
    j.attribute("format", toString(q.format));
    j.attribute("head_dim", q.head_dim);
    if (q.input_fp16) // (written only when set: the BF16 and FP32 quantizers keep their names)
      j.attribute("input_fp16", true);
    j.attribute("input_fp32", q.input_fp32);
    j.attribute("keys_permuted16", q.keys_permuted16);
    j.attribute("layout", toString(q.layout));
    j.attribute("threads", q.threads);
  });
}

// The backward's own choices and the forward fields it reads (canonicalize() resets the rest).
void writeBackward(llvm::json::OStream &j, const BackwardSpec &b) {
  j.attributeObject("backward", [&] {
    j.attribute("block_m", b.tile.block_m);
    j.attribute("block_n", b.tile.block_n);
    j.attribute("causal", b.forward.causal);
    j.attribute("deterministic", b.deterministic);
    j.attribute("head_dim", b.forward.head_dim);
    j.attribute("mma", toString(b.mma));
    j.attribute("p_offset_log2", b.p_offset_log2);
    j.attribute("pv", toString(b.pv));
    j.attribute("qk", toString(b.qk));
    j.attribute("qk_widen_shift", b.forward.operands.qk_widen_shift);
    j.attribute("qk_widening", toString(b.forward.operands.qk_widening));
    writeFloat(j, "softmax_scale", b.forward.softmax_scale);
    j.attribute("warps", b.tile.warps);
  });
}

void writeMerge(llvm::json::OStream &j, const MergeSpec &m) {
  j.attributeObject("merge", [&] {
    j.attribute("head_dim", m.head_dim);
    j.attribute("threads", m.threads);
    j.attribute("value", toString(m.value));
  });
}

void writePaged(llvm::json::OStream &j, const PagedKvSpec &p) {
  j.attributeObject("paged", [&] {
    j.attribute("head_dim", p.head_dim);
    j.attribute("page_size", p.page_size);
    j.attribute("value_format", toString(p.value_format));
    j.attribute("warps", p.warps);
    if (p.kv_stages != 0) // (absent for the register path: the specs, and cache keys, written before it)
      j.attribute("kv_stages", p.kv_stages);
  });
}

// ---- reading --------------------------------------------------------------------------------
// Walks one JSON object, remembering the dotted path for error messages and which keys were
// consumed, so that a misspelled key is reported instead of silently ignored.
class ObjectReader {
public:
  ObjectReader(const llvm::json::Object &obj, std::string path) : obj_(obj), path_(std::move(path)) {}

  std::string fieldPath(llvm::StringRef key) const {
    return path_.empty() ? key.str() : path_ + "." + key.str();
  }

  llvm::Error fail(llvm::StringRef key, const llvm::Twine &msg) const {
    return llvm::createStringError(llvm::inconvertibleErrorCode(), "spec field '" + fieldPath(key) + "': " + msg);
  }

  const llvm::json::Value *find(llvm::StringRef key) {
    seen_.insert(key.str());
    return obj_.get(key);
  }

  llvm::Error readInt(llvm::StringRef key, int &out) {
    const llvm::json::Value *v = find(key);
    if (!v)
      return llvm::Error::success();
    llvm::Optional<int64_t> i = v->getAsInteger();
    if (!i)
      return fail(key, "expected an integer");
    if (*i < INT32_MIN || *i > INT32_MAX)
      return fail(key, "integer out of range");
    out = static_cast<int>(*i);
    return llvm::Error::success();
  }

  llvm::Error readBool(llvm::StringRef key, bool &out) {
    const llvm::json::Value *v = find(key);
    if (!v)
      return llvm::Error::success();
    llvm::Optional<bool> b = v->getAsBoolean();
    if (!b)
      return fail(key, "expected true or false");
    out = *b;
    return llvm::Error::success();
  }

  static llvm::Optional<float> asFloat(const llvm::json::Value &v) {
    if (llvm::Optional<double> d = v.getAsNumber())
      return static_cast<float>(*d);
    if (llvm::Optional<llvm::StringRef> s = v.getAsString()) {
      if (*s == "nan")
        return std::nanf("");
      if (*s == "inf")
        return INFINITY;
      if (*s == "-inf")
        return -INFINITY;
    }
    return llvm::None;
  }

  llvm::Error readFloat(llvm::StringRef key, float &out) {
    const llvm::json::Value *v = find(key);
    if (!v)
      return llvm::Error::success();
    llvm::Optional<float> f = asFloat(*v);
    if (!f)
      return fail(key, "expected a number (or \"nan\", \"inf\", \"-inf\")");
    out = *f;
    return llvm::Error::success();
  }

  template <typename E>
  llvm::Error readEnum(llvm::StringRef key, E &out, llvm::Expected<E> (*parse)(llvm::StringRef)) {
    const llvm::json::Value *v = find(key);
    if (!v)
      return llvm::Error::success();
    llvm::Optional<llvm::StringRef> s = v->getAsString();
    if (!s)
      return fail(key, "expected a string");
    llvm::Expected<E> e = parse(*s);
    if (!e)
      return fail(key, llvm::toString(e.takeError()));
    out = *e;
    return llvm::Error::success();
  }

  template <std::size_t N, typename T>
  llvm::Error readArray(llvm::StringRef key, T (&out)[N]) {
    const llvm::json::Value *v = find(key);
    if (!v)
      return llvm::Error::success();
    const llvm::json::Array *arr = v->getAsArray();
    if (!arr || arr->size() != N)
      return fail(key, "expected an array of " + llvm::Twine(N) + " numbers");
    for (std::size_t i = 0; i < N; ++i) {
      if constexpr (std::is_same_v<T, int>) {
        llvm::Optional<int64_t> x = (*arr)[i].getAsInteger();
        if (!x || *x < INT32_MIN || *x > INT32_MAX)
          return fail(key, "element " + llvm::Twine(i) + " is not an integer");
        out[i] = static_cast<int>(*x);
      } else {
        llvm::Optional<float> x = asFloat((*arr)[i]);
        if (!x)
          return fail(key, "element " + llvm::Twine(i) + " is not a number");
        out[i] = *x;
      }
    }
    return llvm::Error::success();
  }

  // Visits a nested object (absent: nothing to read).
  template <typename Fn>
  llvm::Error readObject(llvm::StringRef key, Fn &&fn) {
    const llvm::json::Value *v = find(key);
    if (!v)
      return llvm::Error::success();
    const llvm::json::Object *o = v->getAsObject();
    if (!o)
      return fail(key, "expected an object");
    ObjectReader sub(*o, fieldPath(key));
    if (llvm::Error e = fn(sub))
      return e;
    return sub.checkNoUnknownKeys();
  }

  llvm::Error checkNoUnknownKeys() const {
    std::set<std::string> unknown;
    for (const auto &kv : obj_)
      if (!seen_.count(kv.first.str()))
        unknown.insert(kv.first.str());
    if (unknown.empty())
      return llvm::Error::success();
    return fail(*unknown.begin(), "unknown key");
  }

private:
  const llvm::json::Object &obj_;
  std::string path_;
  std::set<std::string> seen_;
};

// Early return of an error; the variable is named per line because the macro nests inside
// lambdas passed to itself.
#define FA4JIT_CONCAT2(a, b) a##b
#define FA4JIT_CONCAT(a, b) FA4JIT_CONCAT2(a, b)
#define FA4JIT_TRY(expr)                                                                           \
  if (llvm::Error FA4JIT_CONCAT(err_, __LINE__) = (expr))                                          \
    return FA4JIT_CONCAT(err_, __LINE__);

llvm::Error readClassifier(ObjectReader &r, ClassifierSpec &c) {
  FA4JIT_TRY(r.readEnum(llvm::StringRef("kind"), c.kind, parseClassifierKind));
  FA4JIT_TRY(r.readFloat("alpha", c.alpha));
  FA4JIT_TRY(r.readFloat("beta", c.beta));
  float theta[7];
  std::copy(c.thresholds.begin(), c.thresholds.end(), theta);
  FA4JIT_TRY(r.readArray("thresholds", theta));
  std::copy(theta, theta + 7, c.thresholds.begin());
  float pieces[4];
  std::copy(c.pieces.begin(), c.pieces.end(), pieces);
  FA4JIT_TRY(r.readArray("pieces", pieces));
  std::copy(pieces, pieces + 4, c.pieces.begin());
  FA4JIT_TRY(r.readFloat("y_split", c.y_split));
  return llvm::Error::success();
}

// An enum-valued tile field, read through its type's parser into the table's int.
template <typename E>
llvm::Error readEnumField(ObjectReader &r, const char *key, int &v, llvm::Expected<E> (*parse)(llvm::StringRef)) {
  E e = static_cast<E>(v);
  FA4JIT_TRY(r.readEnum(llvm::StringRef(key), e, parse));
  v = static_cast<int>(e);
  return llvm::Error::success();
}

llvm::Error readTile(ObjectReader &r, TileSpec &t) {
  for (const TileField &f : tileFields()) {
    int v = f.get(t);
    switch (f.type) {
    case FieldType::Int: FA4JIT_TRY(r.readInt(f.name, v)); break;
    case FieldType::Bool: {
      bool b = v != 0;
      FA4JIT_TRY(r.readBool(f.name, b));
      v = b;
      break;
    }
    case FieldType::Schedule: FA4JIT_TRY(readEnumField(r, f.name, v, parseAttentionSchedule)); break;
    case FieldType::KvStaging: FA4JIT_TRY(readEnumField(r, f.name, v, parseKvStaging)); break;
    case FieldType::Ablation: FA4JIT_TRY(readEnumField(r, f.name, v, parseStageAblation)); break;
    }
    f.set(t, v);
  }
  return llvm::Error::success();
}

llvm::Error readAttention(ObjectReader &r, AttentionSpec &a) {
  FA4JIT_TRY(r.readEnum(llvm::StringRef("route"), a.route, parseRoute));
  FA4JIT_TRY(r.readInt("head_dim", a.head_dim));
  FA4JIT_TRY(r.readBool("causal", a.causal));
  FA4JIT_TRY(r.readFloat("softmax_scale", a.softmax_scale));
  FA4JIT_TRY(r.readObject("classifier", [&](ObjectReader &s) { return readClassifier(s, a.classifier); }));
  FA4JIT_TRY(r.readObject("guard", [&](ObjectReader &s) -> llvm::Error {
    FA4JIT_TRY(s.readEnum(llvm::StringRef("kind"), a.guard.kind, parseGuardKind));
    FA4JIT_TRY(s.readInt("sample_stride", a.guard.sample_stride));
    return s.readFloat("slack_log2", a.guard.slack_log2);
  }));
  FA4JIT_TRY(r.readObject("tile", [&](ObjectReader &s) { return readTile(s, a.tile); }));
  FA4JIT_TRY(r.readObject("operands", [&](ObjectReader &s) -> llvm::Error {
    FA4JIT_TRY(s.readEnum(llvm::StringRef("qk_format"), a.operands.qk_format, parseQkFormat));
    FA4JIT_TRY(s.readEnum(llvm::StringRef("qk_widening"), a.operands.qk_widening, parseWidening));
    FA4JIT_TRY(s.readEnum(llvm::StringRef("v_widening"), a.operands.v_widening, parseWidening));
    FA4JIT_TRY(s.readInt("qk_widen_shift", a.operands.qk_widen_shift));
    FA4JIT_TRY(s.readInt("p_offset_log2", a.operands.p_offset_log2));
    return s.readBool("v_keys_permuted16", a.operands.v_keys_permuted16);
  }));
  FA4JIT_TRY(r.readObject("tmem", [&](ObjectReader &s) -> llvm::Error {
    FA4JIT_TRY(s.readInt("columns_allocated", a.tmem.columns_allocated));
    FA4JIT_TRY(s.readArray("s_col", a.tmem.s_col));
    FA4JIT_TRY(s.readArray("o_col", a.tmem.o_col));
    FA4JIT_TRY(s.readArray("p_col", a.tmem.p_col));
    FA4JIT_TRY(s.readInt("s_spare_col", a.tmem.s_spare_col));
    FA4JIT_TRY(s.readArray("sfq_col", a.tmem.sfq_col));
    FA4JIT_TRY(s.readArray("sfk_col", a.tmem.sfk_col));
    FA4JIT_TRY(s.readArray("sfp_col", a.tmem.sfp_col));
    FA4JIT_TRY(s.readArray("sfv_col", a.tmem.sfv_col));
    return s.readInt("sf_col", a.tmem.sf_col);
  }));
  return llvm::Error::success();
}

llvm::Error readQuantize(ObjectReader &r, QuantizeSpec &q) {
  FA4JIT_TRY(r.readEnum(llvm::StringRef("format"), q.format, parseQuantFormat));
  FA4JIT_TRY(r.readInt("code_shift", q.code_shift));
  FA4JIT_TRY(r.readEnum(llvm::StringRef("layout"), q.layout, parseQuantLayout));
  FA4JIT_TRY(r.readBool("input_fp32", q.input_fp32));
  FA4JIT_TRY(r.readBool("input_fp16", q.input_fp16));
  FA4JIT_TRY(r.readBool("keys_permuted16", q.keys_permuted16));
  FA4JIT_TRY(r.readInt("head_dim", q.head_dim));
  return r.readInt("threads", q.threads);
}

llvm::Error readBackward(ObjectReader &r, BackwardSpec &b) {
  FA4JIT_TRY(r.readInt("block_m", b.tile.block_m));
  FA4JIT_TRY(r.readInt("block_n", b.tile.block_n));
  FA4JIT_TRY(r.readBool("causal", b.forward.causal));
  FA4JIT_TRY(r.readBool("deterministic", b.deterministic));
  FA4JIT_TRY(r.readInt("head_dim", b.forward.head_dim));
  FA4JIT_TRY(r.readEnum(llvm::StringRef("mma"), b.mma, parseBackwardMma));
  FA4JIT_TRY(r.readInt("p_offset_log2", b.p_offset_log2));
  FA4JIT_TRY(r.readEnum(llvm::StringRef("pv"), b.pv, parseBackwardPvFormat));
  FA4JIT_TRY(r.readEnum(llvm::StringRef("qk"), b.qk, parseBackwardQkOperands));
  FA4JIT_TRY(r.readInt("qk_widen_shift", b.forward.operands.qk_widen_shift));
  FA4JIT_TRY(r.readEnum(llvm::StringRef("qk_widening"), b.forward.operands.qk_widening, parseWidening));
  FA4JIT_TRY(r.readFloat("softmax_scale", b.forward.softmax_scale));
  return r.readInt("warps", b.tile.warps);
}

llvm::Error readMerge(ObjectReader &r, MergeSpec &m) {
  FA4JIT_TRY(r.readInt("head_dim", m.head_dim));
  FA4JIT_TRY(r.readInt("threads", m.threads));
  return r.readEnum(llvm::StringRef("value"), m.value, parseStateType);
}

llvm::Error readPaged(ObjectReader &r, PagedKvSpec &p) {
  FA4JIT_TRY(r.readInt("head_dim", p.head_dim));
  FA4JIT_TRY(r.readInt("page_size", p.page_size));
  FA4JIT_TRY(r.readEnum(llvm::StringRef("value_format"), p.value_format, parseKvValueFormat));
  FA4JIT_TRY(r.readInt("kv_stages", p.kv_stages));
  return r.readInt("warps", p.warps);
}

} // namespace

std::string formatFloat(float value) {
  if (std::isnan(value))
    return "nan";
  if (std::isinf(value))
    return value > 0 ? "inf" : "-inf";
  if (value == 0.0f && std::signbit(value))
    return "-0.0"; // JSON readers take "-0" for the integer 0 and drop the sign
  char buf[48];
  // Nine significant digits always round-trip a float; fewer often do and read better.
  for (int digits = 1; digits <= 9; ++digits) {
    std::snprintf(buf, sizeof buf, "%.*g", digits, static_cast<double>(value));
    if (floatBits(static_cast<float>(std::strtod(buf, nullptr))) == floatBits(value))
      return buf;
  }
  assert(false && "9 significant digits always round-trip a float");
  return buf;
}

llvm::Expected<Target> parseTarget(llvm::StringRef n) { return parseEnum(n, kTargets, "target"); }
llvm::Expected<Route> parseRoute(llvm::StringRef n) { return parseEnum(n, kRoutes, "route"); }
llvm::Expected<Widening> parseWidening(llvm::StringRef n) { return parseEnum(n, kWidenings, "widening"); }
llvm::Expected<QkFormat> parseQkFormat(llvm::StringRef n) { return parseEnum(n, kQkFormats, "q/k format"); }
llvm::Expected<ClassifierKind> parseClassifierKind(llvm::StringRef n) {
  return parseEnum(n, kClassifierKinds, "classifier kind");
}
llvm::Expected<GuardKind> parseGuardKind(llvm::StringRef n) { return parseEnum(n, kGuardKinds, "guard kind"); }
llvm::Expected<AttentionSchedule> parseAttentionSchedule(llvm::StringRef n) {
  return parseEnum(n, kSchedules, "attention schedule");
}
llvm::Expected<KvStaging> parseKvStaging(llvm::StringRef n) { return parseEnum(n, kKvStagings, "kv staging"); }
llvm::Expected<StageAblation> parseStageAblation(llvm::StringRef n) {
  return parseEnum(n, kAblations, "stage ablation");
}
llvm::Expected<QuantFormat> parseQuantFormat(llvm::StringRef n) {
  return parseEnum(n, kQuantFormats, "quantize format");
}
llvm::Expected<QuantLayout> parseQuantLayout(llvm::StringRef n) {
  return parseEnum(n, kQuantLayouts, "quantize layout");
}
llvm::Expected<KernelFamily> parseKernelFamily(llvm::StringRef n) {
  return parseEnum(n, kFamilies, "kernel family");
}
llvm::Expected<BackwardPvFormat> parseBackwardPvFormat(llvm::StringRef n) {
  return parseEnum(n, kBackwardPvFormats, "backward P/V format");
}
llvm::Expected<BackwardMma> parseBackwardMma(llvm::StringRef n) {
  return parseEnum(n, kBackwardMmas, "backward MMA");
}
llvm::Expected<BackwardQkOperands> parseBackwardQkOperands(llvm::StringRef n) {
  return parseEnum(n, kBackwardQkOperands, "backward Q/K operands");
}
llvm::Expected<StateType> parseStateType(llvm::StringRef n) { return parseEnum(n, kStateTypes, "state type"); }
llvm::Expected<KvValueFormat> parseKvValueFormat(llvm::StringRef n) {
  return parseEnum(n, kKvValueFormats, "paged cache value format");
}

KernelSpec canonicalize(const KernelSpec &in) {
  KernelSpec s = in;
  if (s.family != KernelFamily::MergeStates)
    s.merge = MergeSpec{};
  if (s.family != KernelFamily::PagedKv)
    s.paged = PagedKvSpec{};
  if (s.family == KernelFamily::MergeStates || s.family == KernelFamily::PagedKv) {
    s.attention = AttentionSpec{};
    s.quantize = QuantizeSpec{};
    s.backward = BackwardSpec{};
    return s;
  }
  if (s.family == KernelFamily::Quantize) {
    s.attention = AttentionSpec{};
    s.backward = BackwardSpec{};
    if (s.quantize.format != QuantFormat::E4m3Rows)
      s.quantize.code_shift = QuantizeSpec{}.code_shift;
    return s;
  }
  if (s.family == KernelFamily::AttentionBackward) {
    s.attention = AttentionSpec{};
    s.quantize = QuantizeSpec{};
    // Of the forward, the backward reads the shape of its scores only (writeBackward's fields).
    const AttentionSpec &f = in.backward.forward;
    AttentionSpec &kept = s.backward.forward;
    kept = AttentionSpec{};
    kept.route = Route::Nvfp8;
    kept.head_dim = f.head_dim;
    kept.causal = f.causal;
    kept.softmax_scale = f.softmax_scale;
    kept.operands.qk_widening = f.operands.qk_widening;
    if (f.operands.qk_widening == Widening::E4m3)
      kept.operands.qk_widen_shift = f.operands.qk_widen_shift;
    return s;
  }
  s.quantize = QuantizeSpec{};
  s.backward = BackwardSpec{};
  AttentionSpec &a = s.attention;
  const ClassifierSpec defaults;
  if (a.route != Route::DirectP) {
    a.classifier = defaults;
  } else {
    // Only the constants the chosen classifier reads are kept.
    const ClassifierKind kind = a.classifier.kind;
    if (kind == ClassifierKind::Threshold || kind == ClassifierKind::Piecewise) {
      a.classifier.alpha = defaults.alpha;
      a.classifier.beta = defaults.beta;
    }
    if (kind != ClassifierKind::Threshold)
      a.classifier.thresholds = defaults.thresholds;
    if (kind != ClassifierKind::Piecewise)
      a.classifier.pieces = defaults.pieces;
    if (a.classifier.kind != ClassifierKind::Mixed)
      a.classifier.y_split = defaults.y_split;
  }
  if (a.route == Route::Bf16) {
    a.operands = OperandSpec{}; // BF16 operands: no widening, no FP8 offset, V as given
  } else {
    if (a.operands.qk_widening != Widening::E4m3)
      a.operands.qk_widen_shift = OperandSpec{}.qk_widen_shift;
    // P is fed in V's format; Direct-P fed natively (UE8M0-scaled FP4) carries no FP8 offset.
    if (a.route == Route::DirectP && a.operands.v_widening == Widening::Native)
      a.operands.p_offset_log2 = OperandSpec{}.p_offset_log2;
  }
  if (a.guard.kind == GuardKind::OnlineExact)
    a.guard = RangeGuardSpec{GuardKind::OnlineExact, RangeGuardSpec{}.sample_stride,
                             RangeGuardSpec{}.slack_log2};
  if (s.target != Target::Sm100a)
    a.tmem = TmemPlanRef{};
  if (a.tile.schedule.kernel != AttentionSchedule::WgmmaWarpSpecialized) {
    const TileSpec tile_defaults; // the mma.sync template has none of the wgmma kernel's choices
    for (const TileField &f : tileFields())
      if (f.wgmma_only)
        f.set(a.tile, f.get(tile_defaults));
  }
  // The folded pieces are how the piecewise classifier reads FP16 scores; with another classifier
  // or FP32 scores there is nothing to fold (the flag then says nothing, so that a classifier or
  // score-form change of a default spec needs no other edit).
  if (a.route != Route::DirectP || !a.tile.softmax.scores_fp16 || a.classifier.kind != ClassifierKind::Piecewise)
    a.tile.softmax.pieces_from_scores = false;
  // Fused widening replaces the passes of the persistent grid's prewidened images (FP8-fed routes,
  // no clusters); elsewhere there is nothing to fuse, and the flag says nothing (the kernels of
  // one CTA per work tile, which a default spec turns into by length, keep their passes).
  a.tile.staging.fused_widening = fusesWidening(a);
  return s;
}

// A field added to KernelSpec outside TileSpec must reach toJson, parseSpec and specsEqual (the JIT
// memo and the cache key start from them); this trips on any change of the struct's size.
// (TileSpec's fields are the field table's, spec_fields.h.)
static_assert(sizeof(KernelSpec) - sizeof(TileSpec) - sizeof(BackwardSpec) - sizeof(MergeSpec) - sizeof(PagedKvSpec) == 196,
              "KernelSpec changed: update toJson, parseSpec and specsEqual");
static_assert(sizeof(BackwardSpec) - sizeof(AttentionSpec) == 24,
              "BackwardSpec changed: update writeBackward, readBackward, canonicalize and specsEqual");
static_assert(sizeof(MergeSpec) == 12, "MergeSpec changed: update writeMerge, readMerge and specsEqual");
static_assert(sizeof(PagedKvSpec) == 20, "PagedKvSpec changed: update writePaged, readPaged and specsEqual");

namespace {
bool tilesEqual(const TileSpec &x, const TileSpec &y) {
  for (const TileField &f : tileFields())
    if (f.get(x) != f.get(y))
      return false;
  return true;
}
} // namespace

bool specsEqual(const KernelSpec &a, const KernelSpec &b) {
  auto feq = [](float x, float y) { return floatBits(x) == floatBits(y); };
  const AttentionSpec &x = a.attention, &y = b.attention;
  bool cls = x.classifier.kind == y.classifier.kind && feq(x.classifier.alpha, y.classifier.alpha) &&
             feq(x.classifier.beta, y.classifier.beta) && feq(x.classifier.y_split, y.classifier.y_split);
  for (int i = 0; i < 7; ++i)
    cls = cls && feq(x.classifier.thresholds[i], y.classifier.thresholds[i]);
  for (int i = 0; i < 4; ++i)
    cls = cls && feq(x.classifier.pieces[i], y.classifier.pieces[i]);
  const bool attn =
      x.route == y.route && x.head_dim == y.head_dim && x.causal == y.causal &&
      feq(x.softmax_scale, y.softmax_scale) && cls && x.guard.kind == y.guard.kind &&
      x.guard.sample_stride == y.guard.sample_stride && feq(x.guard.slack_log2, y.guard.slack_log2) &&
      tilesEqual(x.tile, y.tile) &&
      x.operands.qk_format == y.operands.qk_format &&
      x.operands.qk_widening == y.operands.qk_widening && x.operands.v_widening == y.operands.v_widening &&
      x.operands.qk_widen_shift == y.operands.qk_widen_shift &&
      x.operands.p_offset_log2 == y.operands.p_offset_log2 &&
      x.operands.v_keys_permuted16 == y.operands.v_keys_permuted16 &&
      x.tmem.columns_allocated == y.tmem.columns_allocated && x.tmem.s_col[0] == y.tmem.s_col[0] &&
      x.tmem.s_col[1] == y.tmem.s_col[1] && x.tmem.o_col[0] == y.tmem.o_col[0] &&
      x.tmem.o_col[1] == y.tmem.o_col[1] && x.tmem.sf_col == y.tmem.sf_col &&
      x.tmem.p_col[0] == y.tmem.p_col[0] && x.tmem.p_col[1] == y.tmem.p_col[1] &&
      x.tmem.s_spare_col == y.tmem.s_spare_col && x.tmem.sfq_col[0] == y.tmem.sfq_col[0] &&
      x.tmem.sfq_col[1] == y.tmem.sfq_col[1] && x.tmem.sfk_col[0] == y.tmem.sfk_col[0] &&
      x.tmem.sfk_col[1] == y.tmem.sfk_col[1] && x.tmem.sfp_col[0] == y.tmem.sfp_col[0] &&
      x.tmem.sfp_col[1] == y.tmem.sfp_col[1] && x.tmem.sfv_col[0] == y.tmem.sfv_col[0] &&
      x.tmem.sfv_col[1] == y.tmem.sfv_col[1];
  const QuantizeSpec &p = a.quantize, &q = b.quantize;
  const bool quant = p.format == q.format && p.layout == q.layout && p.input_fp32 == q.input_fp32 &&
                     p.input_fp16 == q.input_fp16 &&
                     p.keys_permuted16 == q.keys_permuted16 && p.head_dim == q.head_dim &&
                     p.threads == q.threads && p.code_shift == q.code_shift;
  const BackwardSpec &u = a.backward, &w = b.backward;
  const bool backward = u.pv == w.pv && u.qk == w.qk && u.p_offset_log2 == w.p_offset_log2 &&
                        u.tile.block_m == w.tile.block_m && u.tile.block_n == w.tile.block_n &&
                        u.tile.warps == w.tile.warps && u.deterministic == w.deterministic && u.mma == w.mma &&
                        u.forward.head_dim == w.forward.head_dim && u.forward.causal == w.forward.causal &&
                        feq(u.forward.softmax_scale, w.forward.softmax_scale) &&
                        u.forward.operands.qk_widening == w.forward.operands.qk_widening &&
                        u.forward.operands.qk_widen_shift == w.forward.operands.qk_widen_shift;
  const MergeSpec &m = a.merge, &n = b.merge;
  const bool merge = m.value == n.value && m.head_dim == n.head_dim && m.threads == n.threads;
  const PagedKvSpec &pa = a.paged, &pb = b.paged;
  const bool paged = pa.head_dim == pb.head_dim && pa.page_size == pb.page_size && pa.warps == pb.warps &&
                     pa.value_format == pb.value_format && pa.kv_stages == pb.kv_stages;
  return a.family == b.family && a.target == b.target && attn && quant && backward && merge && paged;
}

std::string toJson(const KernelSpec &spec, unsigned indent) {
  const KernelSpec s = canonicalize(spec);
  std::string out;
  llvm::raw_string_ostream os(out);
  llvm::json::OStream j(os, indent);
  j.object([&] {
    if (s.family == KernelFamily::AttentionForward)
      writeAttention(j, s.attention, s.target);
    if (s.family == KernelFamily::AttentionBackward)
      writeBackward(j, s.backward);
    j.attribute("family", toString(s.family));
    if (s.family == KernelFamily::MergeStates)
      writeMerge(j, s.merge);
    if (s.family == KernelFamily::PagedKv)
      writePaged(j, s.paged);
    if (s.family == KernelFamily::Quantize)
      writeQuantize(j, s.quantize);
    j.attribute("schema", kSpecSchemaVersion);
    j.attribute("target", toString(s.target));
  });
  os.flush();
  return out;
}

llvm::Expected<KernelSpec> parseSpec(llvm::StringRef text) {
  llvm::Expected<llvm::json::Value> doc = parseJsonBounded(text, "spec");
  if (!doc)
    return llvm::createStringError(llvm::inconvertibleErrorCode(), "spec is not valid JSON: " +
                                                                       llvm::toString(doc.takeError()));
  const llvm::json::Object *root = doc->getAsObject();
  if (!root)
    return llvm::createStringError(llvm::inconvertibleErrorCode(), "spec must be a JSON object");
  KernelSpec s;
  ObjectReader r(*root, "");
  int schema = kSpecSchemaVersion;
  FA4JIT_TRY(r.readInt("schema", schema));
  if (schema != kSpecSchemaVersion)
    return r.fail("schema", "version " + llvm::Twine(schema) + " is not supported (this build reads " +
                                llvm::Twine(kSpecSchemaVersion) + ")");
  FA4JIT_TRY(r.readEnum(llvm::StringRef("family"), s.family, parseKernelFamily));
  FA4JIT_TRY(r.readEnum(llvm::StringRef("target"), s.target, parseTarget));
  // Only the family's own sub-object may appear: another one would be silently dropped.
  const char *own = s.family == KernelFamily::AttentionForward ? "attention"
                    : s.family == KernelFamily::Quantize       ? "quantize"
                    : s.family == KernelFamily::MergeStates    ? "merge"
                    : s.family == KernelFamily::PagedKv        ? "paged"
                                                               : "backward";
  for (const char *key : {"attention", "quantize", "backward", "merge", "paged"})
    if (llvm::StringRef(key) != own && root->get(key))
      return r.fail(key, llvm::Twine("not allowed in a spec of family '") + toString(s.family) + "'");
  llvm::Error body =
      s.family == KernelFamily::AttentionForward
          ? r.readObject("attention", [&](ObjectReader &o) { return readAttention(o, s.attention); })
      : s.family == KernelFamily::Quantize
          ? r.readObject("quantize", [&](ObjectReader &o) { return readQuantize(o, s.quantize); })
      : s.family == KernelFamily::MergeStates
          ? r.readObject("merge", [&](ObjectReader &o) { return readMerge(o, s.merge); })
      : s.family == KernelFamily::PagedKv
          ? r.readObject("paged", [&](ObjectReader &o) { return readPaged(o, s.paged); })
          : r.readObject("backward", [&](ObjectReader &o) { return readBackward(o, s.backward); });
  FA4JIT_TRY(std::move(body));
  FA4JIT_TRY(r.checkNoUnknownKeys());
  return s;
}

std::string specHash(const KernelSpec &spec) {
  llvm::SHA256 sha;
  sha.update(toJson(spec, 0));
  return llvm::toHex(llvm::arrayRefFromStringRef(sha.final()), /*LowerCase=*/true);
}

std::string kernelName(const KernelSpec &spec) {
  const std::string hash8 = specHash(spec).substr(0, 8);
  char buf[96];
  if (spec.family == KernelFamily::Quantize) {
    const QuantizeSpec &q = spec.quantize;
    std::snprintf(buf, sizeof buf, "fa4jit_quant_%s_d%d_%s", toString(q.format), q.head_dim, hash8.c_str());
  } else if (spec.family == KernelFamily::PagedKv) {
    const PagedKvSpec &p = spec.paged;
    std::snprintf(buf, sizeof buf, "fa4jit_paged_%s_d%d_p%d_w%d%s_%s", toString(p.value_format), p.head_dim,
                  p.page_size, p.warps, p.kv_stages ? ("_s" + std::to_string(p.kv_stages)).c_str() : "",
                  hash8.c_str());
  } else if (spec.family == KernelFamily::MergeStates) {
    const MergeSpec &m = spec.merge;
    std::snprintf(buf, sizeof buf, "fa4jit_merge_%s_d%d_%s", toString(m.value), m.head_dim, hash8.c_str());
  } else if (spec.family == KernelFamily::AttentionBackward) {
    const BackwardSpec &b = spec.backward;
    std::snprintf(buf, sizeof buf, "fa4jit_attn_bwd_%s_d%d_c%d_%s", toString(b.pv), b.forward.head_dim,
                  b.forward.causal ? 1 : 0, hash8.c_str());
  } else {
    const AttentionSpec &a = spec.attention;
    std::snprintf(buf, sizeof buf, "fa4jit_attn_%s%s_d%d_c%d_%s", toString(a.route),
                  a.operands.qk_format == QkFormat::E4m3 ? "_qk8" : "", a.head_dim, a.causal ? 1 : 0, hash8.c_str());
  }
  return buf;
}

} // namespace fa4jit
