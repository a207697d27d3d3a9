#include "sim/util/heap_pages.h"

#include <unistd.h>

#include <cstdlib>
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

}  // namespace npusim
