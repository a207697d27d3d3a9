// What the end-to-end tests share: running a command line and reading what it wrote.
#pragma once

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

namespace npusim::test {

// What a finished process left: its exit code and what it printed.
struct Result {
  int exit_code = -1;
  std::string out;
  std::string err;
};

inline std::string read_file(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// One argument for /bin/sh, single-quoted.
inline std::string quote(const std::string& arg) {
  std::string q = "'";
  for (char ch : arg) q += ch == '\'' ? std::string("'\\''") : std::string(1, ch);
  return q + "'";
}

// A copy of the LLM model `model` at `out` with fewer tokens: the same layers and shapes, so the
// same code runs, in a fraction of the time (GPT-2 small's 128 + 32 tokens took 23 s of one test
// here and 300 s under AddressSanitizer).
inline std::filesystem::path llm_with_tokens(const std::filesystem::path& model,
                                             const std::filesystem::path& out, int prefill_tokens,
                                             int decode_tokens) {
  nlohmann::ordered_json m = nlohmann::ordered_json::parse(read_file(model));
  m["prefill_tokens"] = prefill_tokens;
  m["decode_tokens"] = decode_tokens;
  std::filesystem::create_directories(out.parent_path());
  std::ofstream(out) << m.dump(2) << "\n";
  return out;
}

}  // namespace npusim::test
