// A kernel's static shared memory from the symbol table of the binary that holds it, and the
// probe of the __shared__ variables its device functions declare (kernel_image.h).
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

// What cuda_runtime.h's __shared__ adds to each variable's mangled name (an ABI tag).
constexpr std::string_view kSharedTag = "B14cudasim_shared";

struct SharedVariable {
  std::string name;
  size_t size = 0;
  size_t offset = 0;         // in the binary's TLS segment
  bool of_a_kernel = false;  // declared in a kernel launched so far: no probe fills it
};

// The symbols of one loaded binary that matter here: functions by address, __shared__
// variables by name (sorted, for prefix searches).
struct SymbolIndex {
  std::map<uintptr_t, std::string> functions;  // runtime address -> name
  std::vector<SharedVariable> shared;
};

struct Loaded {
  uintptr_t bias = 0;
  std::string path;
  void* tls = nullptr;  // the calling thread's instance of the binary's TLS segment
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
            q->out->tls = info->dlpi_tls_data;
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
  const bool valid =
      std::memcmp(eh->e_ident, ELFMAG, SELFMAG) == 0 && eh->e_shoff + size_t{eh->e_shnum} * sizeof(ElfW(Shdr)) <= size;
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
        } else if (type == STT_TLS && std::string_view(names + s.st_name).find(kSharedTag) != std::string_view::npos) {
          index->shared.push_back({names + s.st_name, static_cast<size_t>(s.st_size), static_cast<size_t>(s.st_value)});
        }
      }
      std::sort(index->shared.begin(), index->shared.end(),
                [](const SharedVariable& a, const SharedVariable& b) { return a.name < b.name; });
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

struct Images {
  std::mutex mutex;
  std::map<std::string, std::unique_ptr<SymbolIndex>> binaries;  // by path
  std::map<const void*, size_t> own;                             // a kernel's own __shared__ bytes
  std::map<const void*, size_t> called;  // bytes of other functions' __shared__ it wrote, once probed
};

Images& images() {
  static Images* i = new Images;  // stream workers may launch during static destruction
  return *i;
}

// Under the images mutex: the index of the binary that holds `kernel` (nullptr when none)
// and the prefix of the kernel's own local statics.
SymbolIndex* index_of(const void* kernel, Loaded* binary, std::string* prefix) {
  if (!find_binary(kernel, binary)) return nullptr;
  auto& index = images().binaries[binary->path];
  if (!index) index = read_symbols(*binary);
  const auto fn = index->functions.find(reinterpret_cast<uintptr_t>(kernel));
  if (fn == index->functions.end()) return nullptr;
  *prefix = local_static_prefix(fn->second);
  return index.get();
}

bool declared_in(const SharedVariable& v, const std::string& prefix) {
  return std::string_view(v.name).substr(0, prefix.size()) == prefix;
}

size_t own_bytes(const void* kernel) {
  Loaded binary;
  std::string prefix;
  SymbolIndex* index = index_of(kernel, &binary, &prefix);
  if (!index) return 0;
  size_t total = 0;
  for (auto it = std::lower_bound(index->shared.begin(), index->shared.end(), prefix,
                                  [](const SharedVariable&v, const std::string&p) { return v.name < p; });
       it != index->shared.end() && declared_in(*it, prefix); ++it) {
    total += it->size;
    it->of_a_kernel = true;
  }
  return total;
}

// Uninitialised shared memory holds garbage on a GPU, so the probe's pattern is a legal
// initial value; it varies by byte so that no common value written (0, -1) matches it.
unsigned char pattern(size_t i) { return static_cast<unsigned char>(0xa5u + 0x3bu * i); }

}  // namespace

size_t static_shared_bytes(const void* kernel) {
  Images& im = images();
  std::lock_guard<std::mutex> lock(im.mutex);
  auto it = im.own.find(kernel);
  if (it == im.own.end()) it = im.own.emplace(kernel, own_bytes(kernel)).first;
  const auto called = im.called.find(kernel);
  return it->second + (called == im.called.end() ? 0 : called->second);
}

bool shared_variables_span(const void* kernel, const unsigned char** lo, const unsigned char** hi) {
  Images& im = images();
  std::lock_guard<std::mutex> lock(im.mutex);
  Loaded binary;
  std::string prefix;
  SymbolIndex* index = index_of(kernel, &binary, &prefix);
  if (!index || !binary.tls || index->shared.empty()) return false;
  size_t first = SIZE_MAX, end = 0;
  for (const SharedVariable& v : index->shared) {
    first = std::min(first, v.offset);
    end = std::max(end, v.offset + v.size);
  }
  *lo = static_cast<const unsigned char*>(binary.tls) + first;
  *hi = static_cast<const unsigned char*>(binary.tls) + end;
  return true;
}

bool SharedUseProbe::begin(const void* kernel) {
  Images& im = images();
  std::lock_guard<std::mutex> lock(im.mutex);
  if (im.called.count(kernel)) return false;
  im.called.emplace(kernel, 0);  // probed once, by this block
  Loaded binary;
  std::string prefix;
  SymbolIndex* index = index_of(kernel, &binary, &prefix);
  if (!index || !binary.tls) return false;
  kernel_ = kernel;
  variables_.clear();
  for (const SharedVariable& v : index->shared) {
    if (v.of_a_kernel || v.size == 0 || declared_in(v, prefix)) continue;
    unsigned char* p = static_cast<unsigned char*>(binary.tls) + v.offset;
    for (size_t i = 0; i < v.size; ++i) p[i] = pattern(i);
    variables_.emplace_back(p, v.size);
  }
  return !variables_.empty();
}

size_t SharedUseProbe::end() {
  size_t written = 0;
  for (const auto& [p, size] : variables_) {
    for (size_t i = 0; i < size; ++i) {
      if (p[i] != pattern(i)) {
        written += size;
        break;
      }
    }
  }
  Images& im = images();
  std::lock_guard<std::mutex> lock(im.mutex);
  im.called[kernel_] = written;
  return written;
}

}  // namespace cudasim
