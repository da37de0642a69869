#include "preemption_support.h"

#include <atomic>
#include <cstdint>
#include <cstring>
#include <mutex>

#include <link.h>
#include <sys/syscall.h>
#include <ucontext.h>
#include <unistd.h>

namespace cudasim {

namespace {

struct CodeRange {
  uintptr_t begin, end;
};
CodeRange g_runtime_code[64];
std::atomic<int> g_runtime_ranges{0};

}  // namespace

void find_runtime_code() {
  static std::once_flag once;
  std::call_once(once, [] {
    int n = 0;
    dl_iterate_phdr(
        [](dl_phdr_info* info, size_t, void* count) {
          int& k = *static_cast<int*>(count);
          const char* name = info->dlpi_name ? info->dlpi_name : "";
          static const char* const kRuntime[] = {"libc.so",    "libm.so",    "libstdc++", "libgcc_s", "ld-linux",
                                                 "libpthread", "libdl.so",   "librt.so",  "libboost", "libgomp",
                                                 "libomp",     "linux-vdso", "libunwind"};
          bool runtime = false;
          for (const char* r : kRuntime) runtime = runtime || std::strstr(name, r) != nullptr;
          if (!runtime) return 0;
          for (int p = 0; p < info->dlpi_phnum && k < 64; ++p) {
            const ElfW(Phdr)& ph = info->dlpi_phdr[p];
            if (ph.p_type != PT_LOAD || !(ph.p_flags & PF_X)) continue;
            const uintptr_t begin = info->dlpi_addr + ph.p_vaddr;
            g_runtime_code[k++] = {begin, begin + ph.p_memsz};
          }
          return 0;
        },
        &n);
    g_runtime_ranges.store(n, std::memory_order_release);
  });
}

bool in_runtime_code(const void* context) {
  const auto* uc = static_cast<const ucontext_t*>(context);
#if defined(__x86_64__)
  const auto pc = static_cast<uintptr_t>(uc->uc_mcontext.gregs[REG_RIP]);
#elif defined(__aarch64__)
  const auto pc = static_cast<uintptr_t>(uc->uc_mcontext.pc);
#else
  const uintptr_t pc = 0;
  (void)uc;
#endif
  const int n = g_runtime_ranges.load(std::memory_order_acquire);
  for (int i = 0; i < n; ++i)
    if (pc >= g_runtime_code[i].begin && pc < g_runtime_code[i].end) return true;
  return false;
}

void PreemptionTimer::set(long ns, bool repeat) {
  if (!created) {
    sigevent ev{};
    ev.sigev_notify = SIGEV_THREAD_ID;
    ev.sigev_signo = SIGURG;
    ev._sigev_un._tid = static_cast<pid_t>(::syscall(SYS_gettid));
    created = timer_create(clock, &ev, &id) == 0;
    if (!created) return;
  }
  if (repeat && ns == interval) return;
  interval = repeat ? ns : 0;
  itimerspec spec{};
  spec.it_value.tv_sec = ns / 1'000'000'000;
  spec.it_value.tv_nsec = ns % 1'000'000'000;
  if (repeat) spec.it_interval = spec.it_value;
  timer_settime(id, 0, &spec, nullptr);
}

}  // namespace cudasim
