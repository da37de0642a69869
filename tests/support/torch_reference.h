#pragma once
// The reference files the tests/*/..._reference.py scripts write from torch: a safetensors
// file of named tensors whose metadata maps each case name to "key=value ..." words.
#include <gtest/gtest.h>

#include <map>
#include <sstream>
#include <string>

#include <wick/nn/state_dict.h>
#include <wick/tensor/safetensors.h>

#include "tests/support/reference.h"

namespace wick::test {

struct TorchReference {
  TensorMap tensors;
  StringMap cases;  // case name -> "key=value ..."
  const Tensor& at(const std::string& case_name, const std::string& key) const { return tensors.at(case_name + "." + key); }
  bool has(const std::string& case_name, const std::string& key) const {
    return tensors.count(case_name + "." + key) != 0;
  }
};

// tests/<path> (relative to the source tree), read once per test binary.
inline const TorchReference& torch_reference(const std::string& path) {
  static std::map<std::string, TorchReference> loaded;
  auto it = loaded.find(path);
  if (it == loaded.end()) {
    TorchReference r;
    r.tensors = load_safetensors(std::string(WICK_SOURCE_DIR) + "/tests/" + path, &r.cases);
    it = loaded.emplace(path, std::move(r)).first;
  }
  return it->second;
}

// The tensors whose names start with `prefix`, under the rest of their names (a torch state
// dict the script stored as "<case>.param.<name>").
inline StateDict with_prefix(const TensorMap& tensors, const std::string& prefix) {
  StateDict dict;
  for (const auto& [key, value] : tensors)
    if (key.rfind(prefix, 0) == 0) dict.insert(key.substr(prefix.size()), value);
  return dict;
}

// "a=1 b=x" -> {a: 1, b: x}
inline std::map<std::string, std::string> case_options(const std::string& words) {
  std::map<std::string, std::string> c;
  std::istringstream in(words);
  for (std::string w; in >> w;) c[w.substr(0, w.find('='))] = w.substr(w.find('=') + 1);
  return c;
}

// Whether `actual` (any device) has `expected`'s shape and values within atol + rtol |expected|.
inline ::testing::AssertionResult tensors_close(const Tensor& actual, const Tensor& expected, double rtol, double atol) {
  if (actual.shape() != expected.shape())
    return ::testing::AssertionFailure() << "shape " << shape_str(actual.shape()) << " vs "
                                         << shape_str(expected.shape());
  return all_close(values(actual.to(Device::cpu())), values(expected.to(Device::cpu())), rtol, atol);
}

}  // namespace wick::test
