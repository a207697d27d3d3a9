#include "sim/ir/schedule_fast.h"

#include <cstring>
#include <fstream>
#include <optional>
#include <string_view>
#include <vector>

#include "profiler/input_file.h"

namespace npusim::detail {
namespace {

// What reading one piece of the file came to.
enum class Status {
  kOk,
  kUnusual,  // not what the fast reader handles: the exact path decides
  kMore,     // the piece runs past the bytes read so far
  kBad,      // not a file the fast reader can read at all: the exact path reads it
};

// Far below kMaxJsonDepth: deeper values go to the exact path, which checks the limit.
constexpr int kMaxFastDepth = 64;

// The file, read in chunks into a window that keeps the piece being read: a piece (a command, a
// top-level value) that runs past the window is read again once more of the file is in.
class Window {
 public:
  explicit Window(std::ifstream& in) : in_(in), buffer_(kChunkBytes) {}
  const char* begin() const { return buffer_.data(); }
  const char* end() const { return buffer_.data() + size_; }
  bool at_eof() const { return eof_; }
  // Drops the bytes before `keep`, reads more after what is left; false when nothing more came.
  bool more(const char* keep) {
    if (eof_) return false;
    const auto kept = static_cast<std::size_t>(end() - keep);
    std::memmove(buffer_.data(), keep, kept);
    size_ = kept;
    if (buffer_.size() - size_ < kChunkBytes / 2) buffer_.resize(buffer_.size() * 2);
    in_.read(buffer_.data() + size_, static_cast<std::streamsize>(buffer_.size() - size_));
    const auto got = static_cast<std::size_t>(in_.gcount());
    if (in_.bad()) {
      bad_ = true;
      return false;
    }
    size_ += got;
    if (got == 0 || !in_) eof_ = true;
    return got > 0;
  }
  bool bad() const { return bad_; }

