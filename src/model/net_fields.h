// Internal to model/net_json.cc: doctor net's plain structs' field lists, named once for the writer and the reader,
// as model/result_fields.h names the results'.
#pragma once

// FIELDS(T, field...) is expanded for each struct (its reader's fields and its writer's), PLAIN(T) after it for those
// read and written by their fields alone; the others' readers name the fields they require, their writers what they
// hide or add (a proxy value's password, a peer's derived gloo_differs). The order is the order of definition.
#define COLDSTART_NET_FIELDS(FIELDS, PLAIN)                                                                   \
  FIELDS(Check, layer, status, summary, evidence, fix)                                                        \
  FIELDS(Interface, name, index, up, loopback, ipv4, ipv6, ipv4_prefix, ipv6_prefix, no_carrier)              \
  PLAIN(Interface)                                                                                            \
  FIELDS(ProcessContext, netns, parent_netns, parent_error, init_netns, init_error, interfaces, socket_errno) \
  PLAIN(ProcessContext)                                                                                       \
  FIELDS(Platform, wsl, osrelease, wsl_version, wsl_mode, wsl_mode_source, windows_host, container,           \
         container_evidence)                                                                                  \
  PLAIN(Platform)                                                                                             \
  FIELDS(ResolverConf, nameservers, search, wsl_generated)                                                    \
  PLAIN(ResolverConf)                                                                                         \
  FIELDS(DefaultRoute, gateway, dev)                                                                          \
  PLAIN(DefaultRoute)                                                                                         \
  FIELDS(IfChoice, tool, variable, interfaces, address, rule, problem)                                        \
  PLAIN(IfChoice)                                                                                             \
  FIELDS(ProxyVar, name, value)                                                                               \
  FIELDS(PeerEndpoint, rank, host, interface, address, port, problem, caveat, gloo_interface, gloo_address,   \
         gloo_problem)                                                                                        \
  FIELDS(PeerCell, ok, err, ms, layer, why)
