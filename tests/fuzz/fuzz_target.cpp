// One libFuzzer target: NPUSIM_FUZZ_ENTRY names its entry function (fuzz_entries.h), set per
// executable by tests/fuzz/CMakeLists.txt. Rejections are handled inside the entry; any other
// exception that escapes is a finding, reported with its message and turned into a crash so that
// libFuzzer saves the input.
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <typeinfo>

#include "tests/fuzz/fuzz_entries.h"

#ifndef NPUSIM_FUZZ_ENTRY
#error "define NPUSIM_FUZZ_ENTRY to an entry function of fuzz_entries.h"
#endif

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  try {
    return npusim::fuzz::NPUSIM_FUZZ_ENTRY(data, size);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "npusim fuzz: unexpected %s: %s\n", typeid(e).name(), e.what());
  } catch (...) {
    std::fprintf(stderr, "npusim fuzz: unexpected non-std exception\n");
  }
  std::abort();
}
