#include "sim/util/heap_pages.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>

namespace npusim {

void use_huge_pages_for_the_heap(char** argv) {
  const char* set = std::getenv("GLIBC_TUNABLES");
  const std::string tunables = set != nullptr ? set : "";
  if (tunables.find("glibc.malloc.hugetlb") != std::string::npos) return;
  std::string value = (tunables.empty() ? "" : tunables + ":") + "glibc.malloc.hugetlb=1";
  // Freed memory stays in the heap for reuse: no allocation is given its own mapping, and the
  // heap's top is not given back (heap_pages.h).
  for (const char* keep : {"glibc.malloc.mmap_threshold", "glibc.malloc.trim_threshold"}) {
    if (tunables.find(keep) == std::string::npos) value += std::string(":") + keep + "=4294967296";
  }
  // The program's own path, as the kernel (or valgrind, which virtualises this link) knows it.
  char self[4096];
  const ssize_t length = ::readlink("/proc/self/exe", self, sizeof self - 1);
  if (length <= 0 || static_cast<std::size_t>(length) >= sizeof self - 1) return;
  self[length] = '\0';
  if (::setenv("GLIBC_TUNABLES", value.c_str(), 1) != 0) return;
  ::execv(self, argv);  // returns only if it failed: run on as is
}

void use_huge_pages_in_this_thread() {
  // (Not under AddressSanitizer: its allocator reads no glibc tunables, and a block per thread
  // would only cost it shadow memory and quarantine.)
#if !defined(__SANITIZE_ADDRESS__)
  static const bool heap_on_huge_pages = [] {
    const char* set = std::getenv("GLIBC_TUNABLES");
    return set != nullptr && std::strstr(set, "glibc.malloc.hugetlb=1") != nullptr;
  }();
  thread_local bool done = false;
  if (!heap_on_huge_pages || done) return;
  done = true;
  // A block this size comes from the top of the thread's arena (below the 4 GiB mmap threshold
  // heap_pages.h sets, and within a glibc arena's 64 MiB heap); freed, it stays the arena's top.
  constexpr std::size_t kBlockBytes = std::size_t{32} << 20;
  constexpr std::uintptr_t kHugePageBytes = std::uintptr_t{2} << 20;
  void* block = std::malloc(kBlockBytes);
  if (block == nullptr) return;
  const auto at = reinterpret_cast<std::uintptr_t>(block);
  const std::uintptr_t from = (at + kHugePageBytes - 1) & ~(kHugePageBytes - 1);
  const std::uintptr_t to = (at + kBlockBytes) & ~(kHugePageBytes - 1);
  // NOLINTNEXTLINE(performance-no-int-to-ptr): an address of our own block, page aligned
  if (to > from) ::madvise(reinterpret_cast<void*>(from), to - from, MADV_HUGEPAGE);
  std::free(block);
#endif
}

}  // namespace npusim
