#include <wick/train/replica_sync.h>

#include <wick/autograd/grad_mode.h>
#include <wick/tensor/elementwise.h>

namespace wick {

void divide_gradients(const std::vector<Variable>& params, double count) {
  if (count <= 0) return;
  NoGradGuard no_grad;
  for (const Variable& p : params)
    if (p.grad().defined()) p.grad().data().mul_(1.0 / count);
}

}  // namespace wick
