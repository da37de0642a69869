// Parsed once per test binary and reused by each of its files (tests/CMakeLists.txt,
// target_precompile_headers): parsing GoogleTest's header and the standard library is about
// 2 of the 8 seconds a typical test file takes to compile with g++, and a test binary has
// up to 30 files, each built twice in CI (the simulator build and the sanitized one).
// Only the bottom layer's Tensor is here, so a test file still has to include the layers
// it uses.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include <wick/tensor/tensor.h>
