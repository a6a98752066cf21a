// doctor net's data: what its members derive, and the names it shows an errno and a proxy value by (an errno's name
// and text serve the lab's rtnetlink errors too).
#include "model/net.h"

#include <cerrno>
#include <cstring>

namespace coldstart::net {

std::string errno_name(int err) {
  switch (err) {
    case 0: return "0";
    case EHOSTUNREACH: return "EHOSTUNREACH";
    case ENETUNREACH: return "ENETUNREACH";
    case ECONNREFUSED: return "ECONNREFUSED";
    case ETIMEDOUT: return "ETIMEDOUT";
    case ECONNRESET: return "ECONNRESET";
    case EPERM: return "EPERM";
    case EACCES: return "EACCES";
    case EADDRNOTAVAIL: return "EADDRNOTAVAIL";
    case EAFNOSUPPORT: return "EAFNOSUPPORT";
    case EINVAL: return "EINVAL";
    case EPIPE: return "EPIPE";
    case ENETDOWN: return "ENETDOWN";
    case EHOSTDOWN: return "EHOSTDOWN";
    case EPROTO: return "EPROTO";
    case ENOENT: return "ENOENT";
    case EEXIST: return "EEXIST";
    case ENODEV: return "ENODEV";
    case EOPNOTSUPP: return "EOPNOTSUPP";
    case EBUSY: return "EBUSY";
    case ENOMEM: return "ENOMEM";
    case ENOBUFS: return "ENOBUFS";
    case EAGAIN: return "EAGAIN";
    case EROFS: return "EROFS";
    case ENOSPC: return "ENOSPC";
    case EPROTONOSUPPORT: return "EPROTONOSUPPORT";
    case ENOTDIR: return "ENOTDIR";
    case EMFILE: return "EMFILE";
    case ENFILE: return "ENFILE";
    case ENOSYS: return "ENOSYS";
    case EBADF: return "EBADF";
    case EMSGSIZE: return "EMSGSIZE";
    case ERANGE: return "ERANGE";
    case ESRCH: return "ESRCH";
  }
  return "errno " + std::to_string(err);
}

std::string errno_text(int err) { return std::string(std::strerror(err)) + " (" + errno_name(err) + ")"; }

std::string without_password(std::string_view value) {
  std::string v(value);
  size_t start = v.find("://");
  start = start == std::string::npos ? 0 : start + 3;
  size_t end = v.find_first_of("/?#", start);
  if (end == std::string::npos) end = v.size();
  size_t at = v.rfind('@', end - 1);
  if (at == std::string::npos || at < start) return v;
  size_t colon = v.find(':', start);
  if (colon != std::string::npos && colon < at) v.replace(colon + 1, at - colon - 1, "***");
  return v;
}

const std::string* find_var(const ProxyEnv& env, std::string_view name) {
  for (const ProxyVar& v : env)
    if (v.name == name) return &v.value;
  return nullptr;
}

bool ProcessContext::only_loopback() const {
  for (const Interface& i : interfaces)
    if (i.up && !i.loopback) return false;
  return true;
}

std::string Target::url_text() const {
  const std::string h = host.find(':') != std::string::npos ? "[" + host + "]" : host;
  if (!url()) return "http://" + h + ":" + std::to_string(port) + "/";
  return scheme + "://" + h + ":" + std::to_string(port) + (path.empty() ? "/" : path);
}

bool PeerEndpoint::gloo_differs() const {
  if (gloo_interface.empty() && gloo_address.empty()) return false;  // not known: nothing to hold against
  return gloo_interface != interface || (!gloo_address.empty() && gloo_address != address);
}

int PeerMatrix::failing_pairs() const {
  int n = 0;
  for (size_t from = 0; from < cells.size(); ++from)
    for (size_t to = 0; to < cells[from].size(); ++to)
      if (from != to && !cells[from][to].ok) ++n;
  return n;
}

const Check* TargetReport::first(Status s) const {
  for (const Check& c : layers)
    if (c.status == s) return &c;
  return nullptr;
}

}  // namespace coldstart::net
