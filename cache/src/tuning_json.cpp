// JSON form of a tuning database file (tuning_db.h):
//   {"schema": 1, "device": {"name", "sm_count"}, "records": {"<key>": record, ...},
//    "sha256": hex of the compact JSON of {"device", "records", "schema"}}
// and each record carries "sha256", the hex of its own compact JSON without that member. The
// checksums catch a damaged number that still parses; the record's own lets the intact records of
// a damaged file be kept. llvm::json prints object keys sorted and doubles with round-trip
// precision, so re-printing what was read reproduces the hashed text.
#include "fa4jit/cache/sha256.h"
#include "fa4jit/codegen/json_limits.h"
#include "fa4jit/cache/tuning_db.h"
#include "fa4jit/codegen/spec_io.h"
#include "fa4jit/codegen/spec_validate.h"
#include "fa4jit/paged/params.cuh"

#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"

#include <cctype>
#include <charconv>
#include <cstdio>
#include <cmath>

namespace fa4jit::cache {

namespace json = llvm::json;

namespace {

class SchemaMismatch : public llvm::ErrorInfo<SchemaMismatch> {
public:
  static char ID;
  explicit SchemaMismatch(std::string msg) : msg_(std::move(msg)) {}
  void log(llvm::raw_ostream &os) const override { os << msg_; }
  std::error_code convertToErrorCode() const override { return llvm::inconvertibleErrorCode(); }

private:
  std::string msg_;
};
char SchemaMismatch::ID;

llvm::Error bad(llvm::StringRef path, const std::string &where, const std::string &what) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), "%s: %s: %s", path.str().c_str(), where.c_str(),
                                 what.c_str());
}

json::Value timeOrNull(double ms) { return std::isfinite(ms) ? json::Value(ms) : json::Value(nullptr); }

json::Value toJSON(const CandidateResult &c) {
  json::Object o{{"label", c.label},   {"ok", c.ok},       {"median_ms", timeOrNull(c.median_ms)},
                 {"min_ms", timeOrNull(c.min_ms)}, {"max_ms", timeOrNull(c.max_ms)}, {"reps", c.reps},
                 {"noise", c.noise},   {"error", c.error}};
  auto spec = json::parse(toJson(c.spec));
  o["spec"] = spec ? std::move(*spec) : json::Value(nullptr);
  if (!spec)
    llvm::consumeError(spec.takeError());
  if (c.cosine)
    o["cosine"] = *c.cosine;
  if (c.splits > 0)
    o["splits"] = c.splits;
  return o;
}

json::Object keyJson(const TuningKey &k) {
  if (k.family == KernelFamily::PagedKv)
    return json::Object{{"family", toString(k.family)},    {"target", toString(k.target)},
                        {"value_format", toString(k.value_format)}, {"head_dim", k.head_dim},
                        {"page_size", k.page_size},        {"cta_bucket", k.cta_bucket},
                        {"seqlen_bucket", k.seqlen_bucket}};
  if (k.route_auto)
    return json::Object{{"family", toString(k.family)}, {"target", toString(k.target)},
                        {"route", "auto"},              {"head_dim", k.head_dim},
                        {"causal", k.causal},           {"seqlen_bucket", k.seqlen_bucket},
                        {"min_cosine", k.min_cosine},   {"logit_std", k.logit_std}};
  return json::Object{{"family", toString(k.family)}, {"target", toString(k.target)},
                      {"route", toString(k.route)},   {"head_dim", k.head_dim},
                      {"causal", k.causal},           {"seqlen_bucket", k.seqlen_bucket}};
}

json::Value toJSON(const TuningRecord &r) {
  json::Array candidates, pruned;
  for (const CandidateResult &c : r.candidates)
    candidates.push_back(toJSON(c));
  for (const PrunedCandidate &p : r.pruned)
    pruned.push_back(json::Object{{"label", p.label}, {"reason", p.reason}});
  return json::Object{
      {"key", keyJson(r.key)},
      {"identity", json::Object{{"driver", r.identity.driver},
                                {"nvrtc", r.identity.nvrtc},
                                {"fa4jit_version", r.identity.fa4jit_version}}},
      {"winner", r.winner},
      {"heuristic", r.heuristic},
      {"tie_band", r.tie_band},
      {"min_cosine", r.min_cosine},
      {"accuracy_source", r.accuracy_source},
      {"timing_source", r.timing_source},
      {"problem", r.problem},
      {"tuned_at", r.tuned_at},
      {"candidates", std::move(candidates)},
      {"pruned", std::move(pruned)},
  };
}