 private:
  static constexpr std::size_t kChunkBytes = std::size_t{4} << 20;
  std::ifstream& in_;
  std::vector<char> buffer_;
  std::size_t size_ = 0;
  bool eof_ = false;
  bool bad_ = false;
};

bool is_ws(char ch) { return ch == ' ' || ch == '\n' || ch == '\r' || ch == '\t'; }

// A position in the window and its end.
struct Cursor {
  const char* p;
  const char* end;
  bool done() const { return p == end; }
  void skip_ws() {
    while (p != end && is_ws(*p)) ++p;
  }
};

int hex_digit(char ch) {
  if (ch >= '0' && ch <= '9') return ch - '0';
  if (ch >= 'a' && ch <= 'f') return ch - 'a' + 10;
  if (ch >= 'A' && ch <= 'F') return ch - 'A' + 10;
  return -1;
}

// The length of the UTF-8 sequence starting at `s` if it is one nlohmann's lexer accepts
// (RFC 3629), else 0; -1 when it runs past `end`.
int utf8_length(const unsigned char* s, const unsigned char* end) {
  const unsigned char b = s[0];
  int n = 0;
  unsigned char lo = 0x80;
  unsigned char hi = 0xBF;
  if (b >= 0xC2 && b <= 0xDF) {
    n = 2;
  } else if (b >= 0xE0 && b <= 0xEF) {
    n = 3;
    if (b == 0xE0) lo = 0xA0;
    if (b == 0xED) hi = 0x9F;
  } else if (b >= 0xF0 && b <= 0xF4) {
    n = 4;
    if (b == 0xF0) lo = 0x90;
    if (b == 0xF4) hi = 0x8F;
  } else {
    return 0;
  }
  if (end - s < n) return -1;
  if (s[1] < lo || s[1] > hi) return 0;
  for (int i = 2; i < n; ++i) {
    if (s[i] < 0x80 || s[i] > 0xBF) return 0;
  }
  return n;
}

// A JSON string at c.p (which is '"'), decoded into `out` as nlohmann decodes it. Escapes of
// surrogates (\ud83d) are left to the exact path.
Status read_string(Cursor& c, std::string& out) {
  out.clear();
  ++c.p;
  while (true) {
    const char* run = c.p;
    while (c.p != c.end && *c.p != '"' && *c.p != '\\' &&
           static_cast<unsigned char>(*c.p) >= 0x20 && static_cast<unsigned char>(*c.p) < 0x80)
      ++c.p;
    out.append(run, c.p);
    if (c.done()) return Status::kMore;
    const auto ch = static_cast<unsigned char>(*c.p);
    if (ch == '"') {
      ++c.p;
      return Status::kOk;
    }
    if (ch < 0x20) return Status::kUnusual;
    if (ch >= 0x80) {
      const int n = utf8_length(reinterpret_cast<const unsigned char*>(c.p),
                                reinterpret_cast<const unsigned char*>(c.end));
      if (n < 0) return Status::kMore;
      if (n == 0) return Status::kUnusual;
      out.append(c.p, c.p + n);
      c.p += n;
      continue;
    }
    // An escape.
    if (c.end - c.p < 2) return Status::kMore;
    const char e = c.p[1];
    c.p += 2;
    switch (e) {
      case '"':
      case '\\':
      case '/':
        out += e;
        break;
      case 'b':
        out += '\b';
        break;
      case 'f':
        out += '\f';
        break;
      case 'n':
        out += '\n';
        break;
      case 'r':
        out += '\r';
        break;
      case 't':
        out += '\t';
        break;
      case 'u': {
        if (c.end - c.p < 4) return Status::kMore;
        unsigned code = 0;
        for (int i = 0; i < 4; ++i) {
          const int d = hex_digit(c.p[i]);
          if (d < 0) return Status::kUnusual;
          code = code * 16 + static_cast<unsigned>(d);
        }
        c.p += 4;
        if (code >= 0xD800 && code <= 0xDFFF) return Status::kUnusual;
        if (code < 0x80) {
          out += static_cast<char>(code);
        } else if (code < 0x800) {
          out += static_cast<char>(0xC0 | (code >> 6));
          out += static_cast<char>(0x80 | (code & 0x3F));
        } else {
          out += static_cast<char>(0xE0 | (code >> 12));
          out += static_cast<char>(0x80 | ((code >> 6) & 0x3F));
          out += static_cast<char>(0x80 | (code & 0x3F));
        }
        break;
      }
      default:
        return Status::kUnusual;
    }
  }
}

// A non-negative integer in plain digits, at most 18 of them (anything else is unusual: a
// sign, a fraction, an exponent, a leading zero).
Status read_uint(Cursor& c, std::uint64_t& value) {
  const char* start = c.p;
  value = 0;
  while (c.p != c.end && *c.p >= '0' && *c.p <= '9') {
    value = value * 10 + static_cast<std::uint64_t>(*c.p - '0');
    ++c.p;
  }
  if (c.done()) return Status::kMore;  // the number may go on
  const auto digits = c.p - start;
  if (digits == 0 || digits > 18 || (digits > 1 && *start == '0')) return Status::kUnusual;
  if (*c.p == '.' || *c.p == 'e' || *c.p == 'E') return Status::kUnusual;
  return Status::kOk;
}

// After a member or an element: whitespace, then `close` (sets closed) or a comma followed by
// more (whitespace, then not the closer: a trailing comma is malformed).
Status after_item(Cursor& c, char close, bool& closed) {
  c.skip_ws();
  if (c.done()) return Status::kMore;
  if (*c.p == close) {
    ++c.p;
    closed = true;
    return Status::kOk;
  }
  if (*c.p != ',') return Status::kUnusual;
  ++c.p;
  c.skip_ws();
  if (c.done()) return Status::kMore;
  closed = false;
  return *c.p == close ? Status::kUnusual : Status::kOk;
}

// Whitespace, '"', a key of plain characters, '"', whitespace, ':', whitespace.
Status read_key(Cursor& c, std::string_view& key) {
  c.skip_ws();
  if (c.done()) return Status::kMore;
  if (*c.p != '"') return Status::kUnusual;
  const char* start = ++c.p;
  while (c.p != c.end && *c.p != '"' && *c.p != '\\' && static_cast<unsigned char>(*c.p) >= 0x20)
    ++c.p;
  if (c.done()) return Status::kMore;
  if (*c.p != '"') return Status::kUnusual;
  key = std::string_view(start, static_cast<std::size_t>(c.p - start));
  ++c.p;
  c.skip_ws();
  if (c.done()) return Status::kMore;
  if (*c.p != ':') return Status::kUnusual;
  ++c.p;
  c.skip_ws();
  return c.done() ? Status::kMore : Status::kOk;
}

// Skips one JSON value without checking it, only finding where it ends (nlohmann checks the text
// afterwards); kUnusual when it nests deeper than kMaxFastDepth.
Status skip_value(Cursor& c) {
  if (c.done()) return Status::kMore;
  if (*c.p != '{' && *c.p != '[' && *c.p != '"') {  // a scalar, up to its delimiter
    while (c.p != c.end && !is_ws(*c.p) && *c.p != ',' && *c.p != '}' && *c.p != ']') ++c.p;
    return c.done() ? Status::kMore : Status::kOk;
  }
  int depth = 0;
  do {
    if (c.done()) return Status::kMore;
    const char ch = *c.p++;
    if (ch == '"') {
      while (true) {
        if (c.done()) return Status::kMore;
        if (*c.p == '"') break;
        if (*c.p == '\\') {
          if (c.end - c.p < 2) return Status::kMore;
          ++c.p;
        }
        ++c.p;
      }
      ++c.p;
    } else if (ch == '{' || ch == '[') {
      if (++depth > kMaxFastDepth) return Status::kUnusual;
    } else if (ch == '}' || ch == ']') {
      --depth;
    }
  } while (depth > 0);
  return Status::kOk;
}

// The text of a value as nlohmann parses it; nullopt when it does not parse.
std::optional<Json> parse_text(const char* begin, const char* end) {
  try {
    Json value = Json::parse(begin, end, nullptr, false);
    if (value.is_discarded()) return std::nullopt;
    return value;
  } catch (const Json::exception&) {
    return std::nullopt;
  }
}

// The keys a command may have, as bits.
enum CommandKey : std::uint32_t {
  kId = 1u << 0,
  kEngine = 1u << 1,
  kSlice = 1u << 2,
  kOp = 1u << 3,
  kShape = 1u << 4,
  kBytes = 1u << 5,
  kDeps = 1u << 6,
  kLayer = 1u << 7,
  kLoc = 1u << 8,
  kProgram = 1u << 9,
  kAlloc = 1u << 10,
  kFree = 1u << 11,
};

std::uint32_t command_key(std::string_view key) {
  static constexpr std::pair<std::string_view, CommandKey> kKeys[] = {
      {"id", kId},       {"engine", kEngine},   {"slice", kSlice}, {"op", kOp},
      {"shape", kShape}, {"bytes", kBytes},     {"deps", kDeps},   {"layer", kLayer},
      {"loc", kLoc},     {"program", kProgram}, {"alloc", kAlloc}, {"free", kFree},
  };
  for (const auto& [name, bit] : kKeys) {
    if (name == key) return bit;
  }
  return 0;
}

// The fields a shape may have, in one fixed order.
enum ShapeField : int {
  kBatch,
  kM,
  kN,
  kK,
  kInH,
  kInW,
  kInC,
  kOutC,
  kChannels,
  kKernelH,
  kKernelW,
  kStrideH,
  kStrideW,
  kPadH,
  kPadW,
  kGroups,
  kElements,
  kShapeFields
};

int shape_field(std::string_view key) {
  static constexpr std::string_view kNames[kShapeFields] = {
      "batch",    "m",     "n",        "k",        "in_h",     "in_w",
      "in_c",     "out_c", "channels", "kernel_h", "kernel_w", "stride_h",
      "stride_w", "pad_h", "pad_w",    "groups",   "elements"};
  for (int i = 0; i < kShapeFields; ++i) {
    if (kNames[i] == key) return i;
  }
  return -1;
}

// A shape object as read: which fields it has and their values.
struct ShapeFields {
  std::uint32_t present = 0;
  std::uint64_t value[kShapeFields] = {};
  bool has(int f) const { return (present >> f & 1u) != 0; }
};

Status read_shape(Cursor& c, ShapeFields& shape) {
  if (*c.p != '{') return Status::kUnusual;
  ++c.p;
  c.skip_ws();
  if (c.done()) return Status::kMore;
  if (*c.p == '}') {
    ++c.p;
    return Status::kOk;
  }
  while (true) {
    std::string_view key;
    if (const Status s = read_key(c, key); s != Status::kOk) return s;
    const int f = shape_field(key);
    if (f < 0 || shape.has(f)) return Status::kUnusual;
    shape.present |= 1u << f;
    if (const Status s = read_uint(c, shape.value[f]); s != Status::kOk) return s;
    bool closed = false;
    if (const Status s = after_item(c, '}', closed); s != Status::kOk) return s;
    if (closed) return Status::kOk;
  }
}

// Reads an array, calling `element` at the start of each element.
template <typename Element>
Status read_array(Cursor& c, Element element) {
  if (*c.p != '[') return Status::kUnusual;
  ++c.p;
  c.skip_ws();
  if (c.done()) return Status::kMore;
  if (*c.p == ']') {
    ++c.p;
    return Status::kOk;
  }
  while (true) {
    if (const Status s = element(); s != Status::kOk) return s;
    bool closed = false;
    if (const Status s = after_item(c, ']', closed); s != Status::kOk) return s;
    if (closed) return Status::kOk;
  }
}

Status read_string_value(Cursor& c, std::string& out) {
  return *c.p == '"' ? read_string(c, out) : Status::kUnusual;
}

// One alloc entry: exactly a non-empty "buffer" and a "bytes" in [1, kMaxTransferBytes].
Status read_alloc(Cursor& c, BufferAlloc& alloc) {
  if (*c.p != '{') return Status::kUnusual;
  ++c.p;
  bool buffer = false;
  bool bytes = false;
  while (true) {
    std::string_view key;
    if (const Status s = read_key(c, key); s != Status::kOk) return s;
    if (key == "buffer" && !buffer) {
      buffer = true;
      if (const Status s = read_string_value(c, alloc.buffer); s != Status::kOk) return s;
    } else if (key == "bytes" && !bytes) {
      bytes = true;
      if (const Status s = read_uint(c, alloc.bytes); s != Status::kOk) return s;
    } else {
      return Status::kUnusual;
    }
    bool closed = false;
    if (const Status s = after_item(c, '}', closed); s != Status::kOk) return s;
    if (closed) break;
  }
  const bool ok = buffer && bytes && !alloc.buffer.empty() && alloc.bytes >= 1 &&
                  alloc.bytes <= kMaxTransferBytes;
  return ok ? Status::kOk : Status::kUnusual;
}

// The text last interned, and its interned form: consecutive commands mostly share a layer and a
// location, so most lookups in the pool are skipped.
class LastInterned {
 public:
  InternedString get(const std::string& text) {
    if (text != text_) {
      text_ = text;
      interned_ = InternedString(text);
    }
    return interned_;
  }

