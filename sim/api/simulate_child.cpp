#include "sim/api/simulate_child.h"

#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "sim/platform/platform.h"
#include "sim/util/error.h"

namespace npusim::api {
namespace {

// What the child reports, first on the pipe.
enum class Outcome : std::uint64_t { kDone, kIncomplete, kFailed, kInternal };

// A flat stream of 64-bit words: the timeline, then the finished flags of a partial run.
class Words {
 public:
  void put(std::uint64_t w) { words_.push_back(w); }
  void put_text(const std::string& text) {
    put(text.size());
    for (char c : text) put(static_cast<unsigned char>(c));
  }
  void put_timeline(const profiler::Timeline& t) {
    put(t.commands.size());
    for (const profiler::CommandTiming& c : t.commands) put(c.start), put(c.end), put(c.unit);
    const profiler::DramActivity& d = t.dram;
    put(d.bursts), put(d.bytes), put(d.total_latency_cycles), put(d.max_latency_cycles);
    put(d.latency_histogram.size());
    for (std::uint64_t b : d.latency_histogram) put(b);
  }
  std::vector<std::uint64_t>& data() { return words_; }

  std::uint64_t get() {
    if (at_ >= words_.size()) throw std::runtime_error("simulation child: truncated result");
    return words_[at_++];
  }
  std::string get_text() {
    std::string text(get(), '\0');
    for (char& c : text) c = static_cast<char>(get());
    return text;
  }
  profiler::Timeline get_timeline() {
    profiler::Timeline t;
    t.commands.resize(get());
    for (profiler::CommandTiming& c : t.commands) {
      c.start = get(), c.end = get(), c.unit = static_cast<std::uint32_t>(get());
    }
    profiler::DramActivity& d = t.dram;
    d.bursts = get(), d.bytes = get(), d.total_latency_cycles = get(), d.max_latency_cycles = get();
    d.latency_histogram.resize(get());
    for (std::uint64_t& b : d.latency_histogram) b = get();
    return t;
  }

 private:
  std::vector<std::uint64_t> words_;
  std::size_t at_ = 0;
};

void write_all(int fd, const void* data, std::size_t size) {
  const char* p = static_cast<const char*>(data);
  while (size > 0) {
    const ssize_t n = ::write(fd, p, size);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) _exit(70);
    p += n, size -= static_cast<std::size_t>(n);
  }
}

[[noreturn]] void run_child(int fd, const Schedule& schedule, const HwConfig& config) {
  Words out;
  try {
    configure_systemc_process();  // this child is the process that simulates
    const profiler::Timeline t = simulate(schedule, config);
    out.put(static_cast<std::uint64_t>(Outcome::kDone));
    out.put_timeline(t);
  } catch (const SimulationError& e) {
    out.data().clear();
    out.put(static_cast<std::uint64_t>(e.partial() ? Outcome::kIncomplete : Outcome::kFailed));
    out.put_text(e.what());
    if (e.partial()) {
      out.put_timeline(e.partial()->timeline);
      out.put(e.partial()->finished.size());
      for (bool f : e.partial()->finished) out.put(f ? 1 : 0);
    }
  } catch (const std::exception& e) {
    out.data().clear();
    out.put(static_cast<std::uint64_t>(Outcome::kInternal));
    out.put_text(e.what());
  }
  write_all(fd, out.data().data(), out.data().size() * sizeof(std::uint64_t));
  ::close(fd);
  _exit(0);  // no destructors, no atexit handlers of the parent's state
}

}  // namespace

profiler::Timeline simulate_in_child(const Schedule& schedule, const HwConfig& config) {
  if (systemc_elaborated()) {
    throw std::logic_error(
        "simulate_in_child: this process has simulated in-process already, and a forked child "
        "inherits that; a process that simulates more than once must simulate in children only");
  }
  int fds[2];
  if (::pipe(fds) != 0) throw std::runtime_error(std::string("pipe: ") + std::strerror(errno));
  const pid_t pid = ::fork();
  if (pid < 0) {
    ::close(fds[0]), ::close(fds[1]);
    throw std::runtime_error(std::string("fork: ") + std::strerror(errno));
  }
  if (pid == 0) {
    ::close(fds[0]);
    run_child(fds[1], schedule, config);
  }
  ::close(fds[1]);
  std::string bytes;
  char buffer[1 << 16];
  while (true) {
    const ssize_t n = ::read(fds[0], buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    bytes.append(buffer, static_cast<std::size_t>(n));
  }
  Words in;
  in.data().resize(bytes.size() / sizeof(std::uint64_t));
  if (!in.data().empty()) {
    std::memcpy(in.data().data(), bytes.data(), in.data().size() * sizeof(std::uint64_t));
  }
  ::close(fds[0]);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    throw std::runtime_error("the simulation child process died (status " + std::to_string(status) +
                             ")");
  }
  switch (static_cast<Outcome>(in.get())) {
    case Outcome::kDone:
      return in.get_timeline();
    case Outcome::kIncomplete: {
      const std::string message = in.get_text();
      auto partial = std::make_shared<PartialRun>();
      partial->timeline = in.get_timeline();
      partial->finished.resize(in.get());
      for (std::size_t i = 0; i < partial->finished.size(); ++i)
        partial->finished[i] = in.get() != 0;
      throw SimulationError(message, std::move(partial));
    }
    case Outcome::kFailed:
      throw SimulationError(in.get_text());
    case Outcome::kInternal:
      throw std::runtime_error(in.get_text());
  }
  throw std::runtime_error("simulation child: unknown outcome");
}

}  // namespace npusim::api
