#include "sim/util/heap_pages.h"

#include <sys/auxv.h>
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
// The heap grows by at least this much at a time, so that each growth is whole huge pages, which
// the kernel backs as such (ResNet-50's compile on `default`: 1,780 page faults to about 600).
constexpr const char* kTopPad = "glibc.malloc.top_pad";
constexpr const char* kTopPadBytes = "=33554432";

// The tunables set unless the user set them, with their values and their older names.
struct Tunable {
  const char* name;
  const char* value;
  const char* alias;  // MALLOC_*_=, which a GLIBC_TUNABLES entry would override
};
constexpr Tunable kOurs[] = {{kMmapThreshold, kKeepBytes, "MALLOC_MMAP_THRESHOLD_="},
                             {kTrimThreshold, kKeepBytes, "MALLOC_TRIM_THRESHOLD_="},
                             {kTopPad, kTopPadBytes, "MALLOC_TOP_PAD_="}};

// Whether a variable of the environment begins with `prefix` (NAME=).
bool env_has(char** envp, const char* prefix) {
  for (char** e = envp; *e != nullptr; ++e) {
    if (std::strncmp(*e, prefix, std::strlen(prefix)) == 0) return true;
  }
  return false;
}

}  // namespace
#endif

void use_huge_pages_for_the_heap(int /*argc*/, char** argv, char** envp) {
#if NPUSIM_UNDER_ASAN
  // ASan's allocator reads no glibc tunables, and a second start of a sanitized program costs
  // about 0.27 s (its shadow memory and runtime set up again), in every test that runs npusim.
  (void)argv;
  (void)envp;
  return;
#else
  // Called before the C library and the shared libraries are initialised (a .preinit_array
  // entry), so nothing here allocates or reads the C library's state: the environment is the
  // one the kernel passed, the new one is built in static storage, and what does not fit is
  // left as it is (the program runs on, without the tunables).
  // Not in a setuid, setgid or capability program (glibc drops these tunables there, and the
  // check below would never see them: it would run itself again for ever), nor when started by
  // the dynamic loader by name (ld-linux.so ./npusim ...: /proc/self/exe is then the loader).
  // (AT_BASE, the loader's address, is 0 when the kernel started the loader as the program.)
  if (::getauxval(AT_SECURE) != 0 || ::getauxval(AT_BASE) == 0) return;
  static char value[8192];
  static char* env[4096];
  std::size_t count = 0;
  // Every GLIBC_TUNABLES entry the environment holds (glibc applies each), joined into one.
  const char* tunables[64];
  std::size_t tunable_entries = 0;
  auto user_sets = [&](const char* name) {
    for (std::size_t t = 0; t < tunable_entries; ++t) {
      if (std::strstr(tunables[t], name) != nullptr) return true;
    }
    return false;
  };
  for (char** e = envp; *e != nullptr; ++e) {
    if (std::strncmp(*e, "GLIBC_TUNABLES=", 15) == 0) {
      if (tunable_entries == sizeof tunables / sizeof tunables[0]) return;
      tunables[tunable_entries++] = *e + 15;
      continue;
    }
    if (count + 2 >= sizeof env / sizeof env[0]) return;
    env[count++] = *e;
  }
  if (user_sets("glibc.malloc.hugetlb")) return;
  // GLIBC_TUNABLES=<the user's>:glibc.malloc.hugetlb=1[:mmap_threshold=..][:trim_threshold=..]
  // [:top_pad=..]
  std::size_t at = 0;
  auto append = [&](const char* text) {
    const std::size_t n = std::strlen(text);
    if (at + n + 1 > sizeof value) return false;
    std::memcpy(value + at, text, n);
    at += n;
    value[at] = '\0';
    return true;
  };
  if (!append("GLIBC_TUNABLES=")) return;
  for (std::size_t t = 0; t < tunable_entries; ++t) {
    if (*tunables[t] != '\0' && !(append(tunables[t]) && append(":"))) return;
  }
  if (!append(kHugePages)) return;
  // Freed memory stays in the heap for reuse: no allocation is given its own mapping, and the
  // heap's top is not given back (heap_pages.h); the heap grows in whole huge pages.
  for (const Tunable& t : kOurs) {
    if (user_sets(t.name) || env_has(envp, t.alias)) continue;
    if (!(append(":") && append(t.name) && append(t.value))) return;
  }
  env[count++] = value;
  env[count] = nullptr;
  // The program's own path, as the kernel (or valgrind, which virtualises this link) knows it.
  static char self[4096];
  const ssize_t length = ::readlink("/proc/self/exe", self, sizeof self - 1);
  if (length <= 0 || static_cast<std::size_t>(length) >= sizeof self - 1) return;
  self[length] = '\0';
  ::execve(self, argv, env);  // returns only if it failed: run on as is
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
