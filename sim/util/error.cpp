#include "sim/util/error.h"

#include "profiler/input_file.h"

namespace npusim {
namespace {

// Enough to fix a file in one pass without flooding a terminal.
constexpr std::size_t kMaxProblemsShown = 50;

std::string join(const std::vector<Problem>& problems) {
  std::string text;
  for (std::size_t i = 0; i < problems.size() && i < kMaxProblemsShown; ++i) {
    if (i > 0) text += '\n';
    text += problems[i].to_string();
  }
  if (problems.size() > kMaxProblemsShown) {
    text += "\n... and " + std::to_string(problems.size() - kMaxProblemsShown) + " more problems";
  }
  return text;
}

}  // namespace

std::string Problem::to_string() const {
  std::string text = file;
  if (!where.empty()) text += (text.empty() ? "" : ": ") + where;
  text += (text.empty() ? "" : ": ") + message;
  // File names and values quoted from a file may be any bytes; a message is printed, and goes
  // into sweep.json and JUnit XML, so it is kept valid UTF-8.
  return profiler::escape_invalid_utf8(text);
}

InputError::InputError(std::vector<Problem> problems)
    : std::runtime_error(join(problems)), problems_(std::move(problems)) {}

InputError::InputError(std::string file, std::string where, std::string message)
    : InputError(std::vector<Problem>{{std::move(file), std::move(where), std::move(message)}}) {}

void Diagnostics::error(std::string where, std::string message) {
  problems_.push_back({file_, std::move(where), std::move(message)});
}

void Diagnostics::throw_if_any() const {
  if (!problems_.empty()) throw InputError(problems_);
}

}  // namespace npusim
