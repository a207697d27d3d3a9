#include "profiler/output_dir.h"

#include <algorithm>
#include <fstream>
#include <stdexcept>
#include <system_error>

#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>

namespace npusim::profiler {

namespace fs = std::filesystem;

namespace {

constexpr const char* kStagingPrefix = ".npusim-staging-";  // <pid>: a run's staging folder
constexpr const char* kTemporaryInfix = ".tmp-";  // FILE.tmp-<pid>: write_file_atomically's

}  // namespace

const std::vector<std::string>& output_file_names() {
  static const std::vector<std::string> names = {
      "timeline.csv", "runtime_timeline.csv", "runtime.csv", "annotated.csv",
      "trace.json",   "trace.pftrace",        "summary.txt", "stats.json"};
  return names;
}

void write_file_atomically(const fs::path& path, const std::function<void(std::ostream&)>& write) {
  std::error_code ec;
  if (path.has_parent_path()) {
    fs::create_directories(path.parent_path(), ec);
    if (ec) throw OutputError("cannot write " + path.string() + ": " + ec.message());
  }
  remove_stale_temporaries(path);  // what writers of `path` killed before their rename left
  const fs::path tmp = path.string() + kTemporaryInfix + std::to_string(::getpid());
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) throw OutputError("cannot write " + path.string());
    write(out);
    out.flush();
    if (!out) {
      out.close();
      fs::remove(tmp, ec);
      throw OutputError("cannot write " + path.string());
    }
  }
  fs::rename(tmp, path, ec);
  if (ec) {
    std::error_code ignored;
    fs::remove(tmp, ignored);
    throw OutputError("cannot write " + path.string() + ": " + ec.message());
  }
}

void write_file_atomically(const fs::path& path, const std::string& text) {
  write_file_atomically(path, [&](std::ostream& out) { out << text; });
}

namespace {

// The pid after `prefix` in a name `prefix<pid>`, or 0 when the name is not one.
pid_t pid_after(const std::string& name, const std::string& prefix) {
  if (name.size() <= prefix.size() || name.compare(0, prefix.size(), prefix) != 0) return 0;
  const std::string digits = name.substr(prefix.size());
  if (digits.size() > 9 || digits.find_first_not_of("0123456789") != std::string::npos) return 0;
  return static_cast<pid_t>(std::strtol(digits.c_str(), nullptr, 10));
}

// Removes the entries of `dir` named `prefix<pid>` of the given type (a folder or a regular file;
// never a symlink) whose process no longer exists. Returns those removed.
std::vector<fs::path> remove_left_by_dead_processes(const fs::path& dir, const std::string& prefix,
                                                    fs::file_type type) {
  std::vector<fs::path> removed;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const pid_t pid = pid_after(it->path().filename().string(), prefix);
    if (pid <= 0 || pid == ::getpid()) continue;
    // Only a process that no longer exists (ESRCH) leaves its entry for the taking; EPERM means
    // it lives under another user. A pid reused since is taken as alive: the entry stays.
    if (::kill(pid, 0) == 0 || errno != ESRCH) continue;
    std::error_code ignored;
    if (it->symlink_status(ignored).type() != type) continue;
    fs::remove_all(it->path(), ignored);
    if (!ignored) removed.push_back(it->path());
  }
  return removed;
}

}  // namespace

std::vector<fs::path> remove_stale_staging(const fs::path& dir) {
  return remove_left_by_dead_processes(dir, kStagingPrefix, fs::file_type::directory);
}

std::vector<fs::path> remove_stale_temporaries(const fs::path& path) {
  const fs::path dir = path.has_parent_path() ? path.parent_path() : fs::path(".");
  return remove_left_by_dead_processes(dir, path.filename().string() + kTemporaryInfix,
                                       fs::file_type::regular);
}

OutputDir::OutputDir(fs::path dir)
    : dir_(std::move(dir)), staging_(dir_ / (kStagingPrefix + std::to_string(::getpid()))) {}

