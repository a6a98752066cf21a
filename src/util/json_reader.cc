#include "util/json_reader.h"

#include <charconv>
#include <cmath>
#include <cstdlib>
#include <cstring>

namespace coldstart {

void JsonShapeError::within(std::string_view key) {
  std::string step(key);
  if (!path_.empty() && path_[0] != '[') step.append(1, '.');
  path_ = step + path_;
  text_ = path_ + ": " + reason_;
}

void JsonShapeError::within(size_t index) {
  std::string step(1, '[');
  step.append(std::to_string(index)).append(1, ']');
  if (!path_.empty() && path_[0] != '[') step.append(1, '.');
  path_ = step + path_;
  text_ = path_ + ": " + reason_;
}

void JsonReader::syntax(const char* what) const {
  throw JsonSyntaxError("at byte " + std::to_string(p_ - begin_) + ": " + what);
}

JsonReader::Kind JsonReader::peek() {
  switch (next()) {
    case '{': return Kind::object;
    case '[': return Kind::array;
    case '"': return Kind::string;
    case 't':
    case 'f': return Kind::boolean;
    case 'n': return Kind::null;
    case '-':
    case '0':
    case '1':
    case '2':
    case '3':
    case '4':
    case '5':
    case '6':
    case '7':
    case '8':
    case '9': return Kind::number;
    case '\0': syntax(p_ < end_ ? "a NUL byte" : "the text ends where a value belongs");
    default: syntax("not the start of a value");
  }
}

namespace {
bool literal(const char*& p, const char* end, std::string_view word) {
  if (static_cast<size_t>(end - p) < word.size() || std::memcmp(p, word.data(), word.size()) != 0) return false;
  p += word.size();
  return true;
}
}  // namespace

bool JsonReader::null() {
  if (next() != 'n') return false;
  if (!literal(p_, end_, "null")) syntax("not null");
  return true;
}

bool JsonReader::boolean() {
  char c = next();
  if (c == 't' && literal(p_, end_, "true")) return true;
  if (c == 'f' && literal(p_, end_, "false")) return false;
  if (c == 't' || c == 'f') syntax("not true or false");
  wrong("true or false");
}

double JsonReader::real() {
  if (peek() != Kind::number) wrong("a number");
  Number n = number();
  return n.kind == Number::f64 ? n.d : n.kind == Number::i64 ? static_cast<double>(n.i) : static_cast<double>(n.u);
}

// -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?; integers that fit 64 bits stay integers, as nlohmann keeps them.
JsonReader::Number JsonReader::number() {
  const char* start = p_;
  bool negative = *p_ == '-';
  if (negative) ++p_;
  auto digit = [&] { return p_ < end_ && *p_ >= '0' && *p_ <= '9'; };
  if (!digit()) syntax("a '-' without digits");
  uint64_t mag = 0;
  bool overflow = false;
  if (*p_ == '0') {
    ++p_;
  } else {
    while (digit()) {
      unsigned d = static_cast<unsigned>(*p_ - '0');
      if (mag > (UINT64_MAX - d) / 10) overflow = true;
      mag = mag * 10 + d;
      ++p_;
    }
  }
  bool integral = true;
  if (p_ < end_ && *p_ == '.') {
    ++p_;
    if (!digit()) syntax("a '.' without digits after it");
    while (digit()) ++p_;
    integral = false;
  }
  if (p_ < end_ && (*p_ == 'e' || *p_ == 'E')) {
    ++p_;
    if (p_ < end_ && (*p_ == '+' || *p_ == '-')) ++p_;
    if (!digit()) syntax("an exponent without digits");
    while (digit()) ++p_;
    integral = false;
  }
  Number n{};
  if (integral && !overflow) {
    if (!negative) {
      n.kind = Number::u64, n.u = mag;
      if (mag <= static_cast<uint64_t>(INT64_MAX)) n.kind = Number::i64, n.i = static_cast<int64_t>(mag);
      return n;
    }
    if (mag <= uint64_t{1} << 63) {
      n.kind = Number::i64, n.i = mag == uint64_t{1} << 63 ? INT64_MIN : -static_cast<int64_t>(mag);
      return n;
    }
  }
  n.kind = Number::f64;
  auto [end, ec] = std::from_chars(start, p_, n.d);
  if (ec == std::errc::result_out_of_range) {
    // from_chars leaves the value alone on underflow too; strtod gives 0 there and infinity on overflow.
    std::string copy(start, p_);
    n.d = std::strtod(copy.c_str(), nullptr);
  } else if (ec != std::errc() || end != p_) {
    syntax("a number that does not parse");
  }
  if (!std::isfinite(n.d)) syntax("a number too large for a double");
  return n;
}

namespace {
int hex(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}
void append_utf8(std::string& out, uint32_t cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}
// The length of the well-formed UTF-8 sequence at p (RFC 3629: no overlong forms, no surrogates, at most U+10FFFF),
// 0 where it is not one.
size_t utf8_length(const unsigned char* p, const unsigned char* end) {
  auto cont = [&](size_t i, unsigned char lo = 0x80, unsigned char hi = 0xBF) {
    return p + i < end && p[i] >= lo && p[i] <= hi;
  };
  unsigned char c = p[0];
  if (c >= 0xC2 && c <= 0xDF) return cont(1) ? 2 : 0;
  if (c == 0xE0) return cont(1, 0xA0) && cont(2) ? 3 : 0;
  if ((c >= 0xE1 && c <= 0xEC) || c == 0xEE || c == 0xEF) return cont(1) && cont(2) ? 3 : 0;
  if (c == 0xED) return cont(1, 0x80, 0x9F) && cont(2) ? 3 : 0;
  if (c == 0xF0) return cont(1, 0x90) && cont(2) && cont(3) ? 4 : 0;
  if (c >= 0xF1 && c <= 0xF3) return cont(1) && cont(2) && cont(3) ? 4 : 0;
  if (c == 0xF4) return cont(1, 0x80, 0x8F) && cont(2) && cont(3) ? 4 : 0;
  return 0;
}
}  // namespace

std::string_view JsonReader::scan_string(std::string& scratch) {
  ++p_;  // the opening quote
  const char* start = p_;
  // The common case: printable ASCII up to the closing quote, returned in place.
  while (p_ < end_) {
    unsigned char c = static_cast<unsigned char>(*p_);
    if (c == '"') return std::string_view(start, static_cast<size_t>(p_++ - start));
    if (c == '\\' || c < 0x20 || c >= 0x80) break;
    ++p_;
  }
  scratch.assign(start, p_);
  while (p_ < end_) {
    unsigned char c = static_cast<unsigned char>(*p_);
    if (c == '"') {
      ++p_;
      return scratch;
    }
    if (c < 0x20) syntax("a control character inside a string");
    if (c >= 0x80) {
      size_t n = utf8_length(reinterpret_cast<const unsigned char*>(p_), reinterpret_cast<const unsigned char*>(end_));
      if (n == 0) syntax("a string that is not UTF-8");
      scratch.append(p_, n);
      p_ += n;
      continue;
    }
    if (c != '\\') {
      scratch += static_cast<char>(c);
      ++p_;
      continue;
    }
    if (++p_ >= end_) break;
    switch (*p_++) {
      case '"': scratch += '"'; break;
      case '\\': scratch += '\\'; break;
      case '/': scratch += '/'; break;
      case 'b': scratch += '\b'; break;
      case 'f': scratch += '\f'; break;
      case 'n': scratch += '\n'; break;
      case 'r': scratch += '\r'; break;
      case 't': scratch += '\t'; break;
      case 'u': {
        auto unit = [&]() -> uint32_t {
          if (end_ - p_ < 4) syntax("a \\u escape cut short");
          int v = 0;
          for (int i = 0; i < 4; ++i) {
            int h = hex(*p_++);
            if (h < 0) syntax("a \\u escape that is not hexadecimal");
            v = v * 16 + h;
          }
          return static_cast<uint32_t>(v);
        };
        uint32_t cp = unit();
        if (cp >= 0xDC00 && cp <= 0xDFFF) syntax("a low surrogate without a high one before it");
        if (cp >= 0xD800 && cp <= 0xDBFF) {
          if (end_ - p_ < 2 || p_[0] != '\\' || p_[1] != 'u') syntax("a high surrogate without a low one after it");
          p_ += 2;
          uint32_t lo = unit();
          if (lo < 0xDC00 || lo > 0xDFFF) syntax("a high surrogate without a low one after it");
          cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
        }
        append_utf8(scratch, cp);
        break;
      }
      default: --p_, syntax("an unknown escape");
    }
  }
  syntax("the text ends inside a string");
}

std::string_view JsonReader::string() {
  if (peek() != Kind::string) wrong("a string");
  return scan_string(scratch_);
}

void JsonReader::string(std::string& out) {
  std::string_view s = string();
  out.assign(s.data(), s.size());
}

void JsonReader::open(char bracket) {
  ++p_;
  stack_.push_back(bracket);
}

std::string_view JsonReader::key() {
  if (next() != '"') syntax("a member without a string key");
  std::string_view k = scan_string(key_scratch_);
  if (next() != ':') syntax("a key without ':' after it");
  ++p_;
  return k;
}

bool JsonReader::closes(char close) {
  if (next() != close) return false;
  ++p_;
  stack_.pop_back();
  return true;
}

bool JsonReader::more(char close) {
  char c = next();
  if (c == ',') {
    ++p_;
    return true;
  }
  if (c != close)
    syntax(c != '\0'   ? "a value without ',' or a closing bracket after it"
           : p_ < end_ ? "a NUL byte inside an object or array"
                       : "the text ends inside an object or array");
  ++p_;
  stack_.pop_back();
  return false;
}

bool JsonReader::open_value() {
  switch (peek()) {
    case Kind::object:
    case Kind::array: {
      char open_c = *p_, close_c = open_c == '{' ? '}' : ']';
      open(open_c);
      if (closes(close_c)) return true;
      if (open_c == '{') key();
      return false;
    }
    case Kind::string: scan_string(scratch_); return true;
    case Kind::number: number(); return true;
    case Kind::boolean: boolean(); return true;
    case Kind::null: null(); return true;
  }
  return true;
}

bool JsonReader::after_value(size_t depth) {
  while (stack_.size() > depth) {
    char c = next();
    if (c == ',') {
      ++p_;
      if (stack_.back() == '{') key();
      return false;
    }
    if (c != (stack_.back() == '{' ? '}' : ']'))
      syntax(c != '\0'   ? "a value without ',' or a closing bracket after it"
             : p_ < end_ ? "a NUL byte inside an object or array"
                         : "the text ends inside an object or array");
    ++p_;
    stack_.pop_back();
  }
  return true;
}

void JsonReader::skip() {
  const size_t base = stack_.size();
  for (;;) {
    if (!open_value()) continue;  // inside a new container: its first value is due
    if (after_value(base)) return;
  }
}

void JsonReader::recover(size_t depth) {
  while (!after_value(depth)) skip();
}

// A NUL byte ends the text, as it does for nlohmann's parser.
void JsonReader::finish() {
  ws();
  // A NUL is text too: bytes after one are not the end of the file (a C string's reader would stop there).
  if (p_ != end_) syntax(*p_ == '\0' ? "a NUL byte after the value" : "more text after the value");
}

void JsonReader::wrong(const char* expected) {
  Kind found = peek();
  skip();
  throw JsonShapeError(std::string("expected ") + expected + ", found " + kind_name(found));
}

const char* kind_name(JsonReader::Kind k) {
  switch (k) {
    case JsonReader::Kind::null: return "null";
    case JsonReader::Kind::boolean: return "true or false";
    case JsonReader::Kind::number: return "a number";
    case JsonReader::Kind::string: return "a string";
    case JsonReader::Kind::array: return "an array";
    case JsonReader::Kind::object: return "an object";
  }
  return "?";
}

}  // namespace coldstart
