#include "profiler/output_dir.h"

#include <fstream>
#include <stdexcept>
#include <system_error>

#include <unistd.h>

namespace npusim::profiler {

namespace fs = std::filesystem;

OutputDir::OutputDir(fs::path dir)
    : dir_(std::move(dir)), staging_(dir_ / (".npusim-staging-" + std::to_string(::getpid()))) {}

OutputDir::~OutputDir() {
  std::error_code ignored;
  fs::remove_all(staging_, ignored);
  // Leave no empty output folder behind when nothing was committed into a folder we created.
  if (!committed_) fs::remove(dir_, ignored);  // only succeeds when the folder is empty
}

void OutputDir::write(const std::string& name, const std::function<void(std::ostream&)>& write) {
  std::error_code ec;
  fs::create_directories(staging_, ec);
  if (ec) {
    throw std::runtime_error("cannot create output folder " + dir_.string() + ": " + ec.message());
  }
  const fs::path path = staging_ / name;
  std::ofstream out(path, std::ios::binary);
  if (!out) throw std::runtime_error("cannot write " + (dir_ / name).string());
  write(out);
  out.flush();
  if (!out) throw std::runtime_error("error while writing " + (dir_ / name).string());
  staged_.push_back(name);
}

void OutputDir::commit() {
  for (const std::string& name : staged_) {
    std::error_code ec;
    fs::rename(staging_ / name, dir_ / name, ec);
    if (ec) {
      throw std::runtime_error("cannot move " + name + " into " + dir_.string() + ": " +
                               ec.message());
    }
  }
  committed_ = true;
}

}  // namespace npusim::profiler
