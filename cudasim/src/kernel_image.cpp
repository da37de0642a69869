// A kernel's static shared memory from the symbol table of the binary that holds it
// (kernel_image.h).
#include "kernel_image.h"

#include <elf.h>
#include <fcntl.h>
#include <link.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

namespace cudasim {

namespace {

// The symbols of one loaded binary that matter here: functions by address, TLS objects by
// name (sorted, for prefix searches).
struct SymbolIndex {
  std::map<uintptr_t, std::string> functions;  // runtime address -> name
  std::vector<std::pair<std::string, size_t>> tls;  // name -> size, sorted
};

struct Loaded {
  uintptr_t bias = 0;
  std::string path;
};

// Which loaded binary holds `address`: its load bias and file.
bool find_binary(const void* address, Loaded* out) {
  struct Query {
    uintptr_t address;
    Loaded* out;
    bool found;
  } q{reinterpret_cast<uintptr_t>(address), out, false};
  dl_iterate_phdr(
      [](dl_phdr_info* info, size_t, void* data) -> int {
        auto* q = static_cast<Query*>(data);
        for (int i = 0; i < info->dlpi_phnum; ++i) {
          const ElfW(Phdr)& ph = info->dlpi_phdr[i];
          if (ph.p_type != PT_LOAD) continue;
          const uintptr_t start = info->dlpi_addr + ph.p_vaddr;
          if (q->address >= start && q->address < start + ph.p_memsz) {
            q->out->bias = info->dlpi_addr;
            q->out->path = info->dlpi_name && info->dlpi_name[0] ? info->dlpi_name : "/proc/self/exe";
            q->found = true;
            return 1;
          }
        }
        return 0;
      },
      &q);
  return q.found;
}

std::unique_ptr<SymbolIndex> read_symbols(const Loaded& binary) {
  auto index = std::make_unique<SymbolIndex>();
  const int fd = open(binary.path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return index;
  struct stat st;
  if (fstat(fd, &st) != 0 || static_cast<size_t>(st.st_size) < sizeof(ElfW(Ehdr))) {
    close(fd);
    return index;
  }
  const size_t size = static_cast<size_t>(st.st_size);
  void* map = mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
  close(fd);
  if (map == MAP_FAILED) return index;
  const auto* base = static_cast<const unsigned char*>(map);
  const auto* eh = reinterpret_cast<const ElfW(Ehdr)*>(base);
  const bool valid = std::memcmp(eh->e_ident, ELFMAG, SELFMAG) == 0 && eh->e_shoff + size_t{eh->e_shnum} * sizeof(ElfW(Shdr)) <= size;
  if (valid) {
    const auto* sections = reinterpret_cast<const ElfW(Shdr)*>(base + eh->e_shoff);
    // The full table (local symbols included: kernels in anonymous namespaces and every
    // function-local static are local); the dynamic one when the binary was stripped.
    const ElfW(Shdr)* table = nullptr;
    for (int pass = 0; pass < 2 && !table; ++pass)
      for (unsigned i = 0; i < eh->e_shnum; ++i)
        if (sections[i].sh_type == (pass == 0 ? SHT_SYMTAB : SHT_DYNSYM)) table = &sections[i];
    if (table && table->sh_link < eh->e_shnum && table->sh_offset + table->sh_size <= size) {
      const ElfW(Shdr)& strings = sections[table->sh_link];
      const char* names = reinterpret_cast<const char*>(base + strings.sh_offset);
      const auto* symbols = reinterpret_cast<const ElfW(Sym)*>(base + table->sh_offset);
      const size_t count = table->sh_size / sizeof(ElfW(Sym));
      for (size_t i = 0; i < count; ++i) {
        const ElfW(Sym)& s = symbols[i];
        if (s.st_name >= strings.sh_size) continue;
        const int type = ELF64_ST_TYPE(s.st_info);
        if (type == STT_FUNC && s.st_value != 0) {
          index->functions.emplace(binary.bias + s.st_value, names + s.st_name);
        } else if (type == STT_TLS) {
          index->tls.emplace_back(names + s.st_name, static_cast<size_t>(s.st_size));
        }
      }
      std::sort(index->tls.begin(), index->tls.end());
    }
  }
  munmap(map, size);
  return index;
}

// The prefix the compiler gives the local statics of the function named `name`.
std::string local_static_prefix(const std::string& name) {
  if (name.rfind("_Z", 0) == 0) return "_ZZ" + name.substr(2) + "E";
  return "_ZZ" + std::to_string(name.size()) + name + "E";  // an extern "C" kernel
}

size_t compute(const void* kernel) {
  static std::map<std::string, std::unique_ptr<SymbolIndex>> binaries;  // by path; under the caller's lock
  Loaded binary;
  if (!find_binary(kernel, &binary)) return 0;
  auto& index = binaries[binary.path];
  if (!index) index = read_symbols(binary);
  const auto fn = index->functions.find(reinterpret_cast<uintptr_t>(kernel));
  if (fn == index->functions.end()) return 0;
  const std::string prefix = local_static_prefix(fn->second);
  size_t total = 0;
  for (auto it = std::lower_bound(index->tls.begin(), index->tls.end(), std::make_pair(prefix, size_t{0}));
       it != index->tls.end() && std::string_view(it->first).substr(0, prefix.size()) == prefix; ++it)
    total += it->second;
  return total;
}

}  // namespace

size_t static_shared_bytes(const void* kernel) {
  static std::mutex mutex;
  static std::map<const void*, size_t> known;
  std::lock_guard<std::mutex> lock(mutex);
  auto it = known.find(kernel);
  if (it == known.end()) it = known.emplace(kernel, compute(kernel)).first;
  return it->second;
}

}  // namespace cudasim
