#pragma once
// Shapes and strides (in elements), and the arithmetic on them shared by every op.
#include <cstdint>
#include <initializer_list>
#include <ostream>
#include <string>
#include <vector>

namespace wick {

using Shape = std::vector<int64_t>;

int64_t numel_of(const Shape& shape);                 // product of sizes; 1 for a 0-d shape
Shape contiguous_strides(const Shape& shape);         // row-major strides
std::string shape_str(const Shape& shape);            // "[2, 3]"
std::ostream& operator<<(std::ostream& os, const Shape& s);

// Wraps a possibly negative dim into [0, ndim); throws naming `op` when out of range.
int64_t wrap_dim(const char* op, int64_t dim, int64_t ndim);

// The shape two shapes broadcast to (numpy rules); throws naming `op` when they don't.
Shape broadcast_shapes(const char* op, const Shape& a, const Shape& b);

}  // namespace wick
