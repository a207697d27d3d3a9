// Every input file npusim reads (configs, schedules, graph JSON, topologies, SCALE-Sim configs,
// ONNX models, the CSV and JSON files of convert, report, diff and check) is opened through here,
// so that one rule decides what is a file npusim will read: a regular file of at most
// kMaxInputFileBytes. Devices (/dev/zero), FIFOs, sockets and folders are refused before a byte
// is read; they would block, never end or make a read fail in a way that names no file.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace npusim::profiler {

// 2 GiB: far above any model, schedule or trace npusim writes (a 5M-command schedule is about
// 0.8 GB of JSON), and protobuf's own limit for one ONNX message.
constexpr std::uint64_t kMaxInputFileBytes = std::uint64_t{1} << 31;

// Why `path` is not an input file npusim reads (it does not exist, is a folder, a device, FIFO or
// socket, or is larger than kMaxInputFileBytes), or nullopt when it is one. Does not block on a
// FIFO.
std::optional<std::string> input_file_problem(const std::string& path);

// Reads the whole of `path` into `bytes`; returns the problem (as input_file_problem, or a read
// error) instead when it cannot. A file that grows past the limit while read is refused too.
std::optional<std::string> read_input_file(const std::string& path, std::string& bytes);

// `text` with every byte that is not part of valid UTF-8 written as the four characters \xNN, so
// that a file name or a message can go into JSON (nlohmann throws type_error.316 on invalid
// UTF-8) and to a terminal unchanged when it is valid.
std::string escape_invalid_utf8(std::string_view text);
// True when `text` is valid UTF-8 (no overlong forms, surrogates or code points past U+10FFFF).
bool is_valid_utf8(std::string_view text);

}  // namespace npusim::profiler