 private:
  std::string text_;
  InternedString interned_;
};

// A command as read, before it is checked.
struct RawCommand {
  std::uint32_t keys = 0;
  std::string engine;
  std::string op;
  std::uint64_t slice = 0;
  std::uint64_t bytes = 0;
  std::uint64_t program = 0;
  ShapeFields shape;
  std::vector<std::string> deps;
  std::size_t dep_count = 0;  // deps[0, dep_count) are this command's: the strings are reused
  std::string layer;
  std::string loc;
  Command cmd;
  LastInterned last_layer;  // kept across commands
  LastInterned last_loc;

  void reset() {
    keys = 0;
    slice = bytes = program = 0;
    shape = {};
    dep_count = 0;
    layer.clear();
    loc.clear();
    cmd = Command{};
  }
};

Status read_member(Cursor& c, std::uint32_t key, RawCommand& raw) {
  Command& cmd = raw.cmd;
  switch (key) {
    case kId:
      return read_string_value(c, cmd.id);
    case kEngine:
      return read_string_value(c, raw.engine);
    case kOp:
      return read_string_value(c, raw.op);
    case kLayer:
      return read_string_value(c, raw.layer);
    case kLoc:
      return read_string_value(c, raw.loc);
    case kSlice:
      return read_uint(c, raw.slice);
    case kBytes:
      return read_uint(c, raw.bytes);
    case kProgram:
      return read_uint(c, raw.program);
    case kShape:
      return read_shape(c, raw.shape);
    case kDeps:
      return read_array(c, [&] {
        if (raw.dep_count == raw.deps.size()) raw.deps.emplace_back();
        return read_string_value(c, raw.deps[raw.dep_count++]);
      });
    case kAlloc:
      return read_array(c, [&] { return read_alloc(c, cmd.alloc.emplace_back()); });
    case kFree:
      return read_array(c, [&] {
        const Status s = read_string_value(c, cmd.free.emplace_back());
        return s == Status::kOk && cmd.free.back().empty() ? Status::kUnusual : s;
      });
    default:
      return Status::kUnusual;
  }
}

// Reads the command object at c.p ('{') into raw, without checking it.
Status read_command(Cursor& c, RawCommand& raw) {
  ++c.p;
  c.skip_ws();
  if (c.done()) return Status::kMore;
  if (*c.p == '}') return Status::kUnusual;  // no id, no engine
  while (true) {
    std::string_view name;
    if (const Status s = read_key(c, name); s != Status::kOk) return s;
    const std::uint32_t key = command_key(name);
    if (key == 0 || (raw.keys & key) != 0) return Status::kUnusual;
    raw.keys |= key;
    if (const Status s = read_member(c, key, raw); s != Status::kOk) return s;
    bool closed = false;
    if (const Status s = after_item(c, '}', closed); s != Status::kOk) return s;
    if (closed) return Status::kOk;
  }
}

// The shape parse_shape makes of `fields` for `op`, or nullopt where it would record a problem.
std::optional<Shape> checked_shape(const OpInfo& op, const ShapeFields& f) {
  std::uint32_t allowed = 1u << kBatch;
  std::uint32_t required = 0;
  std::uint32_t may_be_zero = 0;  // pads
  const auto bit = [](int field) { return 1u << field; };
  const std::uint32_t window =
      bit(kKernelH) | bit(kKernelW) | bit(kStrideH) | bit(kStrideW) | bit(kPadH) | bit(kPadW);
  const std::uint32_t kernel = bit(kKernelH) | bit(kKernelW);
  const bool array_conv = op.shape == ShapeKind::kConv && op.unit == EngineKind::kArray;
  switch (op.shape) {
    case ShapeKind::kGemm:
      required = bit(kM) | bit(kN) | bit(kK);
      break;
    case ShapeKind::kConv:
      required = bit(kInH) | bit(kInW) | bit(kInC) | kernel | (array_conv ? bit(kOutC) : 0);
      allowed |= window | bit(kOutC) | (array_conv ? bit(kGroups) : 0);
      may_be_zero = bit(kPadH) | bit(kPadW);
      break;
    case ShapeKind::kPool:
      required = bit(kInH) | bit(kInW) | bit(kChannels) | kernel;
      allowed |= window;
      may_be_zero = bit(kPadH) | bit(kPadW);
      break;
    case ShapeKind::kGlobalPool:
      required = bit(kInH) | bit(kInW) | bit(kChannels);
      break;
    case ShapeKind::kElements:
      required = bit(kElements);
      break;
  }
  allowed |= required;
  if ((f.present & required) != required || (f.present & ~allowed) != 0) return std::nullopt;
  for (int i = 0; i < kShapeFields; ++i) {
    if (!f.has(i)) continue;
    const std::uint64_t max = i == kElements ? kMaxTransferBytes : kMaxDimension;
    const std::uint64_t min = (may_be_zero & bit(i)) != 0 ? 0 : 1;
    if (f.value[i] < min || f.value[i] > max) return std::nullopt;
  }
  const auto get = [&](int field, std::uint64_t fallback) {
    return f.has(field) ? f.value[field] : fallback;
  };
  if (op.shape == ShapeKind::kGemm) {
    return GemmShape{get(kBatch, 1), f.value[kM], f.value[kN], f.value[kK]};
  }
  if (op.shape == ShapeKind::kElements) return ElementsShape{f.value[kElements]};
  ConvShape c;
  c.batch = get(kBatch, 1);
  c.in_h = f.value[kInH];
  c.in_w = f.value[kInW];
  if (op.shape == ShapeKind::kConv) {
    c.in_c = f.value[kInC];
    c.out_c = get(kOutC, c.in_c);
  } else {
    c.in_c = c.out_c = f.value[kChannels];
  }
  if (op.shape == ShapeKind::kGlobalPool) {
    c.kernel_h = c.in_h;
    c.kernel_w = c.in_w;
  } else {
    c.kernel_h = f.value[kKernelH];
    c.kernel_w = f.value[kKernelW];
    c.stride_h = get(kStrideH, 1);
    c.stride_w = get(kStrideW, 1);
    c.pad_h = get(kPadH, 0);
    c.pad_w = get(kPadW, 0);
  }
  if (array_conv) {
    c.groups = get(kGroups, 1);
    if (c.in_c % c.groups != 0 || c.out_c % c.groups != 0) return std::nullopt;
  } else if (op.shape == ShapeKind::kConv && c.out_c % c.in_c != 0) {
    return std::nullopt;
  }
  if (c.in_h + 2 * c.pad_h < c.kernel_h || c.in_w + 2 * c.pad_w < c.kernel_w) return std::nullopt;
  return c;
}

// Fills raw.cmd as parse_command would from the same command, if parse_command would record no
// problem for it; false otherwise.
bool check_command(RawCommand& raw, const HwConfig& config) {
  Command& cmd = raw.cmd;
  if ((raw.keys & (kId | kEngine)) != (kId | kEngine)) return false;
  std::uint32_t allowed = kId | kEngine | kDeps | kLayer | kLoc | kProgram | kAlloc | kFree;
  if (raw.engine == "SLICE") {
    allowed |= kSlice | kOp | kShape;
    if ((raw.keys & (kSlice | kOp | kShape)) != (kSlice | kOp | kShape)) return false;
    if (raw.slice >= config.slices.count) return false;
    cmd.slice = static_cast<std::uint32_t>(raw.slice);
    cmd.op = find_op(raw.op);
    if (cmd.op == op_table().size()) return false;
    const OpInfo& op = op_table()[cmd.op];
    std::optional<Shape> shape = checked_shape(op, raw.shape);
    if (!shape) return false;
    cmd.shape = *shape;
    cmd.engine = op.unit;
  } else if (raw.engine == "HOST") {
    allowed |= kOp | kShape;
    if ((raw.keys & kShape) == 0 || raw.shape.present != 1u << kElements) return false;
    if ((raw.keys & kOp) != 0 && raw.op != "Host") return false;
    if (raw.shape.value[kElements] > kMaxTransferBytes) return false;
    cmd.engine = EngineKind::kHost;
    cmd.elements = raw.shape.value[kElements];
  } else if (raw.engine == "DMA_IN" || raw.engine == "DMA_OUT") {
    allowed |= kBytes | kOp;
    if ((raw.keys & kBytes) == 0 || raw.bytes < 1 || raw.bytes > kMaxTransferBytes) return false;
    if ((raw.keys & kOp) != 0 && raw.op != raw.engine) return false;
    cmd.engine = raw.engine == "DMA_IN" ? EngineKind::kDmaIn : EngineKind::kDmaOut;
    cmd.bytes = raw.bytes;
  } else {
    return false;
  }
  if ((raw.keys & ~allowed) != 0) return false;
  cmd.layer = raw.last_layer.get(raw.layer);
  cmd.loc = raw.last_loc.get(raw.loc);
  return id_follows_convention(cmd.id, cmd.engine);
}

// Reads a whole schedule file; see read_schedule_fast.
class FastReader {
 public:
  FastReader(std::ifstream& in, CommandStream& stream, Json& root)
      : window_(in), stream_(stream), root_(root) {}

