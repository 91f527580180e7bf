// Default process groups from torch's init methods (ct_process_group_new_from_env,
// ct_process_group_new_from_url): "env://", "tcp://host:port", "file:///path" parsed
// and rendezvoused as torch.distributed.rendezvous does, and every store wrapped in
// PrefixStore("default_pg") as init_process_group wraps it, so that PyTorch ranks and
// ctorch ranks with the same URL meet.
#include "distributed.h"

#include <torch/csrc/distributed/c10d/FileStore.hpp>
#include <torch/csrc/distributed/c10d/PrefixStore.hpp>

#include <cstdlib>
#include <cstring>
#include <map>
#include <string>

using ct::dist::kMaxWorld;
using ct::dist::timeout_ms;
using ct::dist::valid_timeout;

namespace {

const char *env_or(const char *name) { return std::getenv(name); }

int32_t parse_int(const char *what, const std::string &v, int64_t lo, int64_t hi) {
  char *end = nullptr;
  long long x = std::strtoll(v.c_str(), &end, 10);
  if (v.empty() || *end != '\0' || x < lo || x > hi)
    ct::raise(CT_ERR_INVALID_ARGUMENT, "%s='%.40s' is not an integer in %lld..%lld", what,
              v.c_str(), (long long)lo, (long long)hi);
  return static_cast<int32_t>(x);
}

int32_t env_int(const char *name, int64_t lo, int64_t hi) {
  const char *v = env_or(name);
  if (v == nullptr || *v == '\0')
    ct::raise(CT_ERR_INVALID_ARGUMENT, "environment variable %s is not set (torchrun sets it)",
              name);
  return parse_int((std::string("environment variable ") + name).c_str(), v, lo, hi);
}

// "scheme://rest?k=v&k2=v2" -> rest and the query's pairs.
struct Url {
  std::string scheme, rest;
  std::map<std::string, std::string> query;
};

Url parse_url(const char *url) {
  Url u;
  std::string s(url);
  size_t sep = s.find("://");
  if (sep == std::string::npos)
    ct::raise(CT_ERR_INVALID_ARGUMENT,
              "init_method '%.200s' is not a URL (tcp://host:port, file:///path or env://)", url);
  u.scheme = s.substr(0, sep);
  std::string tail = s.substr(sep + 3);
  size_t q = tail.find('?');
  u.rest = tail.substr(0, q);
  if (q != std::string::npos) {
    std::string query = tail.substr(q + 1);
    size_t at = 0;
    while (at <= query.size()) {
      size_t amp = query.find('&', at);
      std::string kv = query.substr(at, amp == std::string::npos ? std::string::npos : amp - at);
      size_t eq = kv.find('=');
      if (!kv.empty()) {
        if (eq == std::string::npos)
          ct::raise(CT_ERR_INVALID_ARGUMENT, "init_method query item '%.80s' has no '='",
                    kv.c_str());
        u.query[kv.substr(0, eq)] = kv.substr(eq + 1);
      }
      if (amp == std::string::npos) break;
      at = amp + 1;
    }
  }
  return u;
}

// rank or world_size: the argument, the URL's query, or (env://) the variable.
int32_t pick(const char *name, int32_t given, const Url &u, const char *env, int64_t lo,
             int64_t hi) {
  auto it = u.query.find(name);
  if (it != u.query.end()) {
    int32_t q = parse_int(name, it->second, lo, hi);
    if (given != -1 && given != q)
      ct::raise(CT_ERR_INVALID_ARGUMENT, "%s %d disagrees with the init_method's %s=%d", name,
                given, name, q);
    return q;
  }
  if (given != -1) return parse_int(name, std::to_string(given), lo, hi);
  if (env != nullptr) return env_int(env, lo, hi);
  ct::raise(CT_ERR_INVALID_ARGUMENT, "%s is -1 and the init_method gives none", name);
  return -1;
}

// ct_process_group_new_from_url's work, with messages naming `fn`.
ct_status new_from_url(const char *fn, ct_process_group **out, const char *init_method,
                       const char *backend, int32_t rank, int32_t world_size, double timeout_s) {
  return ct::guard(fn, [&] {
    const char *const ct_fn_ = fn;
    CT_CHECK_NOT_NULL(out);
    *out = nullptr;
    CT_CHECK_NOT_NULL(init_method);
    CT_CHECK_ARG(valid_timeout(timeout_s), "%s: timeout_s must be finite and in (0, 1e7] (got %g)",
                 fn, timeout_s);
    std::string be = ct::dist::backend_name(fn, backend);
    Url u = parse_url(init_method);
    const bool env = u.scheme == "env";
    const char *addr = nullptr;
    int32_t env_port = 0;
    if (env) {  // torchrun's variables, in the order torch reads them
      addr = env_or("MASTER_ADDR");
      if (addr == nullptr || *addr == '\0')
        return ct::set_error(CT_ERR_INVALID_ARGUMENT,
                             "%s: environment variable MASTER_ADDR is not set (torchrun sets it)",
                             fn);
      env_port = env_int("MASTER_PORT", 0, 65535);
    }
    auto world = std::make_shared<ct::dist::World>();
    world->backend = be;
    world->size = pick("world_size", world_size, u, env ? "WORLD_SIZE" : nullptr, 1, kMaxWorld);
    world->rank = pick("rank", rank, u, env ? "RANK" : nullptr, 0, world->size - 1);
    const auto t = timeout_ms(timeout_s);
    if (env) {
      world->store = ct::dist::env_store(fn, addr, env_port, world->rank, world->size, t);
    } else if (u.scheme == "tcp") {
      size_t colon = u.rest.rfind(':');
      if (colon == std::string::npos || colon == 0)
        return ct::set_error(CT_ERR_INVALID_ARGUMENT,
                             "%s: '%.200s' has no host:port (tcp://host:port)", fn, init_method);
      std::string host = u.rest.substr(0, colon);
      if (host.size() > 2 && host.front() == '[' && host.back() == ']')
        host = host.substr(1, host.size() - 2);  // [::1]
      int32_t port = parse_int("port", u.rest.substr(colon + 1), 1, 65535);
      auto tcp = ct::dist::tcp_store(fn, host, port, world->rank == 0, world->size, t, false);
      world->store = c10::make_intrusive<c10d::PrefixStore>("default_pg", tcp);
    } else if (u.scheme == "file") {
      CT_CHECK_ARG(!u.rest.empty(), "%s: '%.200s' has no path (file:///path)", fn, init_method);
      c10::intrusive_ptr<c10d::Store> fs;
      ct::dist::run_store(fn, "open the file store", u.rest.c_str(), [&] {
        fs = c10::make_intrusive<c10d::FileStore>(u.rest, world->size);
      });
      fs->setTimeout(t);
      world->store = c10::make_intrusive<c10d::PrefixStore>("default_pg", fs);
    } else {
      return ct::set_error(CT_ERR_INVALID_ARGUMENT,
                           "%s: init_method scheme '%.40s' is not tcp, file or env", fn,
                           u.scheme.c_str());
    }
    *out = ct::dist::make_default_group(fn, world, t).release();
    return CT_OK;
  });
}

}  // namespace

extern "C" {

ct_status ct_process_group_new_from_env(ct_process_group **out, const char *backend,
                                        double timeout_s) {
  return new_from_url(__func__, out, "env://", backend, -1, -1, timeout_s);
}

ct_status ct_process_group_new_from_url(ct_process_group **out, const char *init_method,
                                        const char *backend, int32_t rank, int32_t world_size,
                                        double timeout_s) {
  return new_from_url(__func__, out, init_method, backend, rank, world_size, timeout_s);
}

}  // extern "C"

