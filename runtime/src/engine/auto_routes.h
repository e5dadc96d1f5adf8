#pragma once
// Private to the engine: what Engine::autoRoute remembers (engine_auto_route.cpp).
#include "fa4jit/runtime/engine.h"
#include "fa4jit/runtime/tuner.h"

#include <map>
#include <memory>
#include <mutex>
#include <string>

namespace fa4jit {

struct Engine::AutoRoutes {
  std::mutex mutex;
  struct Remembered {
    AutoRouteChoice choice;
    std::string error; // non-empty: no preset met the budget
  };
  std::map<std::string, Remembered> choices;                                 // by tuning key and input type
  std::map<double, std::unique_ptr<runtime::CpuModelAccuracy>> probes;       // by logit std
};

} // namespace fa4jit