std::string compact(const json::Value &v) { return llvm::formatv("{0}", v).str(); }

// A record's own checksum: over its compact JSON without the "sha256" member.
std::string recordChecksum(json::Object record) {
  record.erase("sha256");
  return sha256Hex(compact(json::Value(std::move(record))));
}

json::Object content(const TuningFile &f) {
  json::Object records;
  for (const auto &[k, r] : f.records) {
    json::Value v = toJSON(r);
    json::Object *o = v.getAsObject();
    (*o)["sha256"] = recordChecksum(*o);
    records[k] = std::move(v);
  }
  // Rejected records stay apart from the good ones, with the reason, so that rewriting the file
  // (and its checksum) never turns one into a record that lookups would trust.
  json::Object rejected;
  for (const auto &[k, r] : f.rejected) {
    if (f.records.count(k)) // (tuned again: the new record replaces it)
      continue;
    auto raw = json::parse(r.json);
    json::Value kept = raw ? std::move(*raw) : json::Value(r.json);
    if (!raw)
      llvm::consumeError(raw.takeError());
    rejected[k] = json::Object{{"reason", r.reason}, {"record", std::move(kept)}};
  }
  json::Object o{{"schema", f.schema},
                 {"device", json::Object{{"name", f.device_name}, {"sm_count", f.sm_count}}},
                 {"records", std::move(records)}};
  if (!rejected.empty())
    o["rejected"] = std::move(rejected);
  return o;
}

// Field readers: each error names the JSON path.
class Reader {
public:
  Reader(llvm::StringRef path) : path_(path) {}
  llvm::Error err(const std::string &where, const std::string &what) const { return bad(path_, where, what); }

  llvm::Expected<const json::Object *> object(const json::Value *v, const std::string &where) const {
    if (!v || !v->getAsObject())
      return err(where, "missing or not an object");
    return v->getAsObject();
  }
  llvm::Error str(const json::Object &o, const std::string &where, llvm::StringRef name, std::string &out) const {
    auto s = o.getString(name);
    if (!s)
      return err(where + "." + name.str(), "missing or not a string");
    out = s->str();
    return llvm::Error::success();
  }
  llvm::Error integer(const json::Object &o, const std::string &where, llvm::StringRef name, int &out) const {
    auto i = o.getInteger(name);
    if (!i)
      return err(where + "." + name.str(), "missing or not an integer");
    out = static_cast<int>(*i);
    return llvm::Error::success();
  }
  llvm::Error number(const json::Object &o, const std::string &where, llvm::StringRef name, double &out,
                     bool null_is_inf = false) const {
    const json::Value *v = o.get(name);
    if (v && null_is_inf && v->kind() == json::Value::Null) {
      out = std::numeric_limits<double>::infinity();
      return llvm::Error::success();
    }
    llvm::Optional<double> d;
    if (v)
      d = v->getAsNumber();
    if (!d)
      return err(where + "." + name.str(), "missing or not a number");
    out = *d;
    return llvm::Error::success();
  }
  llvm::Error boolean(const json::Object &o, const std::string &where, llvm::StringRef name, bool &out) const {
    auto b = o.getBoolean(name);
    if (!b)
      return err(where + "." + name.str(), "missing or not a boolean");
    out = *b;
    return llvm::Error::success();
  }

private:
  llvm::StringRef path_;
};

#define TRY(expr)                                                                                                     \
  if (llvm::Error tryError = (expr))                                                                                   \
  return tryError

