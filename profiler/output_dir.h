// Writes a run's output files so that a failure never leaves half-written ones: every file is
// staged in a hidden folder inside the output folder and renamed into place on commit().
#pragma once

#include <filesystem>
#include <functional>
#include <ostream>
#include <string>
#include <vector>

namespace npusim::profiler {

class OutputDir {
 public:
  explicit OutputDir(std::filesystem::path dir);
  ~OutputDir();  // removes the staging folder; without commit() nothing appears in `dir`
  OutputDir(const OutputDir&) = delete;
  OutputDir& operator=(const OutputDir&) = delete;

  // Stages `name` (a plain file name) by calling `write` on a stream into it. Throws
  // std::runtime_error naming the file on any I/O failure.
  void write(const std::string& name, const std::function<void(std::ostream&)>& write);
  // Moves every staged file into place, replacing older ones of the same name.
  void commit();
  const std::filesystem::path& dir() const { return dir_; }

 private:
  std::filesystem::path dir_;
  std::filesystem::path staging_;
  std::vector<std::string> staged_;
  bool committed_ = false;
};

}  // namespace npusim::profiler
