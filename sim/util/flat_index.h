// An open-addressing hash index for millions of entries: two flat arrays, no node per entry (a
// std::unordered_map allocates one per entry, which dominated loading a large schedule). It maps
// 64-bit hashes to 32-bit values, such as indices into the caller's array, and leaves telling
// apart keys whose hashes collide to the caller.
#pragma once

#include <cstdint>
#include <cstring>
#include <functional>
#include <string_view>
#include <vector>

namespace npusim {

// A hash for FlatIndex keys that are mostly short names ("b1234", "DI56"): up to 16 bytes are
// mixed from two word loads (about a fifth of std::hash's instructions there), longer ones go to
// std::hash. Not seeded, as std::hash is not; for in-memory indexes only, never persisted.
inline std::uint64_t hash_name(std::string_view s) {
  if (s.size() > 16) return std::hash<std::string_view>()(s);
  std::uint64_t a = 0, b = 0;
  std::memcpy(&a, s.data(), s.size() < 8 ? s.size() : 8);
  if (s.size() > 8) std::memcpy(&b, s.data() + 8, s.size() - 8);
  std::uint64_t h = (a * 0x9E3779B97F4A7C15ull) ^ (b * 0xC2B2AE3D27D4EB4Full) ^ s.size();
  h ^= h >> 29;
  h *= 0xBF58476D1CE4E5B9ull;
  return h ^ (h >> 32);
}

class FlatIndex {
 public:
  // Room for `entries` without growing: adding more than that is a logic error.
  explicit FlatIndex(std::size_t entries) {
    std::size_t capacity = 16;
    while (capacity < entries * 2) capacity *= 2;
    hashes_.assign(capacity, 0);
    values_.resize(capacity);
    mask_ = capacity - 1;
  }

  // The first value added under `hash` for which `same(value)` holds, or nullptr.
  template <typename Same>
  const std::uint32_t* find(std::uint64_t hash, Same same) const {
    hash = nonzero(hash);
    for (std::size_t at = slot(hash);; at = (at + 1) & mask_) {
      if (hashes_[at] == 0) return nullptr;
      if (hashes_[at] == hash && same(values_[at])) return &values_[at];
    }
  }

  void add(std::uint64_t hash, std::uint32_t value) {
    hash = nonzero(hash);
    std::size_t at = slot(hash);
    while (hashes_[at] != 0) at = (at + 1) & mask_;
    hashes_[at] = hash;
    values_[at] = value;
  }

 private:
  static std::uint64_t nonzero(std::uint64_t hash) { return hash == 0 ? 1 : hash; }
  // Fibonacci hashing spreads keys that differ only in low bits (consecutive ids).
  std::size_t slot(std::uint64_t hash) const {
    return static_cast<std::size_t>((hash * 0x9E3779B97F4A7C15ull) >> 32) & mask_;
  }

  std::vector<std::uint64_t> hashes_;  // 0: an empty slot
  std::vector<std::uint32_t> values_;
  std::size_t mask_ = 0;
};

}  // namespace npusim
