#include "util/json_reader.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace coldstart {
namespace {

// Skips one value and requires the end: true when the text is one JSON value.
bool accepts(std::string_view text) {
  try {
    JsonReader in(text);
    in.skip();
    in.finish();
    return true;
  } catch (const JsonSyntaxError&) {
    return false;
  }
}

std::string shape_error(std::string_view text) {
  JsonReader in(text);
  try {
    in.object([&](std::string_view key) {
      if (key == "a") {
        in.array([&](size_t) {
          in.object([&](std::string_view k) {
            if (k == "n") return (void)in.integer<int>();
            in.skip();
          });
        });
        return;
      }
      in.skip();
    });
  } catch (const JsonShapeError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

// The same texts are JSON as for nlohmann's parser, which wrote every file the reader reads.
TEST(JsonReader, AcceptsWhatNlohmannAccepts) {
  const char* texts[] = {"{}", "[]", " {\"a\": [1, -2, 3.5e-3, true, false, null, \"x\"]} ", "0", "-0", "1E+2",
                         "\"\\u00e9\\ud83d\\ude00\"", "\"caf\xc3\xa9\"", "18446744073709551616", "-9223372036854775809",
                         "1e-400", "[[[[[[]]]]]]",
                         // and not
                         "", "{", "[1,]", "{\"a\":1,}", "{\"a\" 1}", "{1:2}", "01", "1.", ".5", "-", "1e", "+1", "tru",
                         "nul", "[1 2]", "\"\\x\"", "\"\\ud800\"", "\"\\udc00\"", "\"a\nb\"", "\"\xc3\"",
                         "\"\xed\xa0\x80\"", "\"\xc0\xaf\"", "1e400", "{} {}", "[1]]", "\"abc", "{\"a\":}",
                         "\xef\xbb\xbf{}", "[\"\\u12\"]", "nan", "[-]"};
  for (const char* t : texts) EXPECT_EQ(accepts(t), nlohmann::json::accept(t)) << t;
}

TEST(JsonReader, ReadsValuesAsNlohmannConvertsThem) {
  JsonReader in(R"([1, -7, 3.9, 18446744073709551615, "a\tb\u00e9", true, null])");
  std::vector<double> got;
  int64_t i = 0;
  uint64_t u = 0;
  std::string s;
  std::optional<int> o = 3;
  in.array([&](size_t k) {
    if (k == 0) got.push_back(in.real());
    if (k == 1) i = in.integer<int64_t>();
    if (k == 2) got.push_back(in.integer<int>());  // a fraction is cut, as get<int>() cuts it
    if (k == 3) u = in.integer<uint64_t>();
    if (k == 4) in.string(s);
    if (k == 5) got.push_back(in.boolean());
    if (k == 6) read_value(in, o);
  });
  in.finish();
  EXPECT_EQ(got, (std::vector<double>{1, 3, 1}));
  EXPECT_EQ(i, -7);
  EXPECT_EQ(u, UINT64_MAX);
  EXPECT_EQ(s, "a\tb\xc3\xa9");
  EXPECT_FALSE(o);
}

TEST(JsonReader, AWrongShapeNamesWhereAndWhatWasFound) {
  EXPECT_EQ(shape_error(R"({"b": 1, "a": [{"n": 1}, {"x": [], "n": "one"}]})"),
            "a[1].n: expected a number, found a string");
  EXPECT_EQ(shape_error(R"({"a": [{"n": 3000000000}]})"), "a[0].n: a number out of range");
  EXPECT_EQ(shape_error(R"({"a": {"n": 1}})"), "a: expected an array, found an object");
  EXPECT_EQ(shape_error(R"([])"), "expected an object, found an array");
  EXPECT_EQ(shape_error(R"({"a": [{"n": 1}]})"), "");
}

// After a wrong shape deep inside, reading goes on at the top: a file's schema is said before its shape.
TEST(JsonReader, RecoversToTheTopLevelAfterAWrongShape) {
  JsonReader in(R"({"x": [{"y": {"z": "deep", "w": [1, 2]}, "v": 1}, 2], "schema": "s"})");
  std::string schema, error;
  in.object([&](std::string_view key) {
    try {
      if (key == "schema") return in.string(schema);
      in.array([&](size_t) {
        in.object([&](std::string_view) { in.object([&](std::string_view) { (void)in.integer<int>(); }); });
      });
    } catch (JsonShapeError& e) {
      e.within(key);
      error = e.what();
      in.recover(1);
    }
  });
  in.finish();
  EXPECT_EQ(schema, "s");
  EXPECT_EQ(error, "x[0].y.z: expected a number, found a string");
}

TEST(JsonReader, SyntaxErrorsSayWhere) {
  JsonReader in(R"({"a": [1, 2)");
  try {
    in.skip();
    FAIL();
  } catch (const JsonSyntaxError& e) {
    EXPECT_STREQ(e.what(), "at byte 11: the text ends inside an object or array");
  }
}

}  // namespace coldstart
