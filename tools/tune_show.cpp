#include "tune_show.h"

#include "llvm/Support/FormatVariadic.h"

#include <fmt/format.h>

#include <cmath>
#include <cstdio>

namespace fa4jit::tools {

namespace json = llvm::json;

double tunedSpeedup(const cache::TuningRecord &r) {
  const auto &w = r.winnerResult();
  if (r.heuristic < 0 || !r.candidates[size_t(r.heuristic)].ok || !(w.median_ms > 0))
    return 1.0;
  return r.candidates[size_t(r.heuristic)].median_ms / w.median_ms;
}

namespace {

json::Value ms(double v) { return std::isfinite(v) ? json::Value(v) : json::Value(nullptr); }

std::string msText(double v) { return std::isfinite(v) ? fmt::format("{:.4f}", v) : std::string("fail"); }

} // namespace

json::Value recordJson(const cache::TuningRecord &r, bool with_candidates) {
  const auto &w = r.winnerResult();
  json::Object o{{"key", r.key.str()},
                 {"winner", w.label},
                 {"winner_ms", ms(w.median_ms)},
                 {"speedup_vs_heuristic", tunedSpeedup(r)},
                 {"candidates", int(r.candidates.size())},
                 {"pruned", int(r.pruned.size())},
                 {"tie_band", r.tie_band},
                 {"min_cosine", r.min_cosine},
                 {"problem", r.problem},
                 {"tuned_at", r.tuned_at},
                 {"driver", r.identity.driver},
                 {"nvrtc", r.identity.nvrtc},
                 {"fa4jit_version", r.identity.fa4jit_version}};
  if (w.cosine)
    o["winner_cosine"] = *w.cosine;
  if (r.heuristic >= 0) {
    o["heuristic"] = r.candidates[size_t(r.heuristic)].label;
    o["heuristic_ms"] = ms(r.candidates[size_t(r.heuristic)].median_ms);
  }
  if (with_candidates) {
    json::Array cands;
    for (const auto &c : r.candidates) {
      json::Object co{{"label", c.label}, {"ok", c.ok}, {"median_ms", ms(c.median_ms)}, {"min_ms", ms(c.min_ms)},
                      {"max_ms", ms(c.max_ms)}, {"reps", c.reps}, {"noise", c.noise}};
      if (!c.error.empty())
        co["error"] = c.error;
      if (c.cosine)
        co["cosine"] = *c.cosine;
      cands.push_back(std::move(co));
    }
    o["candidate_results"] = std::move(cands);
  }
  return o;
}

void printTuneFailure(const std::string &key, const std::string &message, bool json) {
  if (json)
    std::printf("%s\n", llvm::formatv("{0}", json::Value(json::Object{{"key", key}, {"error", message}})).str().c_str());
  else
    std::printf("  %-40s error: %s\n", key.c_str(), message.c_str());
}

int showTuningDatabase(const cache::TuningDbConfig &config, bool as_json, bool candidates) {
  json::Array all;
  bool any = false;
  bool damaged = false; // a file or record that lookups ignore: the listing is not the whole truth
  for (const auto &[layer, dir] : {std::pair<const char *, std::string>{"system", config.system_dir},
                                   std::pair<const char *, std::string>{"user", config.user_dir}}) {
    if (dir.empty())
      continue;
    for (const std::string &path : cache::tuningFilesIn(dir)) {
      std::string problem;
      auto file = cache::readTuningFile(path, &problem); // (a corrupt file has warned once)
      if (!file) {
        if (!problem.empty()) {
          std::fprintf(stderr, "fa4jit tune --show: %s layer: %s: %s\n", layer, path.c_str(), problem.c_str());
          damaged = true;
        }
        continue;
      }
      for (const auto &[k, r] : file->rejected) {
        std::fprintf(stderr, "fa4jit tune --show: %s layer: %s: record %s ignored: %s\n", layer, path.c_str(),
                     k.c_str(), r.reason.c_str());
        damaged = true;
      }
      any = true;
      if (!as_json)
        std::printf("%s layer: %s\n  device %s (%d SMs), %zu records\n\n  %-42s %-44s %9s %9s %7s %5s %s\n", layer,
                    path.c_str(), file->device_name.c_str(), file->sm_count, file->records.size(), "key", "winner",
                    "ms", "heur ms", "speedup", "cands", "tuned at / identity");
      for (const auto &[k, r] : file->records) {
        if (as_json) {
          json::Value v = recordJson(r, candidates);
          v.getAsObject()->insert({"layer", layer});
          v.getAsObject()->insert({"file", path});
          v.getAsObject()->insert({"device", file->device_name});
          v.getAsObject()->insert({"sm_count", file->sm_count});
          all.push_back(std::move(v));
          continue;
        }
        const auto &w = r.winnerResult();
        const double heur = r.heuristic >= 0 ? r.candidates[size_t(r.heuristic)].median_ms : NAN;
        std::printf("  %-42s %-44s %9s %9s %6.2fx %5zu %s fa4jit %s, driver %s\n", k.c_str(), w.label.c_str(),
                    msText(w.median_ms).c_str(), msText(heur).c_str(), tunedSpeedup(r), r.candidates.size(),
                    r.tuned_at.c_str(), r.identity.fa4jit_version.c_str(), r.identity.driver.c_str());
        if (candidates)
          for (const auto &c : r.candidates)
            std::printf("      %-50s %9s %s\n", c.label.c_str(), msText(c.median_ms).c_str(),
                        c.error.substr(0, c.error.find('\n')).c_str());
      }
      if (!as_json)
        std::printf("\n");
    }
  }
  if (as_json)
    std::printf("%s\n", llvm::formatv("{0:2}", json::Value(std::move(all))).str().c_str());
  else if (!any)
    std::printf("no tuning records in %s%s%s\n", config.user_dir.empty() ? "(no user cache)" : config.user_dir.c_str(),
                config.system_dir.empty() ? "" : " or ", config.system_dir.c_str());
  return damaged ? 1 : 0;
}

} // namespace fa4jit::tools