  FastReadResult read() {
    FastReadResult result;
    if (!window_.more(window_.begin())) return result;
    at_ = window_.begin();
    if (!step([&](Cursor& c) { return open_document(c); })) return result;
    bool commands_seen = false;
    while (!closed_) {
      std::string key;
      bool commands = false;
      if (!step([&](Cursor& c) { return member(c, key, commands); })) return result;
      if (commands) {
        commands_seen = true;
        if (!read_commands()) return result;
        if (!step([&](Cursor& c) { return after_member(c); })) return result;
      }
    }
    if (!commands_seen) return result;
    // Only whitespace may follow the document.
    while (true) {
      Cursor c{at_, window_.end()};
      c.skip_ws();
      if (!c.done()) return result;
      at_ = c.p;
      if (!window_.more(at_)) break;
      at_ = window_.begin();
    }
    if (window_.bad()) return result;
    result.read = true;
    result.exact_commands = exact_commands_;
    return result;
  }

 private:
  // Runs `piece` from at_ on, reading more of the file and starting it again while it runs past
  // the window. False when the fast reader cannot read the file.
  template <typename Piece>
  bool step(Piece piece) {
    while (true) {
      Cursor c{at_, window_.end()};
      const Status s = piece(c);
      if (s == Status::kOk) {
        at_ = c.p;
        return true;
      }
      if (s != Status::kMore || !window_.more(at_)) return false;
      at_ = window_.begin();
    }
  }

