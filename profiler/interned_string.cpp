#include "profiler/interned_string.h"

#include <deque>
#include <mutex>
#include <ostream>
#include <unordered_map>

namespace npusim::profiler {
namespace {

// The pool: a deque never moves its strings, and the index finds one by its text without making a
// std::string of the text first.
struct Pool {
  std::mutex mutex;
  std::deque<std::string> strings;
  std::unordered_map<std::string_view, const std::string*> index;
};

Pool& pool() {
  static Pool* const instance = new Pool;  // never destroyed: strings outlive static destructors
  return *instance;
}

}  // namespace

const std::string* InternedString::intern(std::string_view text) {
  if (text.empty()) return nullptr;
  Pool& p = pool();
  const std::lock_guard<std::mutex> lock(p.mutex);
  if (const auto it = p.index.find(text); it != p.index.end()) return it->second;
  const std::string& pooled = p.strings.emplace_back(text);
  p.index.emplace(pooled, &pooled);
  return &pooled;
}

const std::string& InternedString::empty_string() {
  static const std::string empty;
  return empty;
}

std::ostream& operator<<(std::ostream& out, const InternedString& s) { return out << s.str(); }

void IndexList::reserve(std::size_t count) {
  if (count <= capacity()) return;
  const std::size_t grown = std::max<std::size_t>(count, std::size_t{capacity()} * 2);
  auto* heap = new std::uint32_t[grown];
  std::copy(begin(), end(), heap);
  release();
  storage_.heap.data = heap;
  capacity_ = static_cast<std::uint32_t>(grown);
}

}  // namespace npusim::profiler
