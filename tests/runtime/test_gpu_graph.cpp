// A forward captured in a CUDA graph on a user stream (strict global capture mode: any call that
// would synchronize or allocate fails the capture) and replayed on new input values gives, bit for
// bit, what the eager forward gives on those values; on the engine's workspace and on a caller's.
#include "gpu_fixture.h"

#include "../../runtime/src/toolchain/driver_api.h"

#include <cstring>
#include <vector>

using namespace fa4jit;
using namespace fa4jit::testing;

namespace {

struct Io {
  runtime::DeviceBuffer q, k, v, o, lse;
};

void fill(Io &io, const DenseShape &s, uint64_t seed) {
  std::mt19937_64 rng(seed);
  const HostBf16 q = randomBf16(s.qElems(), 1.0f, rng), k = randomBf16(s.kvElems(), 1.0f, rng),
                 v = randomBf16(s.kvElems(), 1.0f, rng);
  REQUIRE_SUCCESS(io.q.copyFromHost(q.bits.data(), s.qElems() * 2));
  REQUIRE_SUCCESS(io.k.copyFromHost(k.bits.data(), s.kvElems() * 2));
  REQUIRE_SUCCESS(io.v.copyFromHost(v.bits.data(), s.kvElems() * 2));
}

struct Result {
  std::vector<uint16_t> o;
  std::vector<float> lse;
  bool operator==(const Result &r) const {
    return o.size() == r.o.size() && std::memcmp(o.data(), r.o.data(), o.size() * 2) == 0 &&
           std::memcmp(lse.data(), r.lse.data(), lse.size() * 4) == 0;
  }
};

Result read(const Io &io, const DenseShape &s) {
  return {download<uint16_t>(io.o, s.qElems()), download<float>(io.lse, s.rows())};
}

} // namespace

TEST_CASE("a captured forward replays bit for bit on new inputs", "[gpu][graph]") {
  Engine &engine = gpuEngine();
  const runtime::DriverApi &api = engine.driver().api();
  DenseShape s;
  s.batch = 2, s.heads_q = 4, s.heads_kv = 2, s.seqlen_q = 700, s.seqlen_k = 900, s.head_dim = 128;
  std::vector<uint8_t> zeros(std::max(s.qElems() * 2, s.kvElems() * 2), 0);
  Io io{upload(zeros.data(), s.qElems() * 2), upload(zeros.data(), s.kvElems() * 2),
        upload(zeros.data(), s.kvElems() * 2), upload(zeros.data(), s.qElems() * 2), upload(zeros.data(), s.rows() * 4)};
  auto stream = runtime::Stream::create(engine.driver());
  REQUIRE_OK(stream);
  CUstream cs = static_cast<CUstream>(stream->handle());
  for (Route route : {Route::DirectP, Route::Nvfp8, Route::Bf16})
    for (bool causal : {false, true})
      for (bool own_workspace : {false, true}) {
        INFO(toString(route) << " causal " << causal << " caller's workspace " << own_workspace);
        ForwardArgs a = denseForwardArgs(s, io.q.address(), io.k.address(), io.v.address(), io.o.address(),
                                         io.lse.address(), route, causal);
        a.stream = stream->handle();
        runtime::DeviceBuffer workspace;
        if (own_workspace) {
          auto bytes = engine.workspaceSize(a);
          REQUIRE_OK(bytes);
          CHECK(*bytes > 0);
          auto ws = runtime::DeviceBuffer::allocate(engine.driver(), *bytes);
          REQUIRE_OK(ws);
          workspace = std::move(*ws);
        }
        auto run = [&] {
          return own_workspace ? engine.forward(a, workspace.address(), workspace.size()) : engine.forward(a);
        };
        fill(io, s, 1);
        REQUIRE_SUCCESS(run()); // eager: compiles, loads, grows the workspace
        REQUIRE_SUCCESS(stream->synchronize());
        const Result first = read(io, s);

        CUgraph graph = nullptr;
        REQUIRE(api.cuStreamBeginCapture(cs, CU_STREAM_CAPTURE_MODE_GLOBAL) == CUDA_SUCCESS);
        llvm::Error captured = run();
        const CUresult ended = api.cuStreamEndCapture(cs, &graph);
        REQUIRE_SUCCESS(std::move(captured));
        REQUIRE(ended == CUDA_SUCCESS);
        CUgraphExec exec = nullptr;
        REQUIRE(api.cuGraphInstantiateWithFlags(&exec, graph, 0) == CUDA_SUCCESS);

        fill(io, s, 2); // new values in the same buffers
        REQUIRE(api.cuGraphLaunch(exec, cs) == CUDA_SUCCESS);
        REQUIRE_SUCCESS(stream->synchronize());
        const Result replayed = read(io, s);
        REQUIRE_SUCCESS(run());
        REQUIRE_SUCCESS(stream->synchronize());
        const Result eager = read(io, s);
        CHECK(replayed == eager);
        CHECK_FALSE(replayed == first); // the replay did compute on the new values
        api.cuGraphExecDestroy(exec);
        api.cuGraphDestroy(graph);
      }
}
