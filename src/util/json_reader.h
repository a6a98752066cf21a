// JSON text in, typed values out, with no tree in between: a pull reader over one buffer. A results.json of 1,000
// trials x 8 ranks is some 18 MB and two million values; a tree of it (nlohmann::json) costs an allocation per value
// and per key to build, a walk per field to convert, and as much again to free. The model's readers
// (model/result_read.cc) ask for what they expect, field by field, and skip what they do not know.
//
// The grammar is RFC 8259's, as strict as nlohmann's parser: the same texts are JSON or not (strings must be UTF-8;
// numbers that overflow a double are an error). Two kinds of error: the text is not JSON (JsonSyntaxError), or it is
// JSON of another shape than asked (JsonShapeError, which names where: "trials[3].ranks[0].rank: ...").
#pragma once
#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

namespace coldstart {

class JsonSyntaxError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class JsonShapeError : public std::exception {
 public:
  explicit JsonShapeError(std::string reason) : reason_(std::move(reason)), text_(reason_) {}
  // Called on the way out, innermost first: the key or index the failing value was under.
  void within(std::string_view key);
  void within(size_t index);
  const char* what() const noexcept override { return text_.c_str(); }

 private:
  std::string reason_, path_, text_;
};

class JsonReader {
 public:
  enum class Kind { null, boolean, number, string, array, object };
  // A UTF-8 byte order mark at the start is skipped, as nlohmann skips it.
  explicit JsonReader(std::string_view text) : p_(text.data()), begin_(text.data()), end_(text.data() + text.size()) {
    if (text.starts_with("\xEF\xBB\xBF")) p_ += 3;
  }

  Kind peek();  // the kind of the next value (a syntax error where none starts)
  bool null();  // consumes a null if one is next
  bool boolean();
  double real();
  template <class T>
  T integer();                // any JSON number in T's range (a fraction is cut, as a C++ cast does)
  std::string_view string();  // decoded; valid until the next call
  void string(std::string& out);

  // An object: on_field(key) is called for each member and reads (or skips) its value.
  template <class F>
  void object(F&& on_field);
  // An array: on_item(index) is called for each element and reads (or skips) it.
  template <class F>
  void array(F&& on_item);
  void skip();    // any one value
  void finish();  // the text must end here (whitespace aside)

  // After a JsonShapeError (the value that failed is always consumed whole): skip the rest of every container
  // deeper than `depth`, so that reading can go on in the one at `depth` (1: the top-level object).
  void recover(size_t depth);
  // Consumes the next value and throws a JsonShapeError saying it is not `expected` ("a number").
  [[noreturn]] void wrong(const char* expected);
  // Throws a JsonShapeError about the value just read.
  [[noreturn]] static void reject(std::string reason) { throw JsonShapeError(std::move(reason)); }

 private:
  struct Number {
    enum { i64, u64, f64 } kind;
    int64_t i;
    uint64_t u;
    double d;
  };
  [[noreturn]] void syntax(const char* what) const;
  void ws() {
    while (p_ < end_ && (*p_ == ' ' || *p_ == '\n' || *p_ == '\r' || *p_ == '\t')) ++p_;
  }
  char next() {  // the next significant character, not consumed ('\0' at the end)
    ws();
    return p_ < end_ ? *p_ : '\0';
  }
  Number number();
  std::string_view scan_string(std::string& scratch);  // at '"'; decodes into scratch only when escaped
  void open(char bracket);                             // consumes '{' or '['
  std::string_view key();                              // a member's key and its ':'
  bool closes(char close);  // right after the opening bracket: the closing one (an empty container) is consumed
  bool more(char close);    // after a member or element: ',' (true) or the closing bracket (false)
  bool open_value();        // skip's step: a scalar or empty container whole (true), or a container's start (false)
  bool after_value(size_t depth);  // consumes ',' or closing brackets down to depth; false when a value is due

  const char* p_;
  const char* begin_;
  const char* end_;
  std::vector<char> stack_;  // the open containers, '{' or '['
  std::string scratch_, key_scratch_;
};

template <class T>
T JsonReader::integer() {
  if (peek() != Kind::number) wrong("a number");
  Number n = number();
  using L = std::numeric_limits<T>;
  switch (n.kind) {
    case Number::i64:
      if (n.i >= static_cast<int64_t>(L::min()) &&
          (n.i < 0 || static_cast<uint64_t>(n.i) <= static_cast<uint64_t>(L::max())))
        return static_cast<T>(n.i);
      break;
    case Number::u64:
      if (n.u <= static_cast<uint64_t>(L::max())) return static_cast<T>(n.u);
      break;
    case Number::f64:
      // [min, max + 1): the doubles whose truncation fits.
      if (n.d >= static_cast<double>(L::min()) && n.d < static_cast<double>(L::max()) + 1.0) return static_cast<T>(n.d);
      break;
  }
  reject("a number out of range");
}

template <class F>
void JsonReader::object(F&& on_field) {
  if (peek() != Kind::object) wrong("an object");
  open('{');
  if (closes('}')) return;
  do {
    std::string_view k = key();
    std::string escaped;  // a key decoded into key_scratch_ would be overwritten by nested keys: kept for errors
    if (!k.empty() && k.data() == key_scratch_.data()) k = escaped = std::string(k);
    try {
      on_field(k);
    } catch (JsonShapeError& e) {
      e.within(k);
      throw;
    }
  } while (more('}'));
}

template <class F>
void JsonReader::array(F&& on_item) {
  if (peek() != Kind::array) wrong("an array");
  open('[');
  if (closes(']')) return;
  size_t i = 0;
  do {
    try {
      on_item(i);
    } catch (JsonShapeError& e) {
      e.within(i);
      throw;
    }
    ++i;
  } while (more(']'));
}

// Typed reading of the standard types; model types add overloads of read_value beside their writers.
inline void read_value(JsonReader& in, bool& v) { v = in.boolean(); }
inline void read_value(JsonReader& in, double& v) { v = in.real(); }
inline void read_value(JsonReader& in, std::string& v) { in.string(v); }
template <class T>
requires std::is_integral_v<T> &&(!std::is_same_v<T, bool>)void read_value(JsonReader& in, T& v) {
  v = in.integer<T>();
}
template <class T>
void read_value(JsonReader& in, std::optional<T>& v) {
  if (in.null()) {
    v.reset();
    return;
  }
  v.emplace();
  read_value(in, *v);
}
template <class T>
void read_value(JsonReader& in, std::vector<T>& v) {
  v.clear();
  in.array([&](size_t) { read_value(in, v.emplace_back()); });
}
template <class T>
void read_value(JsonReader& in, std::map<std::string, T>& v) {
  v.clear();
  in.object([&](std::string_view k) { read_value(in, v[std::string(k)]); });
}
// std::vector<bool> hands out proxies, not references.
inline void read_value(JsonReader& in, std::vector<bool>& v) {
  v.clear();
  in.array([&](size_t) { v.push_back(in.boolean()); });
}

// "a string", "an object", "true or false": a kind as an error message names what it found.
const char* kind_name(JsonReader::Kind k);

}  // namespace coldstart
