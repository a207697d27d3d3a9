// Simulated time: one NPU cycle is one SystemC nanosecond, at a resolution of 1 ps. Everything
// happens on whole cycles except the DRAM arbiter, which decides 1 ps after a cycle starts, once
// every request of that cycle has arrived.
#pragma once

#include <cstdint>

#include <systemc>

namespace npusim::platform {

inline constexpr std::uint64_t kPsPerCycle = 1000;

inline sc_core::sc_time cycles(std::uint64_t n) {
  return sc_core::sc_time::from_value(n * kPsPerCycle);
}

// The current cycle (the arbiter's +1 ps offset rounds down).
inline std::uint64_t now_cycles() { return sc_core::sc_time_stamp().value() / kPsPerCycle; }

// The delay from now until the start of cycle `at` (which must not be in the past).
inline sc_core::sc_time until_cycle(std::uint64_t at) {
  return sc_core::sc_time::from_value(at * kPsPerCycle - sc_core::sc_time_stamp().value());
}

}  // namespace npusim::platform
