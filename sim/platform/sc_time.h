// Simulated time: one NPU cycle is one SystemC nanosecond, at a resolution of 1 ps. Everything
// happens on whole cycles except the DRAM arbiter, which decides 1 ps after a cycle starts, once
// every request of that cycle has arrived.
#pragma once

#include <cstdint>
#include <stdexcept>

#include <systemc>

namespace npusim::platform {

inline constexpr std::uint64_t kPsPerCycle = 1000;

// Past this many cycles SystemC's 64-bit picosecond clock would wrap (the schedule loader's
// kMaxCycles keeps well below it).
inline constexpr std::uint64_t kMaxSimulatedCycles = ~std::uint64_t{0} / kPsPerCycle / 2;

inline sc_core::sc_time cycles(std::uint64_t n) {
  if (n > kMaxSimulatedCycles) throw std::overflow_error("simulated time exceeds SystemC's clock");
  return sc_core::sc_time::from_value(n * kPsPerCycle);
}

// The current cycle (the arbiter's +1 ps offset rounds down).
inline std::uint64_t now_cycles() { return sc_core::sc_time_stamp().value() / kPsPerCycle; }

// The delay from now until the start of cycle `at` (which must not be in the past).
inline sc_core::sc_time until_cycle(std::uint64_t at) {
  return sc_core::sc_time::from_value(at * kPsPerCycle - sc_core::sc_time_stamp().value());
}

}  // namespace npusim::platform