OutputDir::~OutputDir() {
  std::error_code ignored;
  fs::remove_all(staging_, ignored);
  // Leave no output folder behind that this run created and then failed to fill.
  if (!committed_ && created_) fs::remove(dir_, ignored);  // only succeeds when it is empty
}

void OutputDir::write(const std::string& name, const std::function<void(std::ostream&)>& write) {
  {
    const std::lock_guard<std::mutex> lock(mutex_);
    std::error_code ec;
    if (!started_) {
      started_ = true;
      created_ = !fs::exists(dir_, ec);
      if (!created_) remove_stale_staging(dir_);  // what runs killed before their end left behind
      fs::create_directories(staging_, ec);
      if (ec) {
        throw OutputError("cannot create output folder " + dir_.string() + ": " + ec.message());
      }
    }
  }
  const fs::path path = staging_ / name;
  std::ofstream out(path, std::ios::binary);
  if (!out) throw OutputError("cannot write " + (dir_ / name).string());
  write(out);
  out.flush();
  if (!out) throw OutputError("error while writing " + (dir_ / name).string());
  const std::lock_guard<std::mutex> lock(mutex_);
  // Written again (stats.json after a note it carries): the new bytes replace the old.
  if (std::find(staged_.begin(), staged_.end(), name) == staged_.end()) staged_.push_back(name);
}

void OutputDir::discard(const std::string& name) {
  const std::lock_guard<std::mutex> lock(mutex_);
  const auto it = std::find(staged_.begin(), staged_.end(), name);
  if (it == staged_.end()) return;
  staged_.erase(it);
  std::error_code ignored;
  fs::remove(staging_ / name, ignored);
}

std::uint64_t OutputDir::staged_bytes(const std::string& name) const {
  const std::lock_guard<std::mutex> lock(mutex_);
  if (std::find(staged_.begin(), staged_.end(), name) == staged_.end()) return 0;
  std::error_code ec;
  const std::uintmax_t size = fs::file_size(staging_ / name, ec);
  return ec ? 0 : size;
}

void OutputDir::commit() {
  const std::lock_guard<std::mutex> lock(mutex_);
  for (const std::string& name : staged_) {
    const fs::path from = staging_ / name, to = dir_ / name;
    // Over an earlier run's file, the two are exchanged, atomically as a rename is, and the old
    // one goes with the staging folder: ext4 makes a rename over a file write the new one's
    // blocks out first (auto_da_alloc), 23 ms of ResNet-50's 55 MB, where an exchange does not.
    // (The price: a power cut within the file system's commit interval may leave an output
    // empty, its older version gone, where a rename would have left one or the other whole.
    // Outputs are made again by running again.) Where there is no file to exchange with (a
    // folder of that name stays where it is, and the rename fails as before), or the file
    // system cannot, a rename.
    std::error_code ec;
    if (fs::symlink_status(to, ec).type() == fs::file_type::regular &&
        ::renameat2(AT_FDCWD, from.c_str(), AT_FDCWD, to.c_str(), RENAME_EXCHANGE) == 0) {
      // What came back must be that file: a folder put there since the check above goes back,
      // and the staging folder's removal never takes it.
      if (fs::symlink_status(from, ec).type() != fs::file_type::regular) {
        ::renameat2(AT_FDCWD, from.c_str(), AT_FDCWD, to.c_str(), RENAME_EXCHANGE);
        throw OutputError("cannot move " + name + " into " + dir_.string() +
                          ": it became something else than a file while this run wrote");
      }
      continue;
    }
    fs::rename(from, to, ec);
    if (ec)
      throw OutputError("cannot move " + name + " into " + dir_.string() + ": " + ec.message());
  }
  for (const std::string& name : output_file_names()) {
    if (std::find(staged_.begin(), staged_.end(), name) == staged_.end()) {
      std::error_code ignored;
      fs::remove(dir_ / name, ignored);
    }
  }
  // (Staged names now hold the older files, if any: nothing is staged any more.)
  staged_.clear();
  committed_ = true;
}

}  // namespace npusim::profiler
