// Compact per-command storage for schedules of millions of commands: a string stored once per
// distinct value (layers, locations and op types repeat across thousands of commands) and a list
// of command indices that keeps short lists inline (most commands have one to three dependencies).
// The schedule, the compiler and the profiler's workload use both.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <functional>
#include <initializer_list>
#include <iosfwd>
#include <string>
#include <string_view>
#include <vector>

namespace npusim::profiler {

// An immutable string, interned in a process-wide pool that is never emptied: 8 bytes, copied
// and compared for equality as a pointer. Order is by value, never by pool position, so sorted
// outputs do not depend on which string was seen first. Thread-safe.
class InternedString {
 public:
  InternedString() = default;
  explicit InternedString(std::string_view text) : text_(intern(text)) {}
  InternedString(const std::string& text) : InternedString(std::string_view(text)) {}  // NOLINT
  InternedString(const char* text) : InternedString(std::string_view(text)) {}         // NOLINT

  const std::string& str() const { return text_ ? *text_ : empty_string(); }
  operator const std::string&() const { return str(); }  // NOLINT(google-explicit-constructor)
  operator std::string_view() const { return str(); }    // NOLINT(google-explicit-constructor)
  const char* c_str() const { return str().c_str(); }
  bool empty() const { return text_ == nullptr; }
  std::size_t size() const { return str().size(); }

  friend bool operator==(const InternedString& a, const InternedString& b) {
    return a.text_ == b.text_;
  }
  friend bool operator!=(const InternedString& a, const InternedString& b) { return !(a == b); }
  friend bool operator<(const InternedString& a, const InternedString& b) {
    return a.text_ != b.text_ && a.str() < b.str();
  }
  friend bool operator==(const InternedString& a, const std::string& b) { return a.str() == b; }
  friend bool operator==(const std::string& a, const InternedString& b) { return a == b.str(); }
  friend bool operator!=(const InternedString& a, const std::string& b) { return a.str() != b; }
  friend bool operator!=(const std::string& a, const InternedString& b) { return a != b.str(); }
  friend bool operator==(const InternedString& a, const char* b) { return a.str() == b; }
  friend bool operator!=(const InternedString& a, const char* b) { return a.str() != b; }
  friend std::string operator+(const std::string& a, const InternedString& b) {
    return a + b.str();
  }
  friend std::string operator+(const InternedString& a, const std::string& b) {
    return a.str() + b;
  }
  friend std::string operator+(const char* a, const InternedString& b) { return a + b.str(); }
  friend std::string operator+(const InternedString& a, const char* b) { return a.str() + b; }

 private:
  // The pooled copy of `text`; nullptr for the empty string.
  static const std::string* intern(std::string_view text);
  static const std::string& empty_string();
  const std::string* text_ = nullptr;
};

std::ostream& operator<<(std::ostream& out, const InternedString& s);

// A growable list of 32-bit indices (dependencies, devices): up to kInline of them inside its 16
// bytes (a std::vector takes 24 and a heap block of at least 32), more on the heap. The std::vector
// subset the schedule's builders use.
class IndexList {
 public:
  using value_type = std::uint32_t;
  using iterator = std::uint32_t*;
  using const_iterator = const std::uint32_t*;
  static constexpr std::uint32_t kInline = 2;

  IndexList() = default;
  IndexList(std::initializer_list<std::uint32_t> values) { assign(values.begin(), values.end()); }
  IndexList(const std::vector<std::uint32_t>& values) {  // NOLINT(google-explicit-constructor)
    assign(values.data(), values.data() + values.size());
  }
  IndexList(const IndexList& other) { assign(other.begin(), other.end()); }
  IndexList(IndexList&& other) noexcept { take(other); }
  IndexList& operator=(const IndexList& other) {
    if (this != &other) assign(other.begin(), other.end());
    return *this;
  }
  IndexList& operator=(IndexList&& other) noexcept {
    if (this != &other) {
      release();
      take(other);
    }
    return *this;
  }
  IndexList& operator=(const std::vector<std::uint32_t>& values) {
    assign(values.data(), values.data() + values.size());
    return *this;
  }
  IndexList& operator=(std::initializer_list<std::uint32_t> values) {
    assign(values.begin(), values.end());
    return *this;
  }
  ~IndexList() { release(); }

