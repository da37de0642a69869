#include <wick/autograd/grad_mode.h>

namespace wick {

namespace {
thread_local bool tls_grad_enabled = true;
}

bool grad_enabled() { return tls_grad_enabled; }

NoGradGuard::NoGradGuard() : previous_(tls_grad_enabled) { tls_grad_enabled = false; }
NoGradGuard::~NoGradGuard() { tls_grad_enabled = previous_; }

GradModeGuard::GradModeGuard(bool enabled) : previous_(tls_grad_enabled) { tls_grad_enabled = enabled; }
GradModeGuard::~GradModeGuard() { tls_grad_enabled = previous_; }

}  // namespace wick
