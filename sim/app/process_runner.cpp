#include "sim/app/process_runner.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/prctl.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <stdexcept>
#include <system_error>
#include <thread>

extern char** environ;

namespace npusim::app {
namespace {

double now_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

struct Running {
  pid_t pid;
  std::size_t index;
  double start;
};

int decode_status(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return 127;
}

// Starts one child; returns its pid, or -1 after writing the reason into its stderr file.
// `threads` is the child's NPUSIM_THREADS (its compiler's threads) unless the user set one: the
// cores shared by the children running at once.
pid_t spawn(const ChildSpec& spec, const sigset_t& child_mask, unsigned threads) {
  posix_spawn_file_actions_t actions;
  posix_spawnattr_t attr;
  posix_spawn_file_actions_init(&actions);
  posix_spawnattr_init(&attr);
  const std::string err = spec.stderr_file.string();
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_addopen(&actions, 2, err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  // The child starts with the signal mask and dispositions this process had before the run.
  sigset_t defaults;
  sigemptyset(&defaults);
  for (int sig : {SIGINT, SIGTERM, SIGCHLD, SIGPIPE}) sigaddset(&defaults, sig);
  posix_spawnattr_setsigmask(&attr, &child_mask);
  posix_spawnattr_setsigdefault(&attr, &defaults);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);

  std::vector<std::string> words;
  words.reserve(spec.args.size() + 1);
  words.emplace_back("npusim");
  words.insert(words.end(), spec.args.begin(), spec.args.end());
  std::vector<char*> argv;
  for (std::string& w : words) argv.push_back(w.data());
  argv.push_back(nullptr);

  // The child learns who its parent is, so that it can die with it (die_with_parent()):
  // posix_spawn runs no code between fork and exec where prctl could be called.
  const auto named = [](const char* word, const char* variable) {
    return std::strncmp(word, variable, std::strlen(variable)) == 0 &&
           word[std::strlen(variable)] == '=';
  };
  std::vector<std::string> env_words;
  bool threads_set = false;
  for (char** e = environ; *e != nullptr; ++e) {
    if (!named(*e, kParentPidVariable)) env_words.emplace_back(*e);
    threads_set = threads_set || named(*e, "NPUSIM_THREADS");
  }
  env_words.push_back(std::string(kParentPidVariable) + "=" + std::to_string(::getpid()));
  if (!threads_set) env_words.push_back("NPUSIM_THREADS=" + std::to_string(threads));
  std::vector<char*> envp;
  for (std::string& w : env_words) envp.push_back(w.data());
  envp.push_back(nullptr);

  pid_t pid = -1;
  const int rc = posix_spawn(&pid, "/proc/self/exe", &actions, &attr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  if (rc != 0) {
    std::ofstream(spec.stderr_file, std::ios::binary | std::ios::app)
        << "npusim: error: cannot start /proc/self/exe: " << std::strerror(rc) << '\n';
    return -1;
  }
  return pid;
}

}  // namespace

void run_children(const std::vector<ChildSpec>& children, unsigned jobs,
                  const std::function<void(std::size_t, const ChildOutcome&)>& done) {
  if (jobs == 0) jobs = 1;
  // SIGCHLD, SIGINT and SIGTERM are blocked and taken with sigwaitinfo: no handler, no race
  // between checking for finished children and going to sleep.
  sigset_t watched, old_mask;
  sigemptyset(&watched);
  sigaddset(&watched, SIGCHLD);
  sigaddset(&watched, SIGINT);
  sigaddset(&watched, SIGTERM);
  struct sigaction dfl {
  }, old_chld{};
  dfl.sa_handler = SIG_DFL;
  sigemptyset(&dfl.sa_mask);
  sigaction(SIGCHLD, &dfl, &old_chld);  // an inherited SIG_IGN would reap children for us
  pthread_sigmask(SIG_BLOCK, &watched, &old_mask);

  // The children running at once share the cores: each compiles on its share of them.
  const std::size_t at_once =
      std::max<std::size_t>(1, std::min<std::size_t>(jobs, children.size()));
  const unsigned child_threads = std::max(1u, default_jobs() / static_cast<unsigned>(at_once));
  std::vector<Running> running;
  std::size_t next = 0;
  int interrupted = 0;
  auto restore = [&] {
    pthread_sigmask(SIG_SETMASK, &old_mask, nullptr);
    sigaction(SIGCHLD, &old_chld, nullptr);
  };
  try {
    while (next < children.size() || !running.empty()) {
      while (interrupted == 0 && next < children.size() && running.size() < jobs) {
        const double start = now_seconds();
        const pid_t pid = spawn(children[next], old_mask, child_threads);
        if (pid < 0) {
          done(next, ChildOutcome{127, now_seconds() - start});
        } else {
          running.push_back({pid, next, start});
        }
        ++next;
      }
      if (interrupted != 0 && next < children.size()) next = children.size();
      // Reap whatever has finished.
      bool reaped = false;
      for (std::size_t i = 0; i < running.size();) {
        int status = 0;
        const pid_t r = waitpid(running[i].pid, &status, WNOHANG);
        if (r == running[i].pid || (r < 0 && errno == ECHILD)) {
          const Running child = running[i];
          running.erase(running.begin() + static_cast<std::ptrdiff_t>(i));
          reaped = true;
          if (interrupted == 0) {
            done(child.index,
                 ChildOutcome{r < 0 ? 127 : decode_status(status), now_seconds() - child.start});
          }
        } else {
          ++i;
        }
      }
      if (reaped) continue;  // room for more children, or everything is done
      if (running.empty()) continue;
      siginfo_t info;
      const int sig = sigwaitinfo(&watched, &info);
      if ((sig == SIGINT || sig == SIGTERM) && interrupted == 0) {
        interrupted = sig;
        for (const Running& r : running) kill(r.pid, SIGTERM);
      }
    }
  } catch (...) {
    for (const Running& r : running) kill(r.pid, SIGTERM);
    for (const Running& r : running) waitpid(r.pid, nullptr, 0);
    restore();
    throw;
  }
  restore();
  if (interrupted != 0) {
    signal(interrupted, SIG_DFL);
    raise(interrupted);
  }
}

void die_with_parent() {
  const char* value = std::getenv(kParentPidVariable);
  if (value == nullptr) return;
  char* end = nullptr;
  const long parent = std::strtol(value, &end, 10);
  const bool valid = end != value && *end == '\0' && parent > 1;
  ::unsetenv(kParentPidVariable);  // not passed on to anything this process starts
  if (!valid) return;
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  // The parent may have died between spawning this process and the prctl: then the signal never
  // comes, and this process has been reparented already.
  if (::getppid() != static_cast<pid_t>(parent)) ::raise(SIGKILL);
}

std::string self_executable() {
  std::error_code ec;
  const std::filesystem::path p = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec) throw std::runtime_error("cannot resolve /proc/self/exe: " + ec.message());
  return p.string();
}

unsigned default_jobs() {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof(set), &set) == 0) {
    const int n = CPU_COUNT(&set);
    if (n > 0) return static_cast<unsigned>(n);
  }
  const unsigned n = std::thread::hardware_concurrency();
  return n == 0 ? 1 : n;
}

