#include <wick/data/cifar.h>

#include <cstring>
#include <optional>
#include <string>

#include <wick/data/file_io.h>
#include <wick/tensor/out_of_memory.h>

namespace wick {

namespace {

constexpr int64_t kImageBytes = 3 * 32 * 32;
constexpr int64_t kCifar10RecordsPerFile = 10000;  // each of data_batch_1..5.bin and test_batch.bin

int64_t label_bytes(CifarKind kind) { return kind == CifarKind::Cifar10 ? 1 : 2; }

int64_t num_classes(CifarKind kind) {
  switch (kind) {
    case CifarKind::Cifar10: return 10;
    case CifarKind::Cifar100Fine: return 100;
    default: return 20;
  }
}

const char* kind_name(CifarKind kind) {
  switch (kind) {
    case CifarKind::Cifar10: return "CIFAR-10";
    case CifarKind::Cifar100Fine: return "CIFAR-100 (fine labels)";
    default: return "CIFAR-100 (coarse labels)";
  }
}

// The folder `sub` inside `dir` when it exists, else `dir` itself.
std::string batches_dir(const std::string& dir, const std::string& sub, const std::string& probe) {
  std::string inside = dir + "/" + sub;
  return file_exists(inside + "/" + probe) ? inside : dir;
}

}  // namespace

Dataset read_cifar(const std::vector<std::string>& files, CifarKind kind, int64_t max_records_per_file) {
  WICK_CHECK(!files.empty(), "read_cifar: no files given");
  const int64_t record = label_bytes(kind) + kImageBytes;
  WICK_CHECK(max_records_per_file >= 0 && max_records_per_file <= (int64_t{1} << 40) / record,
             "read_cifar: max_records_per_file ", max_records_per_file, " is outside [0, 2^40 bytes / ", record, "]");
  const uint64_t max_file_bytes = static_cast<uint64_t>(max_records_per_file * record);
  const std::string most = "that " + std::to_string(max_records_per_file) + " " + kind_name(kind) +
                           " records take (read_cifar's max_records_per_file)";
  const ContentBoundFn bound = [&](const uint8_t*, size_t) { return std::optional<ContentBound>({max_file_bytes, most}); };
  // Offset of the label this kind uses within a record: CIFAR-100 stores coarse, then fine.
  const int64_t label_at = kind == CifarKind::Cifar100Fine ? 1 : 0;
  std::vector<std::vector<uint8_t>> contents;
  int64_t total = 0;
  for (const std::string& path : files) {
    WICK_CHECK(file_exists(path), "read_cifar: missing file ", path);
    contents.push_back(read_file_bytes(path, "read_cifar", bound));
    const int64_t size = static_cast<int64_t>(contents.back().size());
    WICK_CHECK(size % record == 0, "read_cifar: ", path, ": size ", size, " bytes is not a multiple of the ",
               kind_name(kind), " record size ", record, " (truncated or the wrong kind of file?)");
    WICK_CHECK(size / record <= max_records_per_file, "read_cifar: ", path, ": ", size / record, " ", kind_name(kind),
               " records, more than max_records_per_file (", max_records_per_file, ")");
    total += size / record;
  }
  // The images and labels of every file, one allocation each (named with the files).
  std::string names;
  for (const std::string& path : files) names += (names.empty() ? "" : ", ") + path;
  const auto allocate = [&](Shape shape, DType dtype, const char* what) {
    const uint64_t bytes = static_cast<uint64_t>(numel_of(shape)) * element_size(dtype);
    return reader_allocate("read_cifar", names, bytes,
                           std::string(what) + " of " + std::to_string(total) + " records (" + shape_str(shape) + " " +
                               dtype_name(dtype) + ")",
                           [&] { return empty(shape, dtype); });
  };
  Tensor images = allocate({total, 3, 32, 32}, DType::UInt8, "the images");
  Tensor labels = allocate({total}, DType::Int64, "the labels");
  uint8_t* img = static_cast<uint8_t*>(images.data_ptr());
  int64_t* lab = labels.data<int64_t>();
  int64_t at = 0;
  for (size_t f = 0; f < files.size(); ++f) {
    const std::vector<uint8_t>& bytes = contents[f];
    const int64_t n = static_cast<int64_t>(bytes.size()) / record;
    for (int64_t i = 0; i < n; ++i, ++at) {
      const uint8_t* rec = bytes.data() + i * record;
      const int64_t label = rec[label_at];
      WICK_CHECK(label < num_classes(kind), "read_cifar: ", files[f], ": record ", i, " has label ", label,
                 ", out of range for ", kind_name(kind), " (", num_classes(kind), " classes)");
      lab[at] = label;
      std::memcpy(img + at * kImageBytes, rec + label_bytes(kind), kImageBytes);
    }
  }
  return Dataset(images, labels);
}

Dataset load_cifar10(const std::string& dir, bool train) {
  const std::string base = batches_dir(dir, "cifar-10-batches-bin", train ? "data_batch_1.bin" : "test_batch.bin");
  std::vector<std::string> files;
  if (train) {
    for (int i = 1; i <= 5; ++i) files.push_back(base + "/data_batch_" + std::to_string(i) + ".bin");
  } else {
    files.push_back(base + "/test_batch.bin");
  }
  return read_cifar(files, CifarKind::Cifar10, kCifar10RecordsPerFile);
}

Dataset load_cifar100(const std::string& dir, bool train, bool coarse) {
  const std::string name = train ? "train.bin" : "test.bin";
  const std::string base = batches_dir(dir, "cifar-100-binary", name);
  return read_cifar({base + "/" + name}, coarse ? CifarKind::Cifar100Coarse : CifarKind::Cifar100Fine,
                    train ? 50000 : 10000);
}

void write_cifar(const std::string& path, const Dataset& data, CifarKind kind) {
  const Tensor& images = data.inputs;
  const Tensor& targets = data.targets;
  WICK_CHECK(images.defined() && images.dtype() == DType::UInt8 && images.dim() == 4 && images.size(1) == 3 &&
                 images.size(2) == 32 && images.size(3) == 32,
             "write_cifar: ", path, ": images must be uint8 [N, 3, 32, 32], got ",
             images.defined() ? dtype_name(images.dtype()) : "undefined", " ", shape_str(images.shape()));
  const int64_t n = images.size(0);
  const bool both = kind != CifarKind::Cifar10 && targets.dim() == 2 && targets.size(1) == 2;
  WICK_CHECK(targets.defined() && is_integral(targets.dtype()) && targets.size(0) == n && (targets.dim() == 1 || both),
             "write_cifar: ", path, ": targets must be integers [", n, "]",
             kind == CifarKind::Cifar10 ? "" : " (or [N, 2] coarse and fine)", ", got ",
             targets.defined() ? dtype_name(targets.dtype()) : "undefined", " ", shape_str(targets.shape()));
  const int64_t record = label_bytes(kind) + kImageBytes;
  Tensor pixels = images.cpu().contiguous();
  std::vector<int64_t> labels = targets.to_vector<int64_t>();
  std::vector<uint8_t> bytes(static_cast<size_t>(n * record));
  for (int64_t i = 0; i < n; ++i) {
    uint8_t* rec = bytes.data() + i * record;
    auto put = [&](int64_t slot, int64_t value, int64_t classes) {
      WICK_CHECK(0 <= value && value < classes, "write_cifar: ", path, ": example ", i, " has label ", value,
                 ", out of range for ", classes, " classes");
      rec[slot] = static_cast<uint8_t>(value);
    };
    if (kind == CifarKind::Cifar10) {
      put(0, labels[i], 10);
    } else if (both) {
      put(0, labels[2 * i], 20);
      put(1, labels[2 * i + 1], 100);
    } else {
      put(kind == CifarKind::Cifar100Fine ? 1 : 0, labels[i], num_classes(kind));
    }
    std::memcpy(rec + label_bytes(kind), static_cast<const uint8_t*>(pixels.data_ptr()) + i * kImageBytes, kImageBytes);
  }
  write_file_atomic(path, bytes, /*gzip=*/false, "write_cifar");
}

}  // namespace wick
