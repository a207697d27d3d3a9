// Writes a run's output files so that a failure never leaves half-written ones: every file is
// staged in a hidden folder inside the output folder and moved into place on commit(), by a
// rename, or over an earlier run's file by exchanging the two (the older one then leaves with
// the staging folder).
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <mutex>
#include <ostream>
#include <stdexcept>
#include <string>
#include <vector>

namespace npusim::profiler {

// The output folder or a file in it cannot be written (a usage problem, not a bug).
class OutputError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Every file npusim writes into an output folder. On commit, those of them that this run did not
// write are removed, so a folder never mixes files of two runs.
const std::vector<std::string>& output_file_names();

// Writes one file through a temporary beside it (FILE.tmp-<pid>, with this process's id) and a
// rename, so that no half-written file is ever seen; parent folders are created. Temporaries of
// FILE left by processes that no longer exist are removed first (remove_stale_temporaries).
// Throws OutputError.
void write_file_atomically(const std::filesystem::path& path,
                           const std::function<void(std::ostream&)>& write);
void write_file_atomically(const std::filesystem::path& path, const std::string& text);

// Removes the staging folders (.npusim-staging-<pid>) in `dir` of processes that no longer exist:
// a run killed with SIGKILL cannot remove its own. Folders of live processes are never touched.
// Returns the folders removed. Every OutputDir does this before it stages its first file.
std::vector<std::filesystem::path> remove_stale_staging(const std::filesystem::path& dir);
// Removes the temporaries of `path` (path.tmp-<pid>, regular files) of processes that no longer
// exist, as remove_stale_staging removes staging folders; returns those removed.
std::vector<std::filesystem::path> remove_stale_temporaries(const std::filesystem::path& path);

class OutputDir {
 public:
  explicit OutputDir(std::filesystem::path dir);
  ~OutputDir();  // removes the staging folder; without commit() nothing appears in `dir`
  OutputDir(const OutputDir&) = delete;
  OutputDir& operator=(const OutputDir&) = delete;

  // Stages `name` (one of output_file_names()) by calling `write` on a stream into it. Throws
  // OutputError naming the file on any I/O failure. Several threads may each write their own
  // file at once. Writing a name again replaces what it staged.
  void write(const std::string& name, const std::function<void(std::ostream&)>& write);
  // Drops a staged file: it is not moved into place, and commit() removes an older one of that
  // name (a file given up on for its size; docs/outputs.md#detail).
  void discard(const std::string& name);
  // The size of a staged file, in bytes (0 if it is not staged).
  std::uint64_t staged_bytes(const std::string& name) const;
  // Moves every staged file into place, replacing older ones of the same name, and removes
  // outputs of earlier runs that this one did not write. Each rename is atomic; if one fails,
  // the files moved before it stay.
  void commit();
  const std::filesystem::path& dir() const { return dir_; }

 private:
  std::filesystem::path dir_;
  std::filesystem::path staging_;
  mutable std::mutex mutex_;  // guards the bookkeeping below, not the files' writing
  std::vector<std::string> staged_;
  bool committed_ = false;
  bool started_ = false;  // the staging folder exists
  bool created_ = false;  // the folder did not exist before this run
};

}  // namespace npusim::profiler
