#pragma once
// llvm::Expected and llvm::Error in Catch assertions: the error's text becomes the failure
// message (Catch cannot decompose these move-only, explicitly-bool types itself).
#include "llvm/Support/Error.h"

#include <catch2/catch.hpp>

// An Expected<T> that must hold a value.
#define REQUIRE_OK(e)                                                                              \
  do {                                                                                             \
    if (!(e))                                                                                      \
      FAIL(llvm::toString((e).takeError()));                                                       \
  } while (0)
// An Expected<T> that must hold an error (left in place for the test to inspect).
#define REQUIRE_ERR(e) REQUIRE_FALSE(static_cast<bool>(e))
// An expression yielding llvm::Error that must be success.
#define REQUIRE_SUCCESS(expr)                                                                      \
  do {                                                                                             \
    llvm::Error check_err_ = (expr);                                                               \
    if (check_err_)                                                                                \
      FAIL(llvm::toString(std::move(check_err_)));                                                \
  } while (0)
