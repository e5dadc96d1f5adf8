// fa4jit tmem: print and draw the TMEM column plan of an sm_100a attention kernel.
#include "subcommands.h"
#include "tmem_render.h"

#include <llvm/Support/FormatVariadic.h>
#include <llvm/Support/raw_ostream.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>

namespace fa4jit::tools {
namespace {

const char *kUsage =
    "usage: fa4jit tmem --route directp|nvfp8|bf16 --head-dim 64|128|256 --q-tiles 1|2\n"
    "                   [--block-n N] [--o-split 1|2|4] [--sf auto|dedicated|pv-in-score-gap|in-score-gap]\n"
    "                   [--claim-windows] [--json] [--svg FILE]\n"
    "\n"
    "Assigns sm_100a tensor-memory columns (128 lanes x 512 columns x 32 bit) to the S, O and P buffers\n"
    "and the block-scale factors of one attention CTA, prints the column map and a bar of the 512\n"
    "columns, and says whether QK^T of the next KV tile can overlap PV of this one (and what would\n"
    "open that window if not).\n"
    "\n"
    "  --route R        operand formats of the route (directp: NVFP4 Q/K, MXFP4 P/V; nvfp8: NVFP4 Q/K,\n"
    "                   FP8 P/V; bf16)\n"
    "  --head-dim D     64, 128 or 256\n"
    "  --q-tiles T      128-row Q tiles per CTA, 1 or 2 (default 2)\n"
    "  --block-n N      keys per S tile, multiple of 32 (default 128)\n"
    "  --o-split K      keep head_dim/K output columns per CTA (default 1)\n"
    "  --sf P           scale-factor placement (default auto)\n"
    "  --claim-windows  put the spare S destination of an open window into the plan\n"
    "  --json           print the plan as JSON instead of the table\n"
    "  --svg FILE       also draw the plan as SVG\n"
    "\n"
    "exit status: 0 plan fits, 1 plan does not fit (the reason is printed), 2 usage error\n";

int usageError(const std::string &msg) {
  std::fprintf(stderr, "fa4jit tmem: %s\n(try 'fa4jit tmem --help')\n", msg.c_str());
  return 2;
}

bool parseInt(const char *s, int &out) {
  char *end = nullptr;
  const long v = std::strtol(s, &end, 10);
  if (!*s || *end || v < -100000 || v > 100000)
    return false;
  out = static_cast<int>(v);
  return true;
}

} // namespace

int runTmem(int argc, char **argv) {
  tmem::TmemRequest r;
  bool have_route = false, have_dim = false, json = false;
  std::string svg_path;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--help" || a == "-h") {
      std::fputs(kUsage, stdout);
      return 0;
    }
    if (a == "--json") { json = true; continue; }
    if (a == "--claim-windows") { r.claim_windows = true; continue; }
    if (i + 1 >= argc)
      return usageError("option " + a + " needs a value");
    const char *v = argv[++i];
    if (a == "--route") {
      if (!std::strcmp(v, "directp")) r.route = Route::DirectP;
      else if (!std::strcmp(v, "nvfp8")) r.route = Route::Nvfp8;
      else if (!std::strcmp(v, "bf16")) r.route = Route::Bf16;
      else return usageError(std::string("unknown route '") + v + "' (directp, nvfp8 or bf16)");
      r.formats = tmem::defaultOperandFormats(r.route);
      have_route = true;
    } else if (a == "--head-dim") {
      if (!parseInt(v, r.head_dim) || (r.head_dim != 64 && r.head_dim != 128 && r.head_dim != 256))
        return usageError(std::string("head dim '") + v + "' is not 64, 128 or 256");
      have_dim = true;
    } else if (a == "--q-tiles") {
      if (!parseInt(v, r.q_tiles) || (r.q_tiles != 1 && r.q_tiles != 2))
        return usageError(std::string("q-tiles '") + v + "' is not 1 or 2");
    } else if (a == "--block-n") {
      if (!parseInt(v, r.block_n))
        return usageError(std::string("block-n '") + v + "' is not a number");
    } else if (a == "--o-split") {
      if (!parseInt(v, r.o_split))
        return usageError(std::string("o-split '") + v + "' is not a number");
    } else if (a == "--sf") {
      if (!std::strcmp(v, "auto")) r.sf_placement = tmem::SfPlacement::Auto;
      else if (!std::strcmp(v, "dedicated")) r.sf_placement = tmem::SfPlacement::Dedicated;
      else if (!std::strcmp(v, "pv-in-score-gap")) r.sf_placement = tmem::SfPlacement::PvInScoreGap;
      else if (!std::strcmp(v, "in-score-gap")) r.sf_placement = tmem::SfPlacement::InScoreGap;
      else return usageError(std::string("unknown --sf '") + v + "'");
    } else if (a == "--svg") {
      svg_path = v;
    } else {
      return usageError("unknown option " + a);
    }
  }
  if (!have_route || !have_dim)
    return usageError("--route and --head-dim are required");

  llvm::Expected<tmem::TmemPlan> plan = tmem::planTmem(r);
  if (!plan)
    return usageError(llvm::toString(plan.takeError()));

  if (json)
    llvm::outs() << llvm::formatv("{0:2}", tmemPlanToJson(*plan)) << "\n";
  else
    llvm::outs() << renderTmemTable(*plan);
  llvm::outs().flush();

  if (!svg_path.empty()) {
    std::ofstream f(svg_path, std::ios::binary | std::ios::trunc);
    f << renderTmemSvg(*plan);
    f.close();
    if (!f) {
      std::fprintf(stderr, "fa4jit tmem: cannot write %s\n", svg_path.c_str());
      return 2;
    }
    if (!json)
      std::printf("  SVG written to %s\n", svg_path.c_str());
  }
  return plan->fits ? 0 : 1;
}

} // namespace fa4jit::tools
