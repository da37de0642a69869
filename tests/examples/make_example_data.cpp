// Writes small data sets in the examples' file formats for their smoke tests:
//   make_example_data DIR   ->  DIR/mnist/{train,t10k}-{images-idx3,labels-idx1}-ubyte.gz
//                               DIR/cifar10/{data_batch_1..5,test_batch}.bin
//                               DIR/cifar100/{train,test}.bin
//                               DIR/text/fortunes (fortune-file format: texts ending in a line "%")
// Images are class-dependent patterns plus noise, so a model can learn something.
#include <cstdio>
#include <filesystem>
#include <fstream>

#include <wick/data/cifar.h>
#include <wick/data/idx.h>
#include <wick/tensor/elementwise.h>
#include <wick/tensor/factories.h>
#include <wick/tensor/generator.h>

using namespace wick;

namespace {

// n images [n, c, h, w] uint8 whose brightness depends on the label, and their labels.
Dataset patterns(int64_t n, int64_t c, int64_t h, int64_t w, int64_t classes, uint64_t seed) {
  Generator g(seed);
  Tensor labels = randint(0, classes, {n}, DType::Int64, &g);
  Tensor noise = uniform({n, c, h, w}, 0, 60, Options(DType::Float32), &g);
  Tensor level = mul(labels.to(DType::Float32), 190.0 / static_cast<double>(classes)).reshape({n, 1, 1, 1});
  Tensor images = add(noise, level).clamp_(0, 255).to(DType::UInt8);
  return Dataset(images, labels);
}

// Short sentences from a few words, in the format of Debian's fortune files, for examples/gpt.
void write_fortunes(const std::string& path, int count) {
  static const char* const subjects[] = {"The cat", "A wise man", "My computer", "Every program", "The moon"};
  static const char* const verbs[] = {"eats", "dreams of", "compiles", "forgets", "sees"};
  static const char* const objects[] = {"the bugs.", "a quiet night.", "its own tail.", "two fish.", "the answer."};
  std::ofstream out(path, std::ios::binary);
  for (int i = 0; i < count; ++i)
    out << subjects[i % 5] << ' ' << verbs[(i / 5) % 5] << ' ' << objects[(i / 25) % 5] << "\n%\n";
  if (!out) throw std::runtime_error("cannot write " + path);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: make_example_data DIR\n");
    return 2;
  }
  try {
    const std::string dir = argv[1];
    std::filesystem::create_directories(dir + "/mnist");
    std::filesystem::create_directories(dir + "/cifar10");
    std::filesystem::create_directories(dir + "/cifar100");
    std::filesystem::create_directories(dir + "/text");
    write_fortunes(dir + "/text/fortunes", 400);
    for (bool train : {true, false}) {
      Dataset d = patterns(train ? 600 : 200, 1, 28, 28, 10, train ? 1 : 2);
      std::string prefix = dir + "/mnist/" + (train ? "train" : "t10k");
      write_idx(prefix + "-images-idx3-ubyte.gz", d.inputs.reshape({d.size(), 28, 28}), true);
      write_idx(prefix + "-labels-idx1-ubyte.gz", d.targets.to(DType::UInt8), true);
    }
    for (int b = 1; b <= 5; ++b)
      write_cifar(dir + "/cifar10/data_batch_" + std::to_string(b) + ".bin", patterns(40, 3, 32, 32, 10, 10 + b),
                  CifarKind::Cifar10);
    write_cifar(dir + "/cifar10/test_batch.bin", patterns(40, 3, 32, 32, 10, 20), CifarKind::Cifar10);
    write_cifar(dir + "/cifar100/train.bin", patterns(80, 3, 32, 32, 100, 30), CifarKind::Cifar100Fine);
    write_cifar(dir + "/cifar100/test.bin", patterns(40, 3, 32, 32, 100, 31), CifarKind::Cifar100Fine);
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "make_example_data: %s\n", e.what());
    return 1;
  }
}