llvm::Expected<TuningKey> parseKey(const Reader &rd, const json::Object &o, const std::string &where) {
  TuningKey k;
  std::string family, target;
  TRY(rd.str(o, where, "family", family));
  TRY(rd.str(o, where, "target", target));
  TRY(rd.integer(o, where, "head_dim", k.head_dim));
  TRY(rd.integer(o, where, "seqlen_bucket", k.seqlen_bucket));
  auto f = parseKernelFamily(family);
  auto t = parseTarget(target);
  if (!f)
    return rd.err(where + ".family", llvm::toString(f.takeError()));
  if (!t)
    return rd.err(where + ".target", llvm::toString(t.takeError()));
  k.family = *f, k.target = *t;
  if (k.family == KernelFamily::PagedKv) {
    std::string value;
    TRY(rd.str(o, where, "value_format", value));
    TRY(rd.integer(o, where, "page_size", k.page_size));
    TRY(rd.integer(o, where, "cta_bucket", k.cta_bucket));
    auto vf = parseKvValueFormat(value);
    if (!vf)
      return rd.err(where + ".value_format", llvm::toString(vf.takeError()));
    k.value_format = *vf;
    return k;
  }
  std::string route;
  TRY(rd.str(o, where, "route", route));
  TRY(rd.boolean(o, where, "causal", k.causal));
  if (route == "auto") {
    k.route_auto = true;
    TRY(rd.number(o, where, "min_cosine", k.min_cosine));
    TRY(rd.number(o, where, "logit_std", k.logit_std));
    return k;
  }
  auto r = parseRoute(route);
  if (!r)
    return rd.err(where + ".route", llvm::toString(r.takeError()));
  k.route = *r;
  return k;
}

llvm::Expected<CandidateResult> parseCandidate(const Reader &rd, const json::Value &v, const std::string &where) {
  auto o = rd.object(&v, where);
  if (!o)
    return o.takeError();
  CandidateResult c;
  TRY(rd.str(**o, where, "label", c.label));
  TRY(rd.boolean(**o, where, "ok", c.ok));
  TRY(rd.number(**o, where, "median_ms", c.median_ms, true));
  TRY(rd.number(**o, where, "min_ms", c.min_ms, true));
  TRY(rd.number(**o, where, "max_ms", c.max_ms, true));
  TRY(rd.integer(**o, where, "reps", c.reps));
  TRY(rd.number(**o, where, "noise", c.noise));
  TRY(rd.str(**o, where, "error", c.error));
  if ((*o)->get("cosine")) {
    double cos = 0;
    TRY(rd.number(**o, where, "cosine", cos));
    c.cosine = cos;
  }
  if ((*o)->get("splits"))
    TRY(rd.integer(**o, where, "splits", c.splits));
  const json::Value *spec = (*o)->get("spec");
  if (!spec || !spec->getAsObject())
    return rd.err(where + ".spec", "missing or not an object");
  auto parsed = parseSpec(compact(*spec));
  if (!parsed)
    return rd.err(where + ".spec", llvm::toString(parsed.takeError()));
  c.spec = *parsed;
  return c;
}

