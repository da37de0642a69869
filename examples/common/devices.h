#pragma once
// Where an example runs: "--device auto" takes this rank's GPU (LOCAL_RANK modulo the
// number of GPUs) when there is one, else the CPU; "cpu", "cuda" and "cuda:N" are taken
// as given.
#include <string>

#include <wick/tensor/device.h>

namespace wick::examples {

Device pick_device(const std::string& spec);

}  // namespace wick::examples