  std::uint32_t* data() { return on_heap() ? storage_.heap.data : storage_.inline_values; }
  const std::uint32_t* data() const {
    return on_heap() ? storage_.heap.data : storage_.inline_values;
  }
  iterator begin() { return data(); }
  iterator end() { return data() + size_; }
  const_iterator begin() const { return data(); }
  const_iterator end() const { return data() + size_; }
  std::size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  std::uint32_t& operator[](std::size_t i) { return data()[i]; }
  std::uint32_t operator[](std::size_t i) const { return data()[i]; }
  std::uint32_t& back() { return data()[size_ - 1]; }
  std::uint32_t back() const { return data()[size_ - 1]; }
  std::vector<std::uint32_t> to_vector() const { return {begin(), end()}; }

  void clear() { size_ = 0; }
  void reserve(std::size_t count);
  void push_back(std::uint32_t value) {
    if (size_ == capacity()) reserve(std::size_t{size_} * 2);
    data()[size_++] = value;
  }
  void pop_back() { --size_; }
  // Inserts [first, last) before `at`; returns where the first of them went.
  template <typename It>
  iterator insert(const_iterator at, It first, It last) {
    const auto offset = static_cast<std::size_t>(at - begin());
    const auto count = static_cast<std::size_t>(std::distance(first, last));
    reserve(size_ + count);
    std::uint32_t* p = data() + offset;
    std::memmove(p + count, p, (size_ - offset) * sizeof(std::uint32_t));
    std::copy(first, last, p);
    size_ += static_cast<std::uint32_t>(count);
    return p;
  }
  iterator insert(const_iterator at, std::uint32_t value) { return insert(at, &value, &value + 1); }
  iterator erase(const_iterator first, const_iterator last) {
    std::uint32_t* p = begin() + (first - begin());
    const auto count = static_cast<std::size_t>(last - first);
    std::memmove(p, p + count,
                 static_cast<std::size_t>(end() - (p + count)) * sizeof(std::uint32_t));
    size_ -= static_cast<std::uint32_t>(count);
    return p;
  }
  iterator erase(const_iterator at) { return erase(at, at + 1); }

  friend bool operator==(const IndexList& a, const IndexList& b) {
    return std::equal(a.begin(), a.end(), b.begin(), b.end());
  }
  friend bool operator!=(const IndexList& a, const IndexList& b) { return !(a == b); }
  friend bool operator==(const IndexList& a, const std::vector<std::uint32_t>& b) {
    return std::equal(a.begin(), a.end(), b.begin(), b.end());
  }
  friend bool operator==(const std::vector<std::uint32_t>& a, const IndexList& b) { return b == a; }

 private:
  bool on_heap() const { return capacity_ > kInline; }
  std::uint32_t capacity() const { return on_heap() ? capacity_ : kInline; }
  void assign(const std::uint32_t* first, const std::uint32_t* last) {
    size_ = 0;
    insert(end(), first, last);
  }
  void take(IndexList& other) {
    size_ = other.size_;
    capacity_ = other.capacity_;
    storage_ = other.storage_;
    other.size_ = 0;
    other.capacity_ = 0;
  }
  void release() {
    if (on_heap()) delete[] storage_.heap.data;
    capacity_ = 0;
  }

  // capacity_ is 0 while the values are inline (kInline of them fit), else the heap's capacity.
  union Storage {
    std::uint32_t inline_values[kInline];
    struct {
      std::uint32_t* data;
    } heap;
  };
  static_assert(sizeof(Storage) == 8);
  Storage storage_{};
  std::uint32_t size_ = 0;
  std::uint32_t capacity_ = 0;
};
static_assert(sizeof(IndexList) == 16);

}  // namespace npusim::profiler

template <>
struct std::hash<npusim::profiler::InternedString> {
  std::size_t operator()(const npusim::profiler::InternedString& s) const {
    return std::hash<std::string>()(s.str());
  }
};
