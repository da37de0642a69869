#include "examples/common/devices.h"

#include <cstdlib>

#include <wick/tensor/cuda.h>

namespace wick::examples {

Device pick_device(const std::string& spec) {
  if (spec != "auto") return Device(spec);
  int gpus = cuda::device_count();
  if (gpus == 0) return Device::cpu();
  const char* local = std::getenv("LOCAL_RANK");
  int local_rank = local ? std::atoi(local) : 0;
  return Device::cuda(local_rank % gpus);
}

}  // namespace wick::examples
