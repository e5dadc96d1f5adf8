#include "fa4jit/codegen/spec_validate.h"
#include "fa4jit/codegen/tmem_planner.h"

#include <catch2/catch.hpp>

#include <string>

using namespace fa4jit;
using namespace fa4jit::tmem;

namespace {

TmemRequest request(Route route, int head_dim, int q_tiles, int block_n = 128) {
  TmemRequest r;
  r.route = route;
  r.formats = defaultOperandFormats(route);
  r.head_dim = head_dim;
  r.q_tiles = q_tiles;
  r.block_n = block_n;
  return r;
}

TmemPlan plan(const TmemRequest &r) {
  llvm::Expected<TmemPlan> p = planTmem(r);
  if (!p)
    FAIL(llvm::toString(p.takeError()));
  return std::move(*p);
}

void checkRegion(const TmemPlan &p, const std::string &name, int first, int columns) {
  const Region *r = p.find(name);
  INFO("region " << name);
  REQUIRE(r != nullptr);
  CHECK(r->first_column == first);
  CHECK(r->columns == columns);
  CHECK(r->lanes == kLanes);
}

std::string errText(llvm::Error e) { return e ? llvm::toString(std::move(e)) : std::string(); }

void requireValid(const TmemPlan &p) {
  INFO(p.rejected_reason);
  REQUIRE(p.fits);
  REQUIRE(errText(verifyPlan(p)) == "");
}

} // namespace

TEST_CASE("scale-factor columns: 4 per 128 rows per 4 scales along K", "[codegen][tmem]") {
  CHECK(scaleFactorColumns(128, 128, 16) == 8);  // SFQ of D128 NVFP4 (FA4 fork: 8)
  CHECK(scaleFactorColumns(128, 128, 32) == 4);  // same at vec 32 (FA4 fork: 4)
  CHECK(scaleFactorColumns(128, 64, 16) == 4);   // one K=64 MMA at scale_vec::4X (CUTLASS: M/32)
  CHECK(scaleFactorColumns(64, 128, 32) == 4);   // SFB's N rounds up to 128
  CHECK(scaleFactorColumns(256, 128, 32) == 8);  // 256 rows: two 128-row atoms
  CHECK(scaleFactorColumns(128, 256, 16) == 16); // D256 Q
}

TEST_CASE("allocation is a power of two in [32, 512]", "[codegen][tmem]") {
  CHECK(allocationColumns(1) == 32);
  CHECK(allocationColumns(32) == 32);
  CHECK(allocationColumns(33) == 64);
  CHECK(allocationColumns(384) == 512);
  CHECK(allocationColumns(512) == 512);
  CHECK(allocationColumns(513) == 0);
  for (Route route : {Route::Bf16, Route::Nvfp8, Route::DirectP})
    for (int d : {64, 128, 256})
      for (int q : {1, 2}) {
        TmemPlan p = plan(request(route, d, q));
        if (!p.fits)
          continue;
        const int a = p.allocation_columns;
        INFO(toString(route) << " D" << d << " q" << q);
        CHECK((a & (a - 1)) == 0);
        CHECK(a >= 32);
        CHECK(a <= 512);
        CHECK(a >= p.used_columns);
        CHECK((a == 32 || a / 2 < p.used_columns));
      }
}

TEST_CASE("D128 with two Q tiles uses all 512 columns and leaves no overlap window (the paper)", "[codegen][tmem]") {
  for (Route route : {Route::Bf16, Route::Nvfp8, Route::DirectP}) {
    INFO(toString(route));
    TmemPlan p = plan(request(route, 128, 2));
    requireValid(p);
    checkRegion(p, "S0", 0, 128);
    checkRegion(p, "S1", 128, 128);
    checkRegion(p, "O0", 256, 128);
    checkRegion(p, "O1", 384, 128);
    CHECK(p.used_columns == 512);
    CHECK(p.allocation_columns == 512);
    CHECK(p.spare_columns == 0);
    REQUIRE(!p.windows.empty());
    CHECK(p.windows[0].name == "QK(j+1) || PV(j)");
    CHECK_FALSE(p.windows[0].open);
    CHECK(p.windows[0].destinations == 0);
    // Something that would open it is named, and re-planning confirms it does.
    bool some_lever_opens = false;
    for (const Lever &l : p.windows[0].levers)
      some_lever_opens |= l.fits && l.destinations > 0;
    CHECK(some_lever_opens);
  }
}

