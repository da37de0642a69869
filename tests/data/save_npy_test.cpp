// save_npy writes what open_npy (and NumPy) read: every dtype .npy holds, 0-d to 3-d,
// non-contiguous and empty tensors, a 64-byte-aligned data start; bfloat16 is refused.
#include <gtest/gtest.h>

#include <wick/data/npy.h>
#include <wick/tensor/factories.h>

#include "tests/data/temp_dir.h"
#include "tests/support/reference.h"

namespace wick {
namespace {

TEST(SaveNpy, RoundTripsEveryDtypeAndShape) {
  test::TempDir dir;
  const std::vector<DType> dtypes = {DType::Float16, DType::Float32, DType::Float64, DType::Int32,
                                     DType::Int64,   DType::UInt8,   DType::Bool};
  const std::vector<Shape> shapes = {{}, {5}, {2, 3}, {2, 0, 4}, {3, 1, 7}};
  uint64_t seed = 1;
  for (DType dtype : dtypes)
    for (const Shape& shape : shapes) {
      SCOPED_TRACE(std::string(dtype_name(dtype)) + " " + shape_str(shape));
      const Tensor t = test::random(shape, dtype, seed++);
      const std::string path = dir.file("a.npy");
      save_npy(path, t);
      const NpyArray back = open_npy(path);
      EXPECT_EQ(back.dtype(), dtype);
      EXPECT_EQ(back.shape(), std::vector<int64_t>(shape.begin(), shape.end()));
      EXPECT_EQ(test::values(back.load()), test::values(t));
      EXPECT_EQ((std::filesystem::file_size(path) - static_cast<uintmax_t>(back.nbytes())) % 64, 0u);
    }
  // A transposed view is written in its logical (row-major) order.
  const Tensor m = test::random({3, 4}, DType::Float32, 99);
  save_npy(dir.file("t.npy"), m.t());
  EXPECT_EQ(test::values(open_npy(dir.file("t.npy")).load()), test::values(m.t().contiguous()));
  test::expect_error([&] { save_npy(dir.file("b.npy"), zeros({2}, DType::BFloat16)); },
                     {"save_npy", "bfloat16 has no .npy equivalent"});
}

}  // namespace
}  // namespace wick