llvm::Expected<TuningRecord> parseRecord(const Reader &rd, const json::Value &v, const std::string &where) {
  auto o = rd.object(&v, where);
  if (!o)
    return o.takeError();
  TuningRecord r;
  auto keyObj = rd.object((*o)->get("key"), where + ".key");
  if (!keyObj)
    return keyObj.takeError();
  auto key = parseKey(rd, **keyObj, where + ".key");
  if (!key)
    return key.takeError();
  r.key = *key;
  auto id = rd.object((*o)->get("identity"), where + ".identity");
  if (!id)
    return id.takeError();
  TRY(rd.str(**id, where + ".identity", "driver", r.identity.driver));
  TRY(rd.str(**id, where + ".identity", "nvrtc", r.identity.nvrtc));
  TRY(rd.str(**id, where + ".identity", "fa4jit_version", r.identity.fa4jit_version));
  TRY(rd.integer(**o, where, "winner", r.winner));
  TRY(rd.integer(**o, where, "heuristic", r.heuristic));
  TRY(rd.number(**o, where, "tie_band", r.tie_band));
  TRY(rd.number(**o, where, "min_cosine", r.min_cosine));
  TRY(rd.str(**o, where, "accuracy_source", r.accuracy_source));
  TRY(rd.str(**o, where, "timing_source", r.timing_source));
  TRY(rd.str(**o, where, "problem", r.problem));
  TRY(rd.str(**o, where, "tuned_at", r.tuned_at));
  const json::Array *cands = (*o)->getArray("candidates");
  if (!cands)
    return rd.err(where + ".candidates", "missing or not an array");
  for (size_t i = 0; i < cands->size(); ++i) {
    auto c = parseCandidate(rd, (*cands)[i], where + ".candidates[" + std::to_string(i) + "]");
    if (!c)
      return c.takeError();
    r.candidates.push_back(std::move(*c));
  }
  const json::Array *pruned = (*o)->getArray("pruned");
  if (!pruned)
    return rd.err(where + ".pruned", "missing or not an array");
  for (size_t i = 0; i < pruned->size(); ++i) {
    const std::string w = where + ".pruned[" + std::to_string(i) + "]";
    auto p = rd.object(&(*pruned)[i], w);
    if (!p)
      return p.takeError();
    PrunedCandidate pc;
    TRY(rd.str(**p, w, "label", pc.label));
    TRY(rd.str(**p, w, "reason", pc.reason));
    r.pruned.push_back(std::move(pc));
  }
  if (r.winner < 0 || size_t(r.winner) >= r.candidates.size() || !r.candidates[size_t(r.winner)].ok)
    return rd.err(where + ".winner", std::to_string(r.winner) + " is not a successfully timed candidate");
  if (r.heuristic < -1 || r.heuristic >= int(r.candidates.size()))
    return rd.err(where + ".heuristic", std::to_string(r.heuristic) + " is out of range");
  // A spec that parses can still be one no kernel may be built from (block_m 1,000,000), or
  // another shape's: the winner would be compiled and launched for this key.
  for (size_t i = 0; i < r.candidates.size(); ++i)
    if (llvm::Error e = validateSpec(r.candidates[i].spec))
      return rd.err(where + ".candidates[" + std::to_string(i) + "].spec", llvm::toString(std::move(e)));
  const KernelSpec &w = r.candidates[size_t(r.winner)].spec;
  if (r.key.family == KernelFamily::PagedKv) {
    // (a decode plan's splits size the launch and its partial states: one out of range would be
    // launched as it stands)
    for (size_t i = 0; i < r.candidates.size(); ++i) {
      const CandidateResult &c = r.candidates[i];
      if (c.spec.family != KernelFamily::PagedKv || c.splits < 1 || c.splits > device::paged::kMaxDecodeSplits)
        return rd.err(where + ".candidates[" + std::to_string(i) + "]",
                      "not a decode plan (a paged-kv spec and 1 to " +
                          std::to_string(device::paged::kMaxDecodeSplits) + " splits)");
    }
    if (w.target != r.key.target || w.paged.head_dim != r.key.head_dim || w.paged.page_size != r.key.page_size ||
        w.paged.value_format != r.key.value_format)
      return rd.err(where + ".winner", "its spec (" + std::string(toString(w.paged.value_format)) + ", d" +
                                           std::to_string(w.paged.head_dim) + ", page " +
                                           std::to_string(w.paged.page_size) + ", " + toString(w.target) +
                                           ") is not one for the record's key " + r.key.str());
    return r;
  }
  if (w.family != r.key.family || w.target != r.key.target ||
      (w.family == KernelFamily::AttentionForward &&
       ((!r.key.route_auto && w.attention.route != r.key.route) || w.attention.head_dim != r.key.head_dim ||
        w.attention.causal != r.key.causal)))
    return rd.err(where + ".winner", "its spec (" + std::string(toString(w.attention.route)) + ", d" +
                                         std::to_string(w.attention.head_dim) + ", " + toString(w.target) +
                                         ") is not one for the record's key " + r.key.str());
  return r;
}

} // namespace

std::string deviceSlug(llvm::StringRef device_name, int sm_count) {
  std::string slug;
  for (char ch : device_name) {
    const unsigned char u = static_cast<unsigned char>(ch);
    if (std::isalnum(u))
      slug += static_cast<char>(std::tolower(u));
    else if (!slug.empty() && slug.back() != '-')
      slug += '-';
  }
  while (!slug.empty() && slug.back() == '-')
    slug.pop_back();
  if (slug.empty())
    slug = "unknown-device";
  return slug + "-" + std::to_string(sm_count) + "sm";
}

std::string budgetText(double v) {
  char text[64];
  const auto end = std::to_chars(text, text + sizeof text, v); // (shortest round trip)
  return std::string(text, end.ptr);
}

