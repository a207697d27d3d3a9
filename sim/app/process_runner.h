// Runs npusim child processes (one `npusim run` per sweep point or budget entry), at most N at a
// time. SystemC elaborates once per process, so every simulation gets a process of its own; the
// parent never touches SystemC and never runs simulations on threads.
#pragma once

#include <cstddef>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

namespace npusim::app {

// One child: `npusim ARGS...` with stdin and stdout on /dev/null and stderr into `stderr_file`
// (created or truncated; its folder must exist).
struct ChildSpec {
  std::vector<std::string> args;  // without argv[0]
  std::filesystem::path stderr_file;
};

struct ChildOutcome {
  // The child's exit status; 128 + N when it was killed by signal N (as a shell reports it);
  // 127 when it could not be started (the reason is written to its stderr file).
  int exit_code = 0;
  double seconds = 0;  // wall time
};

// Spawns the children with posix_spawn of /proc/self/exe, at most `jobs` (>= 1) at a time, in
// index order, each with NPUSIM_THREADS = the cores over the children at once (at least 1)
// unless the environment sets it, and calls `done(index, outcome)` on the calling thread as each
// one ends (so in completion order). SIGINT or SIGTERM while children run: they get SIGTERM, are
// reaped, and the signal is raised again in this process.
void run_children(const std::vector<ChildSpec>& children, unsigned jobs,
                  const std::function<void(std::size_t, const ChildOutcome&)>& done);

// The environment variable through which run_children tells each child its parent's pid.
constexpr const char* kParentPidVariable = "NPUSIM_PARENT_PID";

// Called first thing in main(): in a child of run_children, asks the kernel to SIGKILL this
// process when its parent dies (PR_SET_PDEATHSIG), so that a sweep or check killed with SIGKILL
// leaves no child running to its end; kills itself at once if the parent is already gone.
// Does nothing in a process not started by run_children.
void die_with_parent();

// The absolute path of the running npusim binary (readlink of /proc/self/exe).
std::string self_executable();

// The number of cores this process may run on (at least 1): the default of --jobs.
unsigned default_jobs();

// Quotes one word for a POSIX shell: 'word', with ' written as '\''. Words made only of
// characters that need no quoting are left as they are.
std::string shell_quote(const std::string& word);

// Progress on stderr. On a terminal, one bar redrawn in place; otherwise one line per finished
// item. Lines reported as failures are always printed; the rest only when not quiet.
class Progress {
 public:
  Progress(std::string what, std::size_t total, bool quiet);
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;
  ~Progress();
  void finished(const std::string& line, bool failed);
  void close();  // ends the bar's line (idempotent)

 private:
  void draw();
  std::string what_;
  std::size_t total_;
  std::size_t done_ = 0;
  std::size_t failed_ = 0;
  bool quiet_;
  bool tty_;
  bool open_ = false;  // a bar is on screen
  double start_;
};

}  // namespace npusim::app
