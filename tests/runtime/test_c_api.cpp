// The C API without a GPU: engine creation fails with the driver's message instead of crashing,
// NULL arguments are errors, and messages are per call.
#include "fa4jit/runtime/fa4jit_c.h"

#include <catch2/catch.hpp>

#include <string>

TEST_CASE("C API reports a missing driver or device as an error with a message", "[runtime][c-api]") {
  fa4jit_engine *e = reinterpret_cast<fa4jit_engine *>(0x1);
  const int rc = fa4jit_engine_create(0, &e);
  if (rc == FA4JIT_OK) {
    // A machine with a GPU: the engine must be usable and destroyable.
    REQUIRE(e != nullptr);
    CHECK(std::string(fa4jit_last_error()).empty());
    fa4jit_engine_destroy(e);
    return;
  }
  CHECK(rc == FA4JIT_ERROR);
  CHECK(e == nullptr);
  const std::string msg = fa4jit_last_error();
  CHECK((msg.find("no CUDA driver") != std::string::npos || msg.find("no CUDA device") != std::string::npos));
}

TEST_CASE("C API rejects NULL arguments and unknown routes", "[runtime][c-api]") {
  CHECK(fa4jit_engine_create(0, nullptr) == FA4JIT_ERROR);
  CHECK(std::string(fa4jit_last_error()).find("out is NULL") != std::string::npos);
  CHECK(fa4jit_forward(nullptr, nullptr) == FA4JIT_ERROR);
  CHECK(std::string(fa4jit_last_error()).find("must not be NULL") != std::string::npos);
  CHECK(std::string(fa4jit_version()) == "0.5.0");
}