  Status open_document(Cursor& c) {
    c.skip_ws();
    if (c.done()) return Status::kMore;
    if (*c.p != '{') return Status::kBad;
    ++c.p;
    c.skip_ws();
    if (c.done()) return Status::kMore;
    if (*c.p == '}') return Status::kBad;  // no commands
    return Status::kOk;
  }

  // A top-level key and its value, and what follows it: the value of "commands", when it is an
  // array, is left to read_commands (at its first element); any other value goes into the
  // document as nlohmann parses its text.
  Status member(Cursor& c, std::string& key, bool& commands) {
    c.skip_ws();
    if (c.done()) return Status::kMore;
    if (*c.p != '"') return Status::kBad;
    if (const Status s = read_string(c, key); s != Status::kOk) return s;
    c.skip_ws();
    if (c.done()) return Status::kMore;
    if (*c.p != ':') return Status::kBad;
    ++c.p;
    c.skip_ws();
    if (c.done()) return Status::kMore;
    if (root_.contains(key)) return Status::kBad;  // repeated: the exact path knows which counts
    if (key == "commands") {
      if (*c.p != '[') return Status::kBad;
      ++c.p;
      commands = true;
      root_[key] = Json::array();
      return Status::kOk;
    }
    const char* start = c.p;
    if (const Status s = skip_value(c); s != Status::kOk) return s;
    std::optional<Json> value = parse_text(start, c.p);
    if (!value) return Status::kBad;
    if (const Status s = after_member(c); s != Status::kOk) return s;
    root_[key] = std::move(*value);
    return Status::kOk;
  }

