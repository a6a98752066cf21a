// Reading this room's JSON back (a recorded fact set, a doctor net report, a peer matrix): each value's type checked
// as it is taken, and whatever is malformed named by its path in one InputError ("peer matrix: cells[0][2].ok:
// expected true or false"). Unknown members are ignored, so newer files still open.
#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace coldstart::net {

class JsonIn {
 public:
  // `what` names the document in every error: "host facts", "peer matrix", "doctor net report".
  JsonIn(const nlohmann::json& j, std::string what);

  const nlohmann::json& raw() const { return *j_; }
  std::string where() const { return path_.empty() ? "(top)" : path_; }
  [[noreturn]] void fail(const std::string& message) const;

  const JsonIn& object() const;                       // this value, which must be an object
  JsonIn at(const char* key) const;                   // a member that must be there
  std::optional<JsonIn> find(const char* key) const;  // a member that may be missing (or null)
  std::vector<JsonIn> array() const;                  // the elements of an array
  bool is_null() const { return j_->is_null(); }

  std::string str() const;
  bool boolean() const;
  int64_t integer(int64_t lo = INT32_MIN, int64_t hi = INT32_MAX) const;
  double number() const;
  std::vector<std::string> strings() const;

  // An optional member into `out` when present; `out` keeps its value when the member is missing or null.
  void get(const char* key, std::string& out) const;
  void get(const char* key, bool& out) const;
  void get(const char* key, int& out) const;
  void get(const char* key, std::vector<std::string>& out) const;
  void get(const char* key, std::vector<int>& out) const;

 private:
  JsonIn(const nlohmann::json* j, std::shared_ptr<const std::string> what, std::string path)
      : j_(j), what_(std::move(what)), path_(std::move(path)) {}
  const nlohmann::json* j_;
  std::shared_ptr<const std::string> what_;
  std::string path_;
};

}  // namespace coldstart::net
