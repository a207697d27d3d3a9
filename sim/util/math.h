// Unsigned 64-bit arithmetic on sizes: a ceiling division that cannot overflow, and products
// and sums that throw instead of wrapping. Sizes come from input files, so a wrapped product is
// a wrong answer, not a crash: use checked_mul / checked_add where the operands are not already
// bounded.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>

namespace npusim {

// ceil(a / b) for b > 0. Never overflows (unlike (a + b - 1) / b near 2^64).
constexpr std::uint64_t ceil_div(std::uint64_t a, std::uint64_t b) {
  return a / b + (a % b != 0 ? 1 : 0);
}

// a * b; throws std::overflow_error when the product does not fit 64 bits.
inline std::uint64_t checked_mul(std::uint64_t a, std::uint64_t b) {
  std::uint64_t product = 0;
  if (__builtin_mul_overflow(a, b, &product)) {
    throw std::overflow_error("64-bit overflow: " + std::to_string(a) + " * " + std::to_string(b));
  }
  return product;
}

// a + b; throws std::overflow_error when the sum does not fit 64 bits.
inline std::uint64_t checked_add(std::uint64_t a, std::uint64_t b) {
  std::uint64_t sum = 0;
  if (__builtin_add_overflow(a, b, &sum)) {
    throw std::overflow_error("64-bit overflow: " + std::to_string(a) + " + " + std::to_string(b));
  }
  return sum;
}

// a * b and a + b, clamped at 2^64 - 1: for figures that must never reject an input that the
// cycle counts accept (energy; docs/cost-model.md#energy).
inline std::uint64_t saturating_mul(std::uint64_t a, std::uint64_t b) {
  std::uint64_t product = 0;
  return __builtin_mul_overflow(a, b, &product) ? ~std::uint64_t{0} : product;
}
inline std::uint64_t saturating_add(std::uint64_t a, std::uint64_t b) {
  std::uint64_t sum = 0;
  return __builtin_add_overflow(a, b, &sum) ? ~std::uint64_t{0} : sum;
}

}  // namespace npusim