std::string shell_quote(const std::string& word) {
  bool plain = !word.empty();
  for (char ch : word) {
    const bool safe = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
                      (ch >= '0' && ch <= '9') || std::strchr("_@%+=:,./-", ch) != nullptr;
    if (!safe || ch == '\0') plain = false;
  }
  if (plain) return word;
  std::string q = "'";
  for (char ch : word) q += ch == '\'' ? std::string("'\\''") : std::string(1, ch);
  return q + "'";
}

Progress::Progress(std::string what, std::size_t total, bool quiet)
    : what_(std::move(what)),
      total_(total),
      quiet_(quiet),
      tty_(isatty(STDERR_FILENO) == 1),
      start_(now_seconds()) {
  if (tty_ && !quiet_) draw();
}

Progress::~Progress() { close(); }

void Progress::finished(const std::string& line, bool failed) {
  ++done_;
  if (failed) ++failed_;
  if (tty_ && !quiet_) {
    if (failed) std::cerr << "\r\033[K" << line << '\n';
    draw();
  } else if (failed || !quiet_) {
    std::cerr << line << '\n';
  }
  std::cerr.flush();
}

void Progress::draw() {
  constexpr std::size_t kWidth = 30;
  const std::size_t filled = total_ == 0 ? kWidth : done_ * kWidth / total_;
  char seconds[32];
  std::snprintf(seconds, sizeof(seconds), "%.1f s", now_seconds() - start_);
  std::cerr << "\r\033[K[" << std::string(filled, '#') << std::string(kWidth - filled, '.') << "] "
            << done_ << '/' << total_ << ' ' << what_;
  if (failed_ > 0) std::cerr << ", " << failed_ << " failed";
  std::cerr << ", " << seconds;
  std::cerr.flush();
  open_ = true;
}

void Progress::close() {
  if (open_) {
    std::cerr << '\n';
    std::cerr.flush();
    open_ = false;
  }
}

}  // namespace npusim::app
