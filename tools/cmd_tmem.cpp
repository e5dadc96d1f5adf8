// fa4jit tmem: print and draw the TMEM column plan of an sm_100a attention kernel.
#include "cli_flags.h"
#include "cli_values.h"
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

} // namespace

int runTmem(int argc, char **argv) {
  CliFlags flags({shared_flags::route(), shared_flags::headDim(), {"q-tiles"}, {"block-n"}, {"o-split"}, {"sf"},
                  {"claim-windows", FlagValue::None}, shared_flags::json(), {"svg"}});
  if (auto e = flags.parse(argc, argv))
    return usageError(llvm::toString(std::move(e)));
  if (flags.help())
    return std::fputs(kUsage, stdout), 0;
  if (!flags.has("route") || !flags.has("head-dim"))
    return usageError("--route and --head-dim are required");
  tmem::TmemRequest r;
  auto route = routeFlag(flags, "");
  if (!route)
    return usageError(llvm::toString(route.takeError()));
  r.route = *route;
  r.formats = tmem::defaultOperandFormats(r.route);
  auto head_dim = headDimFlag(flags, "");
  if (!head_dim)
    return usageError(llvm::toString(head_dim.takeError()));
  r.head_dim = *head_dim;
  auto q_tiles = flags.integer("q-tiles", r.q_tiles, 1, 2);
  auto block_n = flags.integer("block-n", r.block_n, -100000, 100000);
  auto o_split = flags.integer("o-split", r.o_split, -100000, 100000);
  llvm::Error errors[] = {q_tiles.takeError(), block_n.takeError(), o_split.takeError()};
  llvm::Error bad_value = llvm::Error::success();
  for (llvm::Error &e : errors)
    bad_value = llvm::joinErrors(std::move(bad_value), std::move(e));
  if (bad_value)
    return usageError(llvm::toString(std::move(bad_value)));
  r.q_tiles = static_cast<int>(*q_tiles);
  r.block_n = static_cast<int>(*block_n);
  r.o_split = static_cast<int>(*o_split);
  const std::string sf = flags.str("sf", "auto");
  if (sf == "auto")
    r.sf_placement = tmem::SfPlacement::Auto;
  else if (sf == "dedicated")
    r.sf_placement = tmem::SfPlacement::Dedicated;
  else if (sf == "pv-in-score-gap")
    r.sf_placement = tmem::SfPlacement::PvInScoreGap;
  else if (sf == "in-score-gap")
    r.sf_placement = tmem::SfPlacement::InScoreGap;
  else
    return usageError("unknown --sf '" + sf + "'");
  r.claim_windows = flags.has("claim-windows");
  const bool json = flags.has("json");
  const std::string svg_path = flags.str("svg", "");

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
