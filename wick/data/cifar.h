#pragma once
// CIFAR-10 and CIFAR-100 in their binary versions. Each record is its label byte(s) and
// a 32 x 32 colour image as 3072 bytes (the red plane, then green, then blue, each row-major):
//   CIFAR-10:  <label 0..9> <3072 bytes>            (data_batch_1..5.bin, test_batch.bin)
//   CIFAR-100: <coarse 0..19> <fine 0..99> <3072 bytes>       (train.bin, test.bin)
#include <cstdint>
#include <string>
#include <vector>

#include <wick/data/dataset.h>

namespace wick {

// Which label a dataset holds: CIFAR-10's, or CIFAR-100's fine (100 classes) or coarse
// (20 superclasses) one.
enum class CifarKind { Cifar10, Cifar100Fine, Cifar100Coarse };

// The most records one file of the data sets holds: CIFAR-100's train.bin (CIFAR-10's files
// hold 10,000 each).
inline constexpr int64_t kCifarMaxRecordsPerFile = 50000;

// The records of `files`, in order: images uint8 [N, 3, 32, 32], labels int64 [N]. Files
// may be gzip-compressed. Throws wick::Error with the path and the reason for a missing
// file, a size that is not a multiple of the record size, more than
// `max_records_per_file` records in a file, or a label out of range. A CIFAR file has no
// header, so the record limit is what bounds a gzip file's inflation: a gzip bomb is
// refused once it has inflated past that many records.
Dataset read_cifar(const std::vector<std::string>& files, CifarKind kind,
                   int64_t max_records_per_file = kCifarMaxRecordsPerFile);

// CIFAR-10 from `dir`, which is the folder cifar-10-batches-bin or its parent:
// data_batch_1..5.bin (50000 images) when `train`, test_batch.bin (10000) otherwise.
Dataset load_cifar10(const std::string& dir, bool train);
// CIFAR-100 from `dir`, which is the folder cifar-100-binary or its parent: train.bin or
// test.bin, with the fine labels unless `coarse`.
Dataset load_cifar100(const std::string& dir, bool train, bool coarse = false);

// Writes `data` (images uint8 [N, 3, 32, 32]) as one CIFAR file of `kind`, atomically.
// Targets are int64 (or any integer type) [N], the label of `kind`; the other CIFAR-100
// label byte is written as 0. For CIFAR-100, targets [N, 2] give both (coarse, fine).
void write_cifar(const std::string& path, const Dataset& data, CifarKind kind);

}  // namespace wick
