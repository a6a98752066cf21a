#include "net/json_in.h"

#include <fmt/format.h>

#include "util/error.h"

namespace coldstart::net {

JsonIn::JsonIn(const nlohmann::json& j, std::string what)
    : j_(&j), what_(std::make_shared<const std::string>(std::move(what))) {}

void JsonIn::fail(const std::string& message) const { throw InputError(*what_ + ": " + where() + ": " + message); }

const JsonIn& JsonIn::object() const {
  if (!j_->is_object()) fail("expected an object");
  return *this;
}

JsonIn JsonIn::at(const char* key) const {
  object();
  auto it = j_->find(key);
  JsonIn member(it == j_->end() ? nullptr : &*it, what_, path_.empty() ? key : path_ + "." + key);
  if (!member.j_) member.fail("missing");
  return member;
}

std::optional<JsonIn> JsonIn::find(const char* key) const {
  object();
  auto it = j_->find(key);
  if (it == j_->end() || it->is_null()) return std::nullopt;
  return JsonIn(&*it, what_, path_.empty() ? key : path_ + "." + key);
}

std::vector<JsonIn> JsonIn::array() const {
  if (!j_->is_array()) fail("expected an array");
  std::vector<JsonIn> out;
  for (size_t i = 0; i < j_->size(); ++i) out.push_back(JsonIn(&(*j_)[i], what_, fmt::format("{}[{}]", path_, i)));
  return out;
}

std::string JsonIn::str() const {
  if (!j_->is_string()) fail("expected a string");
  return j_->get<std::string>();
}

bool JsonIn::boolean() const {
  if (!j_->is_boolean()) fail("expected true or false");
  return j_->get<bool>();
}

int64_t JsonIn::integer(int64_t lo, int64_t hi) const {
  if (j_->is_number_unsigned() && j_->get<uint64_t>() > static_cast<uint64_t>(INT64_MAX)) fail("expected an integer");
  if (!j_->is_number_integer()) fail("expected an integer");
  const int64_t v = j_->get<int64_t>();
  if (v < lo || v > hi) fail(fmt::format("{} is outside {}..{}", v, lo, hi));
  return v;
}

double JsonIn::number() const {
  if (!j_->is_number()) fail("expected a number");
  return j_->get<double>();
}

std::vector<std::string> JsonIn::strings() const {
  std::vector<std::string> out;
  for (const JsonIn& e : array()) out.push_back(e.str());
  return out;
}

void JsonIn::get(const char* key, std::string& out) const {
  if (auto v = find(key)) out = v->str();
}
void JsonIn::get(const char* key, bool& out) const {
  if (auto v = find(key)) out = v->boolean();
}
void JsonIn::get(const char* key, int& out) const {
  if (auto v = find(key)) out = static_cast<int>(v->integer());
}
void JsonIn::get(const char* key, std::vector<std::string>& out) const {
  if (auto v = find(key)) out = v->strings();
}
void JsonIn::get(const char* key, std::vector<int>& out) const {
  if (auto v = find(key)) {
    out.clear();
    for (const JsonIn& e : v->array()) out.push_back(static_cast<int>(e.integer()));
  }
}

}  // namespace coldstart::net