std::string TuningKey::str() const {
  if (family == KernelFamily::PagedKv)
    return std::string(toString(family)) + "/" + toString(target) + "/" + toString(value_format) + "/d" +
           std::to_string(head_dim) + "/p" + std::to_string(page_size) + "/g" + std::to_string(cta_bucket) + "/s" +
           std::to_string(seqlen_bucket);
  const std::string attention = std::string(toString(family)) + "/" + toString(target) + "/" +
                                (route_auto ? "auto" : toString(route)) + "/d" + std::to_string(head_dim) + "/c" +
                                (causal ? "1" : "0") + "/s" + std::to_string(seqlen_bucket);
  if (!route_auto)
    return attention;
  return attention + "/cos" + budgetText(min_cosine) + "/lstd" + budgetText(logit_std);
}

const char *toString(TuningLayer layer) {
  switch (layer) {
  case TuningLayer::System:
    return "system";
  case TuningLayer::User:
    return "user";
  case TuningLayer::Memory:
    return "memory";
  }
  return "?";
}

std::string serializeTuningFile(const TuningFile &file) {
  json::Object o = content(file);
  const std::string sum = sha256Hex(compact(json::Value(json::Object(o))));
  o["sha256"] = sum;
  return llvm::formatv("{0:2}", json::Value(std::move(o))).str() + "\n";
}

bool isSchemaMismatch(const llvm::Error &error) { return error.isA<SchemaMismatch>(); }

llvm::Expected<TuningFile> parseTuningFile(llvm::StringRef text, llvm::StringRef path) {
  Reader rd(path);
  auto parsed = parseJsonBounded(text, "tuning database");
  if (!parsed)
    return rd.err("json", llvm::toString(parsed.takeError()));
  json::Object *root = parsed->getAsObject();
  if (!root)
    return rd.err("(root)", "not an object");
  auto schema = root->getInteger("schema");
  if (!schema)
    return rd.err("schema", "missing or not an integer");
  if (*schema != kTuningSchemaVersion)
    return llvm::make_error<SchemaMismatch>(
        llvm::formatv("{0}: schema {1}, this fa4jit reads schema {2}", path, *schema, kTuningSchemaVersion).str());
  auto sum = root->getString("sha256");
  if (!sum)
    return rd.err("sha256", "missing or not a string");
  const std::string expected = sum->str();
  root->erase("sha256");
  // A damaged file keeps the records whose own checksum still holds.
  const bool intact = sha256Hex(compact(*parsed)) == expected;
  TuningFile f;
  f.schema = int(*schema);
  auto device = rd.object(root->get("device"), "device");
  if (!device)
    return device.takeError();
  TRY(rd.str(**device, "device", "name", f.device_name));
  TRY(rd.integer(**device, "device", "sm_count", f.sm_count));
  auto records = rd.object(root->get("records"), "records");
  if (!records)
    return records.takeError();
  for (const auto &[name, value] : **records) {
    auto reject = [&](std::string why) { f.rejected[name.str()] = {std::move(why), compact(value)}; };
    if (!intact) {
      const json::Object *o = value.getAsObject();
      auto own = o ? o->getString("sha256") : llvm::None;
      if (!own || recordChecksum(*o) != own->str()) {
        reject("damaged: the file's checksum and the record's own do not match");
        continue;
      }
    }
    auto r = parseRecord(rd, value, "records." + name.str());
    if (!r) {
      reject(llvm::toString(r.takeError()));
      continue;
    }
    if (r->key.str() != name.str()) {
      reject("filed under " + name.str() + " but its key is " + r->key.str());
      continue;
    }
    f.records.emplace(name.str(), std::move(*r));
  }
  if (const json::Object *kept = root->getObject("rejected"))
    for (const auto &[name, value] : *kept) {
      const json::Object *o = value.getAsObject();
      auto reason = o ? o->getString("reason") : llvm::None;
      const json::Value *raw = o ? o->get("record") : nullptr;
      if (!f.records.count(name.str()))
        f.rejected[name.str()] = {reason ? reason->str() : std::string("rejected earlier"),
                                  raw ? compact(*raw) : compact(value)};
    }
  return f;
}

} // namespace fa4jit::cache