TEST_CASE("P aliases the top end of S: BF16 half, FP8 a quarter, FP4 an eighth", "[codegen][tmem]") {
  TmemPlan bf16 = plan(request(Route::Bf16, 128, 2));
  checkRegion(bf16, "P0", 64, 64); // FA4: tmem_p_offset = S + n_block / 2
  checkRegion(bf16, "P1", 192, 64);
  CHECK(bf16.find("P0")->aliases == "S0");
  TmemPlan fp8 = plan(request(Route::Nvfp8, 128, 2));
  checkRegion(fp8, "P0", 96, 32);
  TmemPlan fp4 = plan(request(Route::DirectP, 128, 2));
  checkRegion(fp4, "P1", 128 + 112, 16);
  CHECK(fp4.find("P1")->aliases == "S1");
}

TEST_CASE("D128 x 2 block-scaled: dedicated scale factors do not fit, so they alias dead score columns",
          "[codegen][tmem]") {
  TmemRequest r = request(Route::DirectP, 128, 2);
  r.sf_placement = SfPlacement::Dedicated;
  TmemPlan ded = plan(r);
  CHECK_FALSE(ded.fits);
  // SFQ 2x8 + SFK 8 + SFP 2x4 + SFV 4 = 36 columns over.
  CHECK(ded.used_columns == 548);
  CHECK(ded.rejected_reason.find("by 36") != std::string::npos);
  CHECK(errText(verifyPlan(ded)).find("does not fit") != std::string::npos);

  TmemPlan p = plan(request(Route::DirectP, 128, 2)); // Auto
  requireValid(p);
  CHECK(p.sf_placement_used == SfPlacement::InScoreGap);
  for (const char *name : {"SFQ0", "SFQ1", "SFK.0", "SFK.1", "SFP0", "SFP1", "SFV.0", "SFV.1"}) {
    INFO(name);
    const Region *sf = p.find(name);
    REQUIRE(sf != nullptr);
    CHECK(sf->kind == RegionKind::ScaleFactors);
    CHECK((sf->aliases == "S0" || sf->aliases == "S1"));
  }
  // QK's scale factors never sit in the S buffer that QK writes.
  CHECK(p.find("SFQ0")->aliases == "S1");
  CHECK(p.find("SFQ1")->aliases == "S0");
  CHECK(p.find("SFP0")->aliases == "S0");
  CHECK_FALSE(p.notes.empty());
}

TEST_CASE("D64 leaves room for another S destination", "[codegen][tmem]") {
  for (Route route : {Route::Bf16, Route::Nvfp8, Route::DirectP}) {
    INFO(toString(route));
    TmemPlan p = plan(request(route, 64, 2));
    requireValid(p);
    checkRegion(p, "O0", 256, 64);
    checkRegion(p, "O1", 320, 64);
    CHECK(p.windows[0].open);
    CHECK(p.windows[0].destinations >= 1);
  }
  TmemRequest claim = request(Route::DirectP, 64, 2);
  claim.claim_windows = true;
  TmemPlan p = plan(claim);
  requireValid(p);
  checkRegion(p, "S*", 384, 128);
  CHECK(p.allocation_columns == 512);
  TmemPlanRef ref;
  REQUIRE(errText(fillTmemPlanRef(p, ref)) == "");
  CHECK(ref.s_spare_col == 384);
}

TEST_CASE("D256 with two Q tiles is rejected with the reason; one Q tile fits", "[codegen][tmem]") {
  TmemPlan two = plan(request(Route::DirectP, 256, 2));
  CHECK_FALSE(two.fits);
  CHECK(two.allocation_columns == 0);
  CHECK(two.rejected_reason.find("O0+O1 (512)") != std::string::npos);
  CHECK(two.rejected_reason.find("by 256") != std::string::npos);
  TmemPlanRef ref;
  CHECK(errText(fillTmemPlanRef(two, ref)).find("does not fit") != std::string::npos);

  TmemPlan one = plan(request(Route::DirectP, 256, 1));
  requireValid(one);
  checkRegion(one, "S0", 0, 128);
  checkRegion(one, "O0", 128, 256);
  // Dedicated QK scales: SFQ0 16 + SFK 16 leave 512 - 416 = 96 < 128: no extra S.
  CHECK(one.used_columns == 416);
  CHECK_FALSE(one.windows[0].open);
  TmemRequest small_n = request(Route::DirectP, 256, 1, 64);
  CHECK(plan(small_n).windows[0].open);
}