  // After a top-level member: the next one or the end of the document.
  Status after_member(Cursor& c) {
    bool closed = false;
    const Status s = after_item(c, '}', closed);
    if (s != Status::kOk) return s == Status::kMore ? s : Status::kBad;
    closed_ = closed;
    return Status::kOk;
  }

  bool read_commands() {
    bool first = true;
    bool closed = false;
    while (!closed) {
      if (!step([&](Cursor& c) { return command(c, first, closed); })) return false;
      first = false;
    }
    return true;
  }

  // One element of "commands" and what follows it (the next one or the end of the array).
  Status command(Cursor& c, bool first, bool& closed) {
    c.skip_ws();
    if (c.done()) return Status::kMore;
    if (first && *c.p == ']') {
      ++c.p;
      closed = true;
      return Status::kOk;
    }
    const char* start = c.p;
    raw_.reset();
    Status s = *c.p == '{' ? read_command(c, raw_) : Status::kUnusual;
    if (s == Status::kMore || s == Status::kBad) return s;
    if (s == Status::kOk && check_command(raw_, stream_.config())) {
      s = after_item(c, ']', closed);
      if (s != Status::kOk) return s == Status::kMore ? s : Status::kBad;
      stream_.add_checked(std::move(raw_.cmd), raw_.program, raw_.deps.data(), raw_.dep_count);
      return Status::kOk;
    }
    // The exact path checks this command, as a JSON value parsed from its text.
    c.p = start;
    if (const Status skip = skip_value(c); skip != Status::kOk) return skip;
    const std::optional<Json> value = parse_text(start, c.p);
    if (!value) return Status::kBad;
    s = after_item(c, ']', closed);
    if (s != Status::kOk) return s == Status::kMore ? s : Status::kBad;
    stream_.add(*value);
    ++exact_commands_;
    return Status::kOk;
  }

  Window window_;
  CommandStream& stream_;
  Json& root_;
  const char* at_ = nullptr;  // where the next piece starts
  bool closed_ = false;       // the document's closing brace was read
  RawCommand raw_;
  std::size_t exact_commands_ = 0;
};

}  // namespace

FastReadResult read_schedule_fast(const std::string& path, CommandStream& stream, Json& root) {
  if (profiler::input_file_problem(path)) return {};
  std::ifstream in(path, std::ios::binary);
  if (!in) return {};
  FastReader reader(in, stream, root);
  return reader.read();
}

}  // namespace npusim::detail
