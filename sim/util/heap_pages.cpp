#include "sim/util/heap_pages.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>

// Whether AddressSanitizer is on: gcc defines __SANITIZE_ADDRESS__, clang names it by
// __has_feature.
#if defined(__SANITIZE_ADDRESS__)
#define NPUSIM_UNDER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define NPUSIM_UNDER_ASAN 1
#endif
#endif
#ifndef NPUSIM_UNDER_ASAN
#define NPUSIM_UNDER_ASAN 0
#endif

namespace npusim {
#if !NPUSIM_UNDER_ASAN
namespace {

// The tunables use_huge_pages_for_the_heap sets, as it writes them into GLIBC_TUNABLES.
constexpr const char* kHugePages = "glibc.malloc.hugetlb=1";
constexpr const char* kMmapThreshold = "glibc.malloc.mmap_threshold";
constexpr const char* kTrimThreshold = "glibc.malloc.trim_threshold";
constexpr const char* kKeepBytes = "=4294967296";

}  // namespace
#endif

void use_huge_pages_for_the_heap(char** argv) {
#if NPUSIM_UNDER_ASAN
  // ASan's allocator reads no glibc tunables, and a second start of a sanitized program costs
  // about 0.27 s (its shadow memory and runtime set up again), in every test that runs npusim.
  (void)argv;
  return;
#else
  const char* set = std::getenv("GLIBC_TUNABLES");
  const std::string tunables = set != nullptr ? set : "";
  if (tunables.find("glibc.malloc.hugetlb") != std::string::npos) return;
  std::string value = (tunables.empty() ? "" : tunables + ":") + kHugePages;
  // Freed memory stays in the heap for reuse: no allocation is given its own mapping, and the
  // heap's top is not given back (heap_pages.h).
  for (const char* keep : {kMmapThreshold, kTrimThreshold}) {
    if (tunables.find(keep) == std::string::npos) value += std::string(":") + keep + kKeepBytes;
  }
  // The program's own path, as the kernel (or valgrind, which virtualises this link) knows it.
  char self[4096];
  const ssize_t length = ::readlink("/proc/self/exe", self, sizeof self - 1);
  if (length <= 0 || static_cast<std::size_t>(length) >= sizeof self - 1) return;
  self[length] = '\0';
  if (::setenv("GLIBC_TUNABLES", value.c_str(), 1) != 0) return;
  ::execv(self, argv);  // returns only if it failed: run on as is
#endif
}

void use_huge_pages_in_this_thread() {
  // (Not under AddressSanitizer: its allocator reads no glibc tunables, and a block per thread
  // would only cost it shadow memory and quarantine. Nor where madvise has no MADV_HUGEPAGE.)
#if !NPUSIM_UNDER_ASAN && defined(MADV_HUGEPAGE)
  // Only as use_huge_pages_for_the_heap set it up: huge pages, and an mmap threshold above the
  // block, which then comes from the arena's heap (below it, glibc would map the block apart and
  // unmap it on free, and the advice would go with it).
  static const bool heap_on_huge_pages = [] {
    const char* set = std::getenv("GLIBC_TUNABLES");
    const std::string threshold = std::string(kMmapThreshold) + kKeepBytes;
    return set != nullptr && std::strstr(set, kHugePages) != nullptr &&
           std::strstr(set, threshold.c_str()) != nullptr;
  }();
  if (!heap_on_huge_pages) return;
  // Within a glibc arena's 64 MiB heap; freed, it stays the arena's top (the trim threshold
  // use_huge_pages_for_the_heap sets). parallel_map starts its threads anew each call, and a new
  // thread mostly takes over an ended one's arena: the block then comes from pages already
  // advised, and costs a malloc, an madvise and a free.
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
