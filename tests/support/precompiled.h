// Parsed once per test binary and reused by each of its files (tests/CMakeLists.txt,
// target_precompile_headers): GoogleTest's header and the standard library take about
// 4 of the 6 seconds it takes to compile a typical test file, and a test binary has up to
// 30 files, each built twice in CI (the simulator build and the sanitized one).
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
