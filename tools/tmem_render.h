#pragma once
// Text, JSON and SVG views of a TMEM plan (fa4jit tmem).
#include "fa4jit/codegen/tmem_planner.h"

#include <llvm/Support/JSON.h>

#include <string>

namespace fa4jit::tools {

std::string renderTmemTable(const tmem::TmemPlan &plan);   // header, region table, bar, windows, notes
std::string renderTmemBar(const tmem::TmemPlan &plan);     // two lines of 64 characters (8 columns each)
llvm::json::Value tmemPlanToJson(const tmem::TmemPlan &plan);
std::string renderTmemSvg(const tmem::TmemPlan &plan);     // columns across, aliases hatched, legend

} // namespace fa4jit::tools
