// GoogleTest main for binaries that link SystemC: libsystemc.so has a main() of its own, so the
// test binaries must bring theirs in an object file rather than from libgtest_main.a.
#include <gtest/gtest.h>

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
