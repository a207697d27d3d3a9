// Errors that reach the user, and the exit codes they map to (documented in docs/cli.md).
#pragma once

#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "profiler/timeline.h"

namespace npusim {

enum ExitCode : int {
  kExitOk = 0,
  kExitCheckFailed = 1,       // a budget was exceeded, a diff was over tolerance
  kExitBadInput = 2,          // malformed or inconsistent input, bad usage
  kExitSimulationFailed = 3,  // deadlock, local-memory capacity exceeded
  kExitInternalError = 4,     // a bug in npusim
};

// One problem in an input: where (file and JSON pointer, or row) and what was expected.
struct Problem {
  std::string file;
  std::string where;  // JSON pointer such as /commands/17/deps/0, or "row 12"; may be empty
  std::string message;
  std::string to_string() const;
};

// Bad input: exit code 2. Carries every problem found, not only the first.
class InputError : public std::runtime_error {
 public:
  explicit InputError(std::vector<Problem> problems);
  InputError(std::string file, std::string where, std::string message);
  const std::vector<Problem>& problems() const { return problems_; }

 private:
  std::vector<Problem> problems_;
};

// How far a run got before it could not go on: when each finished command ran.
struct PartialRun {
  profiler::Timeline timeline;  // meaningful for finished commands only
  std::vector<bool> finished;
};

// The simulation (or the estimate) could not complete: exit code 3. Carries the partial run when
// there is one, so that the outputs up to that point can still be written.
// `stage` names what failed in the message ("simulation", "estimate").
class SimulationError : public std::runtime_error {
 public:
  explicit SimulationError(const std::string& message,
                           std::shared_ptr<const PartialRun> partial = nullptr,
                           std::string stage = "simulation")
      : std::runtime_error(message), partial_(std::move(partial)), stage_(std::move(stage)) {}
  const PartialRun* partial() const { return partial_.get(); }
  const std::string& stage() const { return stage_; }

 private:
  std::shared_ptr<const PartialRun> partial_;
  std::string stage_;
};

// Collects problems while a loader goes on checking, then throws them together.
class Diagnostics {
 public:
  explicit Diagnostics(std::string file) : file_(std::move(file)) {}
  void error(std::string where, std::string message);
  bool empty() const { return problems_.empty(); }
  std::size_t size() const { return problems_.size(); }
  const std::vector<Problem>& problems() const { return problems_; }
  void clear() { problems_.clear(); }
  const std::string& file() const { return file_; }
  // Throws InputError if any problem was recorded.
  void throw_if_any() const;

 private:
  std::string file_;
  std::vector<Problem> problems_;
};

}  // namespace npusim