TEST_CASE("every plan keeps its invariants: regions overlap only as declared aliases", "[codegen][tmem]") {
  for (Route route : {Route::Bf16, Route::Nvfp8, Route::DirectP})
    for (int d : {64, 128, 256})
      for (int q : {1, 2})
        for (int n : {64, 128, 256})
          for (SfPlacement sf : {SfPlacement::Auto, SfPlacement::Dedicated, SfPlacement::InScoreGap})
            for (bool claim : {false, true}) {
              TmemRequest r = request(route, d, q, n);
              r.sf_placement = sf;
              r.claim_windows = claim;
              TmemPlan p = plan(r);
              INFO(toString(route) << " D" << d << " q" << q << " n" << n << " " << toString(sf) << " claim " << claim);
              if (!p.fits) {
                CHECK_FALSE(p.rejected_reason.empty());
                CHECK(p.used_columns > kCapacityColumns);
                continue;
              }
              CHECK(errText(verifyPlan(p)) == "");
              for (const OverlapWindow &w : p.windows)
                CHECK(w.open == (w.destinations > 0));
            }
}

TEST_CASE("verifyPlan catches undeclared overlaps and aliases that stick out", "[codegen][tmem]") {
  TmemPlan p = plan(request(Route::Bf16, 128, 2));
  requireValid(p);
  TmemPlan bad = p;
  bad.regions.push_back({"X", 100, 40, kLanes, RegionKind::ScaleFactors, "", "collides with S0/S1"});
  CHECK(errText(verifyPlan(bad)).find("without a declared alias") != std::string::npos);
  TmemPlan out = p;
  out.regions.push_back({"Y", 120, 16, kLanes, RegionKind::ScaleFactors, "S0", "crosses into S1"});
  CHECK(errText(verifyPlan(out)).find("sticks out") != std::string::npos);
}

TEST_CASE("malformed requests are errors that name the field", "[codegen][tmem]") {
  auto message = [](TmemRequest r) {
    llvm::Expected<TmemPlan> p = planTmem(r);
    REQUIRE_FALSE(static_cast<bool>(p));
    return llvm::toString(p.takeError());
  };
  TmemRequest r = request(Route::DirectP, 96, 2);
  CHECK(message(r).find("head_dim 96") != std::string::npos); // not a multiple of FP4 MMA-K 64
  r = request(Route::DirectP, 128, 3);
  CHECK(message(r).find("q_tiles 3") != std::string::npos);
  r = request(Route::Bf16, 128, 2, 48);
  CHECK(message(r).find("block_n 48") != std::string::npos);
  r = request(Route::Bf16, 128, 2);
  r.formats.p = OperandFormat::Mxfp4; // V stays BF16
  CHECK(message(r).find("cannot feed one MMA kind") != std::string::npos);
}

TEST_CASE("a plan fills the spec's TmemPlanRef and the spec validates", "[codegen][tmem]") {
  KernelSpec spec;
  spec.target = Target::Sm100a;
  spec.attention.route = Route::DirectP;
  spec.attention.head_dim = 128;
  spec.attention.tile.shape.block_m = 256;
  spec.attention.tile.shape.block_n = 128;
  spec.attention.operands.qk_widening = Widening::Native;
  spec.attention.operands.v_widening = Widening::Native;
  llvm::Expected<TmemRequest> r = requestFromSpec(spec);
  REQUIRE(static_cast<bool>(r));
  CHECK(r->q_tiles == 2);
  CHECK(r->formats.p == OperandFormat::Mxfp4);
  TmemPlan p = plan(*r);
  REQUIRE(errText(fillTmemPlanRef(p, spec.attention.tmem)) == "");
  const TmemPlanRef &m = spec.attention.tmem;
  CHECK(m.columns_allocated == 512);
  CHECK(m.s_col[0] == 0);
  CHECK(m.s_col[1] == 128);
  CHECK(m.o_col[0] == 256);
  CHECK(m.o_col[1] == 384);
  CHECK(m.p_col[0] == 112);
  CHECK(m.sfq_col[0] == p.find("SFQ0")->first_column);
  CHECK(m.sfk_col[1] == p.find("SFK.1")->first_column);
  CHECK(m.sf_col >= 0);
  CHECK(m.s_spare_col == -1);
  CHECK(errText(validateSpec(spec)) == "");

  spec.target = Target::Sm90a;
  llvm::Expected<TmemRequest> hopper = requestFromSpec(spec);
  REQUIRE_FALSE(static_cast<bool>(hopper));
  CHECK(llvm::toString(hopper.takeError()).find("sm_90a") != std::string::npos);
}
