// The words every layer shares: launch models, collectives, NCCL log levels, workers, launchers, trial statuses. Each
// enum has one table of names, used for flags, JSON, tables and docs alike. JSON reading is strict: an unknown name
// is an error naming the value and the choices (nlohmann's NLOHMANN_JSON_SERIALIZE_ENUM would silently map it to the
// first enumerator).
#pragma once
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "util/json_reader.h"

// std::optional as null-or-value (this nlohmann version has no built-in support).
namespace nlohmann {
template <class T>
struct adl_serializer<std::optional<T>> {
  static void to_json(json& j, const std::optional<T>& v) { j = v ? json(*v) : json(); }
  static void from_json(const json& j, std::optional<T>& v) {
    if (j.is_null())
      v.reset();
    else
      v = j.get<T>();
  }
};
}  // namespace nlohmann

namespace coldstart {

// Specialised for each enum below: `static constexpr std::pair<E, std::string_view> names[]`.
template <class E>
struct EnumNames;

template <class E>
concept NamedEnum = requires {
  EnumNames<E>::names;
};

template <NamedEnum E>
std::string_view name_of(E e) {
  for (const auto& [v, n] : EnumNames<E>::names)
    if (v == e) return n;
  return "?";
}

template <NamedEnum E>
std::optional<E> enum_from(std::string_view s) {
  for (const auto& [v, n] : EnumNames<E>::names)
    if (n == s) return v;
  return std::nullopt;
}

// "a, b or c": the names, for error messages.
template <NamedEnum E>
std::string enum_choices() {
  std::string out;
  constexpr size_t n = std::size(EnumNames<E>::names);
  for (size_t i = 0; i < n; ++i)
    out += std::string(i == 0 ? "" : i + 1 == n ? " or " : ", ") + std::string(EnumNames<E>::names[i].second);
  return out;
}

// What a reader says of a name not in the table.
template <NamedEnum E>
std::string unknown_name(std::string_view s) {
  return "unknown value '" + std::string(s) + "'; expected " + enum_choices<E>();
}

template <NamedEnum E>
void to_json(nlohmann::json& j, E e) {
  j = std::string(name_of(e));
}

// And read back from the text (util/json_reader.h), strictly: a name not in the table is the reader's error.
template <NamedEnum E>
void read_value(JsonReader& in, E& e) {
  std::string_view s = in.string();
  auto v = enum_from<E>(s);
  if (!v) JsonReader::reject(unknown_name<E>(s));
  e = *v;
}

// Launch models: what each rank sees (lab/visibility.h).
enum class Mode { shared, isolated, remap, explicit_list, ray, ray_noset };
template <>
struct EnumNames<Mode> {
  static constexpr std::pair<Mode, std::string_view> names[] = {
      {Mode::shared, "shared"},          {Mode::isolated, "isolated"}, {Mode::remap, "remap"},
      {Mode::explicit_list, "explicit"}, {Mode::ray, "ray"},           {Mode::ray_noset, "ray-noset"}};
};
inline bool is_ray_mode(Mode m) { return m == Mode::ray || m == Mode::ray_noset; }

enum class Collective { all_reduce, all_gather, reduce_scatter, broadcast, sendrecv, all_to_all };
template <>
struct EnumNames<Collective> {
  static constexpr std::pair<Collective, std::string_view> names[] = {{Collective::all_reduce, "all_reduce"},
                                                                      {Collective::all_gather, "all_gather"},
                                                                      {Collective::reduce_scatter, "reduce_scatter"},
                                                                      {Collective::broadcast, "broadcast"},
                                                                      {Collective::sendrecv, "sendrecv"},
                                                                      {Collective::all_to_all, "all_to_all"}};
};

// NCCL's debug log per rank (nccllog/env.h says which variables each level sets).
enum class NcclLog { off, light, full };
template <>
struct EnumNames<NcclLog> {
  static constexpr std::pair<NcclLog, std::string_view> names[] = {
      {NcclLog::off, "off"}, {NcclLog::light, "light"}, {NcclLog::full, "full"}};
};

// The rank program: coldstart's own worker (NCCL level) or the torch.distributed probe (PyTorch level).
enum class Worker { nccl, torch };
template <>
struct EnumNames<Worker> {
  static constexpr std::pair<Worker, std::string_view> names[] = {{Worker::nccl, "nccl"}, {Worker::torch, "torch"}};
};

// Who starts the ranks of a bench run: the lab itself, or Ray (as actors).
enum class Launcher { lab, ray };
template <>
struct EnumNames<Launcher> {
  static constexpr std::pair<Launcher, std::string_view> names[] = {{Launcher::lab, "lab"}, {Launcher::ray, "ray"}};
};

enum class TrialStatus { ok, hang, error, interrupted };
template <>
struct EnumNames<TrialStatus> {
  static constexpr std::pair<TrialStatus, std::string_view> names[] = {{TrialStatus::ok, "ok"},
                                                                       {TrialStatus::hang, "hang"},
                                                                       {TrialStatus::error, "error"},
                                                                       {TrialStatus::interrupted, "interrupted"}};
};

}  // namespace coldstart

// fmt::format("{}", Mode::isolated) == "isolated".
template <coldstart::NamedEnum E>
struct fmt::formatter<E> : fmt::formatter<std::string_view> {
  template <class Ctx>
  auto format(E e, Ctx& ctx) const {
    return fmt::formatter<std::string_view>::format(coldstart::name_of(e), ctx);
  }
};
