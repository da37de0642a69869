#pragma once
// CIFAR-10 and CIFAR-100 in their binary versions. Each record is its label byte(s) and
// a 32 x 32 colour image as 3072 bytes (the red plane, then green, then blue, each row-major):
//   CIFAR-10:  <label 0..9> <3072 bytes>            (data_batch_1..5.bin, test_batch.bin)
//   CIFAR-100: <coarse 0..19> <fine 0..99> <3072 bytes>       (train.bin, test.bin)
#include <string>
#include <vector>

#include <wick/data/dataset.h>

namespace wick {

// Which label a dataset holds: CIFAR-10's, or CIFAR-100's fine (100 classes) or coarse
// (20 superclasses) one.
enum class CifarKind { Cifar10, Cifar100Fine, Cifar100Coarse };

// The records of `files`, in order: images uint8 [N, 3, 32, 32], labels int64 [N]. Files
// may be gzip-compressed. Throws wick::Error with the path and the reason for a missing
// file, a size that is not a multiple of the record size, or a label out of range.
Dataset read_cifar(const std::vector<std::string>& files, CifarKind kind);

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
