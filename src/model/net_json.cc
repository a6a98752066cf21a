// doctor net's data as JSON (schema coldstart.net/1): written through nlohmann's tree, read straight from the text by
// the model's one pull reader (util/json_reader.h), both from the field lists of model/net_fields.h. A malformed value
// is named by its path; a missing or null optional member keeps its default; unknown members are skipped.
#include <algorithm>
#include <cmath>
#include <initializer_list>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "model/net.h"
#include "model/net_fields.h"
#include "util/error.h"
#include "util/json.h"
#include "util/json_reader.h"

namespace coldstart::net {

using nlohmann::json;

// ---- Values (in the namespace of the types, where the model's vector and optional readers find them) ----------

template <NamedEnum E>
void to_json(json& j, E e) {
  j = std::string(name_of(e));
}

namespace {

// A whole number within [lo, hi]: a fraction is no integer here (the model's integer<T>() would cut it).
int64_t read_integer(JsonReader& in, int64_t lo = INT32_MIN, int64_t hi = INT32_MAX) {
  if (in.peek() != JsonReader::Kind::number) in.wrong("an integer");
  const double d = in.real();
  if (!(std::trunc(d) == d && std::abs(d) < 9.0e15)) JsonReader::reject("expected an integer");
  const auto v = static_cast<int64_t>(d);
  if (v < lo || v > hi) JsonReader::reject(fmt::format("{} is outside {}..{}", v, lo, hi));
  return v;
}

// A member that must be there, and is not.
[[noreturn]] void missing(std::string_view key) {
  JsonShapeError e("missing");
  e.within(key);
  throw e;
}

// An object's members: field(key) reads one it knows (true) or leaves it (false: skipped). A member named in
// `required` must be there (null is read, and refused, as its value); another given as null keeps its default.
template <class F>
void read_object(JsonReader& in, std::initializer_list<std::string_view> required, F&& field) {
  std::vector<bool> seen(required.size());
  in.object([&](std::string_view key) {
    auto it = std::find(required.begin(), required.end(), key);
    if (it != required.end())
      seen[static_cast<size_t>(it - required.begin())] = true;
    else if (in.null())
      return;
    if (!field(key)) in.skip();
  });
  for (size_t i = 0; i < seen.size(); ++i)
    if (!seen[i]) missing(required.begin()[i]);
}

}  // namespace

void read_value(JsonReader& in, int& v) { v = static_cast<int>(read_integer(in)); }
void read_value(JsonReader& in, std::vector<int>& v) {
  v.clear();
  in.array([&](size_t) { v.push_back(static_cast<int>(read_integer(in))); });
}

// ---- The field lists (model/net_fields.h) -------------------------------------------------------------------

// Each writer declared first: a struct's fields hold the others (ProcessContext its interfaces).
#define COLDSTART_NET_NO_LIST(T, ...)
#define COLDSTART_NET_DECLARE_WRITER(T) void to_json(json& j, const T& v);
COLDSTART_NET_FIELDS(COLDSTART_NET_NO_LIST, COLDSTART_NET_DECLARE_WRITER)
#undef COLDSTART_NET_DECLARE_WRITER
void to_json(json& j, const Check& c);

#define COLDSTART_NET_READ_FIELD(f) \
  if (key == #f) return read_value(in, v.f), true;
#define COLDSTART_NET_FIELD_LIST(T, ...)                                             \
  [[maybe_unused]] bool read_field(JsonReader& in, std::string_view key, T& v) {     \
    NLOHMANN_JSON_EXPAND(NLOHMANN_JSON_PASTE(COLDSTART_NET_READ_FIELD, __VA_ARGS__)) \
    return false;                                                                    \
  }                                                                                  \
  void write_fields(json& nlohmann_json_j, const T& nlohmann_json_t) {               \
    NLOHMANN_JSON_EXPAND(NLOHMANN_JSON_PASTE(NLOHMANN_JSON_TO, __VA_ARGS__))         \
  }
#define COLDSTART_NET_PLAIN(T)                                                         \
  [[maybe_unused]] void read_value(JsonReader& in, T& v) {                             \
    read_object(in, {}, [&](std::string_view key) { return read_field(in, key, v); }); \
  }
COLDSTART_NET_FIELDS(COLDSTART_NET_FIELD_LIST, COLDSTART_NET_PLAIN)
#undef COLDSTART_NET_PLAIN
#undef COLDSTART_NET_FIELD_LIST
#undef COLDSTART_NET_READ_FIELD

// Written by their fields alone (nlohmann finds these for the vectors and members that hold them).
#define COLDSTART_NET_PLAIN_WRITER(T) \
  void to_json(json& j, const T& v) { write_fields(j, v); }
COLDSTART_NET_FIELDS(COLDSTART_NET_NO_LIST, COLDSTART_NET_PLAIN_WRITER)
#undef COLDSTART_NET_NO_LIST
#undef COLDSTART_NET_PLAIN_WRITER
void to_json(json& j, const Check& c) { write_fields(j, c); }
void to_json(json& j, const ProxyVar& v) {
  write_fields(j, v);
  j["value"] = without_password(v.value);
}

// ---- Writers ------------------------------------------------------------------------------------------------

json to_json(const Check& c) { return json(c); }

json to_json(const HostFacts& f) {
  json hosts = json::array();
  for (const auto& [address, name] : f.hosts_file) hosts.push_back({{"address", address}, {"name", name}});
  return {{"hostname", f.hostname},           {"context", f.context},
          {"platform", f.platform},           {"resolver", f.resolver},
          {"default_route", f.default_route}, {"hosts_file", hosts}};
}

json to_json(const PeerEndpoint& e) {
  json j;
  write_fields(j, e);
  for (const char* empty_left_out : {"problem", "caveat", "gloo_problem"})
    if (j[empty_left_out] == "") j.erase(empty_left_out);
  j["gloo_differs"] = e.gloo_differs();
  return j;
}

namespace {

json cell_json(const PeerCell& c) {
  json j;
  write_fields(j, c);
  j["ms"] = std::round(c.ms * 1000) / 1000;
  if (c.ok) {
    for (const char* failure_only : {"err", "layer", "why"}) j.erase(failure_only);
  } else if (c.err) {
    j["errno"] = errno_name(c.err);
  }
  return j;
}

}  // namespace

json row_to_json(const std::vector<PeerCell>& row, int from) {
  json j = json::array();
  for (size_t to = 0; to < row.size(); ++to) j.push_back(static_cast<int>(to) == from ? json() : cell_json(row[to]));
  return j;
}

json to_json(const PeerMatrix& m) {
  json eps = json::array(), cells = json::array();
  for (const auto& e : m.endpoints) eps.push_back(to_json(e));
  for (size_t from = 0; from < m.cells.size(); ++from)
    cells.push_back(row_to_json(m.cells[from], static_cast<int>(from)));
  return {
      {"world", m.world}, {"rank", m.rank}, {"endpoints", eps}, {"cells", cells}, {"failing_pairs", m.failing_pairs()}};
}

json to_json(const NetReport& r) {
  json j;
  j["schema"] = kNetSchema;
  j["tool"] = {{"name", "coldstart"}, {"version", COLDSTART_VERSION}};
  j["host"] = r.host;
  j["facts"] = to_json(r.facts);
  j["proxy_variables"] = json::array();
  for (const ProxyVar& v : r.proxy_env) j["proxy_variables"].push_back(v);
  j["interface_choice"] = {{"nccl", r.nccl}, {"gloo", r.gloo}};
  j["process"] = r.process;
  j["targets"] = json::array();
  for (const TargetReport& t : r.targets) {
    const Check* broken = t.first(Status::broken);
    j["targets"].push_back({{"target", t.target.text},
                            {"origin", t.target.origin},
                            {"scheme", t.target.scheme},
                            {"host", t.target.host},
                            {"port", t.target.port},
                            {"path", t.path},
                            {"layers", t.layers},
                            {"first_broken", broken ? json(name(broken->layer)) : json(nullptr)}});
  }
  if (r.peers) j["peers"] = to_json(*r.peers);
  j["verdict"] = {{"status", name(r.verdict.status)},     {"target", r.verdict.target},
                  {"layer", name(r.verdict.check.layer)}, {"summary", r.verdict.check.summary},
                  {"evidence", r.verdict.check.evidence}, {"fix", r.verdict.check.fix}};
  if (r.verdict.status == Status::ok) j["verdict"]["layer"] = nullptr;
  if (!r.note.empty()) j["note"] = r.note;
  return j;
}

// ---- Readers ------------------------------------------------------------------------------------------------

void read_value(JsonReader& in, Check& c) {
  read_object(in, {"layer", "status", "summary"}, [&](std::string_view key) { return read_field(in, key, c); });
}

void read_value(JsonReader& in, ProxyVar& v) {
  read_object(in, {"name", "value"}, [&](std::string_view key) { return read_field(in, key, v); });
}

void read_value(JsonReader& in, HostFacts& f) {
  read_object(in, {}, [&](std::string_view key) {
    if (key == "hostname") return read_value(in, f.hostname), true;
    if (key == "context") return read_value(in, f.context), true;
    if (key == "platform") return read_value(in, f.platform), true;
    if (key == "resolver") return read_value(in, f.resolver), true;
    if (key == "default_route") return read_value(in, f.default_route), true;
    if (key != "hosts_file") return false;
    f.hosts_file.clear();
    in.array([&](size_t) {
      auto& entry = f.hosts_file.emplace_back();  // not a structured binding: clang 14 cannot capture one
      read_object(in, {}, [&](std::string_view k) {
        if (k == "address") return read_value(in, entry.first), true;
        if (k == "name") return read_value(in, entry.second), true;
        return false;
      });
    });
    return true;
  });
}

void read_value(JsonReader& in, PeerEndpoint& e) {
  read_object(in, {"rank", "host", "interface", "address", "port"}, [&](std::string_view key) {
    if (key == "rank") return e.rank = static_cast<int>(read_integer(in, 0, 1'000'000)), true;
    if (key == "port") return e.port = static_cast<int>(read_integer(in, 0, 65535)), true;
    return read_field(in, key, e);  // gloo_*: absent from files written before Gloo was recorded
  });
}

// A failed cell names its errno, layer and why; an ok one keeps only its time.
void read_value(JsonReader& in, PeerCell& c) {
  bool err = false, layer = false, why = false;
  read_object(in, {"ok", "ms"}, [&](std::string_view key) {
    if (key == "err") return err = true, c.err = static_cast<int>(read_integer(in, 0, 4095)), true;
    layer = layer || key == "layer";
    why = why || key == "why";
    return read_field(in, key, c);
  });
  if (c.ok) {
    c = PeerCell{true, 0, c.ms, Layer::transport, ""};
    return;
  }
  if (!err) missing("err");
  if (!layer) missing("layer");
  if (!why) missing("why");
}

namespace {

// A row as sent, held until the world is known (a matrix's "world" may come after its "cells"): each cell, or none
// where the element was not an object (`kinds` says what it was).
struct RawRow {
  std::vector<std::optional<PeerCell>> cells;
  std::vector<JsonReader::Kind> kinds;
};

void read_value(JsonReader& in, RawRow& row) {
  in.array([&](size_t) {
    const JsonReader::Kind k = in.peek();
    row.kinds.push_back(k);
    if (k == JsonReader::Kind::object)
      read_value(in, row.cells.emplace_back().emplace());
    else
      in.skip(), row.cells.emplace_back();
  });
}

// The row of `world` cells rank `from` sent (empty: not gathered); the diagonal is null.
std::vector<PeerCell> settle_row(const RawRow& raw, int from, int world) {
  std::vector<PeerCell> row;
  if (raw.cells.empty()) return row;
  if (static_cast<int>(raw.cells.size()) != world)
    JsonReader::reject(fmt::format("{} cells for a world of {}", raw.cells.size(), world));
  row.resize(raw.cells.size());
  for (size_t to = 0; to < raw.cells.size(); ++to) {
    if (raw.cells[to]) {
      row[to] = *raw.cells[to];
    } else if (static_cast<int>(to) != from || raw.kinds[to] != JsonReader::Kind::null) {
      JsonShapeError e(std::string("expected an object, found ") + kind_name(raw.kinds[to]));
      e.within(to);
      throw e;
    }
  }
  return row;
}

}  // namespace

namespace {

// Throws a JsonShapeError under `key` (and `index`, when one is given).
template <class F>
void under(std::string_view key, F&& check, std::optional<size_t> index = std::nullopt) {
  try {
    check();
  } catch (JsonShapeError& e) {
    if (index) e.within(*index);
    e.within(key);
    throw;
  }
}

}  // namespace

void read_value(JsonReader& in, PeerMatrix& m) {
  std::optional<int> rank;
  std::vector<RawRow> rows;
  read_object(in, {"world", "endpoints", "cells"}, [&](std::string_view key) {
    if (key == "world") return m.world = static_cast<int>(read_integer(in, 0, 1'000'000)), true;
    if (key == "rank") return rank = static_cast<int>(read_integer(in, 0, 1'000'000)), true;
    if (key == "endpoints") return read_value(in, m.endpoints), true;
    if (key == "cells") return read_value(in, rows), true;
    return false;
  });
  if (rank) {
    under("rank", [&] {
      if (*rank > std::max(m.world - 1, 0))
        JsonReader::reject(fmt::format("{} is outside 0..{}", *rank, std::max(m.world - 1, 0)));
    });
    m.rank = *rank;
  }
  under("endpoints", [&] {
    if (static_cast<int>(m.endpoints.size()) != m.world)
      JsonReader::reject(fmt::format("{} endpoints for a world of {}", m.endpoints.size(), m.world));
  });
  for (size_t r = 0; r < m.endpoints.size(); ++r)
    if (m.endpoints[r].rank != static_cast<int>(r))
      under(
          "endpoints",
          [&] { under("rank", [&] { JsonReader::reject(fmt::format("{} out of order", m.endpoints[r].rank)); }); }, r);
  under("cells", [&] {
    if (static_cast<int>(rows.size()) != m.world)
      JsonReader::reject(fmt::format("{} rows for a world of {}", rows.size(), m.world));
  });
  m.cells.clear();
  for (size_t from = 0; from < rows.size(); ++from)
    under(
        "cells", [&] { m.cells.push_back(settle_row(rows[from], static_cast<int>(from), m.world)); }, from);
}

void read_value(JsonReader& in, TargetReport& t) {
  read_object(in, {"target", "layers"}, [&](std::string_view key) {
    if (key == "target") return read_value(in, t.target.text), true;
    if (key == "origin") return read_value(in, t.target.origin), true;
    if (key == "scheme") return read_value(in, t.target.scheme), true;
    if (key == "host") return read_value(in, t.target.host), true;
    if (key == "port") return t.target.port = static_cast<uint16_t>(read_integer(in, 0, 65535)), true;
    if (key == "path") return read_value(in, t.path), true;
    if (key == "layers") return read_value(in, t.layers), true;
    return false;  // first_broken is derived
  });
}

void read_value(JsonReader& in, NetReport& r) {
  std::optional<std::string> schema, malformed;
  bool process = false, targets = false;
  in.object([&](std::string_view key) {
    try {
      if (key == "schema") return schema.emplace(), read_value(in, *schema);
      if (key == "process") return process = true, read_value(in, r.process);
      if (key == "targets") return targets = true, read_value(in, r.targets);
      if (in.null()) return;
      if (key == "host") return read_value(in, r.host);
      if (key == "facts") return read_value(in, r.facts);
      if (key == "proxy_variables") return read_value(in, r.proxy_env);
      if (key == "interface_choice")
        return read_object(in, {}, [&](std::string_view k) {
          if (k == "nccl") return read_value(in, r.nccl), true;
          if (k == "gloo") return read_value(in, r.gloo), true;
          return false;
        });
      if (key == "peers") return read_value(in, r.peers.emplace());
      if (key == "note") return read_value(in, r.note);
      in.skip();  // tool; verdict is decided again
    } catch (JsonShapeError& e) {
      if (key == "schema") throw;  // what the file is, said first (object() names the key)
      e.within(key);
      if (!malformed) malformed = e.what();
      in.recover(1);  // read on: what the schema says is said first
    }
  });
  if (!schema) missing("schema");
  if (*schema != kNetSchema)
    under("schema",
          [&] { JsonReader::reject("'" + *schema + "', not " + kNetSchema + " (give what doctor net --json wrote)"); });
  if (malformed) throw JsonShapeError(*malformed);
  if (!process) missing("process");
  if (!targets) missing("targets");
}

namespace {

// A whole document: one InputError naming `what` and the path ("(top)" for the whole).
template <class T, class Read>
T read_document(std::string_view text, const std::string& what, Read read) {
  T v;
  JsonReader in(text);
  try {
    if (in.peek() != JsonReader::Kind::object) {
      try {
        in.wrong("an object");
      } catch (const JsonShapeError& e) {
        throw InputError(what + ": (top): " + e.what());
      }
    }
    read(in, v);
    in.finish();
  } catch (const JsonShapeError& e) {
    throw InputError(what + ": " + e.what());
  } catch (const JsonSyntaxError& e) {
    throw InputError(what + ": not valid JSON (" + e.what() + ")");
  }
  return v;
}

}  // namespace

bool is_net_report_text(std::string_view text) {
  bool net = false;
  try {
    JsonReader in(text);
    in.object([&](std::string_view key) {
      if (key == "schema" && in.peek() == JsonReader::Kind::string)
        return net = in.string().starts_with("coldstart.net/"), void();
      in.skip();
    });
    in.finish();
  } catch (const std::exception&) {
    return false;
  }
  return net;
}

HostFacts host_facts_from_text(std::string_view text, const std::string& what) {
  return read_document<HostFacts>(text, what, [](JsonReader& in, HostFacts& f) { read_value(in, f); });
}

PeerMatrix peer_matrix_from_text(std::string_view text, const std::string& what) {
  return read_document<PeerMatrix>(text, what, [](JsonReader& in, PeerMatrix& m) { read_value(in, m); });
}

PeerEndpoint peer_endpoint_from_text(std::string_view text, const std::string& what) {
  return read_document<PeerEndpoint>(text, what, [](JsonReader& in, PeerEndpoint& e) { read_value(in, e); });
}

std::vector<PeerCell> peer_row_from_text(std::string_view text, int from, int world, const std::string& what) {
  JsonReader in(text);
  try {
    RawRow raw;
    read_value(in, raw);
    in.finish();
    return settle_row(raw, from, world);
  } catch (const JsonShapeError& e) {
    throw InputError(what + ": " + e.what());
  } catch (const JsonSyntaxError& e) {
    throw InputError(what + ": not valid JSON (" + e.what() + ")");
  }
}

NetReport net_report_data_from_text(std::string_view text, const std::string& what) {
  return read_document<NetReport>(text, what, [](JsonReader& in, NetReport& r) { read_value(in, r); });
}

HostFacts host_facts_from_json(const json& j) { return host_facts_from_text(dump_json(j)); }
PeerMatrix peer_matrix_from_json(const json& j) { return peer_matrix_from_text(dump_json(j)); }

}  // namespace coldstart::net
