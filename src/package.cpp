// AOTInductor packages (.pt2) behind a ct_package handle:
// torch::inductor::AOTIModelPackageLoader (LibTorch >= 2.6). CMake compiles
// this file where LibTorch has the loader, src/package_unavailable.cpp elsewhere.
#include "file_io.h"
#include "internal.h"

#include <torch/version.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>
#include <set>
#include <string>
#include <type_traits>
#include <unordered_map>
#include <vector>

#include <unistd.h>

#include <torch/csrc/inductor/aoti_package/model_package_loader.h>

// LibTorch 2.6's AOTInductor runtime (compiled into every package it makes)
// keeps a constant that is already set: its update_constant_buffer emplace()s,
// so an update of the active buffer changes nothing, and the loader's
// load_constants hands the runtime pointers into its own map, which the runtime
// then frees ("free(): invalid pointer"; torch 2.6's Python load_constants
// aborts the same way). Later releases insert_or_assign and copy into their own
// blob (checked in the current source; 2.7 itself not tried). See
// replace_constants_2_6 below.
#if TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR < 7
#define CTORCH_AOTI_EMPLACE_RUNTIME 1
#else
#define CTORCH_AOTI_EMPLACE_RUNTIME 0
#endif

namespace {

// (path, model_name) is a constructor in 2.6 and, with defaulted trailing
// arguments (single-threaded runner, number of runners, device index), in
// every later release.
using Loader = torch::inductor::AOTIModelPackageLoader;

// Loader features by signature, not version number (releases between 2.6 and
// 2.11 were not tried): the constructor with the number of runners and the
// device index, and run() on a caller's stream.
constexpr bool kLoaderHasRunners =
    std::is_constructible_v<Loader, const std::string &, const std::string &, bool, size_t,
                            c10::DeviceIndex>;
template <class L, class = void>
struct RunsOnStream : std::false_type {};
template <class L>
struct RunsOnStream<L,
                    std::void_t<decltype(std::declval<L &>().run(
                        std::declval<const std::vector<at::Tensor> &>(), std::declval<void *>()))>>
    : std::true_type {};

template <class L = Loader>
std::unique_ptr<L> make_loader(const std::string &path, const std::string &name, size_t num_runners,
                               int32_t device_index) {
  if constexpr (kLoaderHasRunners)
    return std::make_unique<L>(path, name, /*run_single_threaded=*/false, num_runners,
                               static_cast<c10::DeviceIndex>(device_index));
  else
    return std::make_unique<L>(path, name);
}

template <class L = Loader>
std::vector<at::Tensor> run_loader(L &loader, const std::vector<at::Tensor> &in, void *stream) {
  if constexpr (RunsOnStream<L>::value)
    return loader.run(in, stream);
  else
    return loader.run(in);
}

// The first line of an exception message (LibTorch's runtime errors can carry
// file listings or backtraces after it).
std::string first_line(const char *what) {
  std::string s = what ? what : "unknown error";
  size_t nl = s.find('\n');
  return nl == std::string::npos ? s : s.substr(0, nl);
}

}  // namespace

struct ct_package {
  std::unique_ptr<Loader> loader;
  std::unordered_map<std::string, std::string> metadata;
  std::vector<std::string> call_spec;
  std::vector<std::string> constant_names;                      // sorted
  std::unordered_map<std::string, int32_t> constant_dtypes;     // name -> c10::ScalarType
  std::unordered_map<std::string, std::string> internal_names;  // dotted name -> the runtime's
  size_t n_unnamed_constants = 0;  // folded / lifted constants with no dotted name
  // CTORCH_AOTI_EMPLACE_RUNTIME: after the first update, the tensors the active
  // buffer uses (owned by LibTorch's runtime); later updates copy into them.
  std::unordered_map<std::string, at::Tensor *> swapped_in;
  size_t n_inputs = static_cast<size_t>(-1);  // from the in_spec; -1 unknown
  int32_t device_type = CT_DEVICE_CPU;
  int32_t device_index = -1;
  size_t num_runners = 1;
};

namespace {

// Leaves of a serialized pytree spec: one `"type": null` per leaf.
size_t count_leaves(const std::string &spec) {
  size_t n = 0;
  for (size_t pos = 0; (pos = spec.find("\"type\": null", pos)) != std::string::npos; ++pos) ++n;
  return n;
}

uint32_t le16(const unsigned char *p) { return p[0] | (p[1] << 8); }
uint32_t le32(const unsigned char *p) {
  return p[0] | (p[1] << 8) | (p[2] << 16) | (static_cast<uint32_t>(p[3]) << 24);
}

// Names in a zip's central directory; false if it has none (not a zip).
// LibTorch's loader creates its temporary directory before it looks inside,
// and leaves it behind when it then throws; checking here first avoids that
// for the common mistakes (not a package, wrong model name).
bool zip_names(const std::vector<char> &bytes, std::vector<std::string> *names) {
  const unsigned char *z = reinterpret_cast<const unsigned char *>(bytes.data());
  const size_t size = bytes.size();
  if (size < 22) return false;
  size_t eocd = std::string::npos;
  size_t lo = size > 22 + 65535 ? size - 22 - 65535 : 0;
  for (size_t i = size - 22 + 1; i-- > lo;)
    if (le32(&z[i]) == 0x06054b50) {
      eocd = i;
      break;
    }
  if (eocd == std::string::npos) return false;
  uint32_t count = le16(&z[eocd + 10]), off = le32(&z[eocd + 16]);
  for (uint32_t k = 0; k < count; ++k) {
    if (off + 46 > size || le32(&z[off]) != 0x02014b50) return false;
    uint32_t n = le16(&z[off + 28]), extra = le16(&z[off + 30]), comment = le16(&z[off + 32]);
    if (off + 46 + n > size) return false;
    names->emplace_back(reinterpret_cast<const char *>(&z[off + 46]), n);
    off += 46 + n + extra + comment;
  }
  return true;
}

ct_status load_file(const char *func, ct_package **out, const std::string &path,
                    const char *model_name, const char *shown_as, size_t num_runners = 1,
                    int32_t device_index = -1) {
  std::string name = model_name ? model_name : "model";
  std::vector<char> bytes;
  if (ct_status st = ct::read_file(func, path.c_str(), &bytes)) return st;
  std::vector<std::string> names;
  if (bytes.size() < 4 || bytes[0] != 'P' || bytes[1] != 'K' || !zip_names(bytes, &names))
    return ct::set_error(CT_ERR_IO,
                         "%s: '%s' is not an AOTInductor package (.pt2): not a zip archive", func,
                         shown_as);
  const std::string dir = "data/aotinductor/" + name + "/";
  std::set<std::string> models;
  bool found = false;
  for (const auto &n : names) {
    size_t at = n.find("data/aotinductor/");
    if (at == std::string::npos) continue;
    std::string rest = n.substr(at + 17);
    size_t slash = rest.find('/');
    if (slash != std::string::npos) models.insert(rest.substr(0, slash));
    if (n.compare(at, dir.size(), dir) == 0) found = true;
  }
  if (!found) {
    std::string list;
    for (const auto &m : models) list += (list.empty() ? "" : ", ") + m;
    return ct::set_error(
        CT_ERR_IO, "%s: '%s' is not a loadable AOTInductor package with a model '%s': %s", func,
        shown_as, name.c_str(),
        models.empty() ? "no data/aotinductor/ models in the archive" : ("it has " + list).c_str());
  }
  auto p = std::make_unique<ct_package>();
  try {
    p->loader = make_loader(path, name, num_runners, device_index);
  } catch (const std::exception &e) {
    std::string msg = first_line(e.what());
    if (msg.find("Unsupported device") != std::string::npos ||
        msg.find("CUDA") != std::string::npos || msg.find("cuda") != std::string::npos)
      return ct::set_error(CT_ERR_NOT_SUPPORTED,
                           "%s: cannot run the package '%s' (model '%s') with this LibTorch: %s",
                           func, shown_as, name.c_str(), msg.c_str());
    return ct::set_error(CT_ERR_IO,
                         "%s: '%s' is not a loadable AOTInductor package with a model '%s': %s",
                         func, shown_as, name.c_str(), msg.c_str());
  }
  p->metadata = p->loader->get_metadata();
  p->call_spec = p->loader->get_call_spec();
  if (!p->call_spec.empty() && count_leaves(p->call_spec[0]) > 0)
    p->n_inputs = count_leaves(p->call_spec[0]);
  p->constant_names = p->loader->get_constant_fqns();
  std::sort(p->constant_names.begin(), p->constant_names.end());
  if (auto *runner = p->loader->get_runner()) {
    auto dtypes = runner->getConstantNamesToDtypes();
    for (const auto &kv : runner->getConstantNamesToOriginalFQNs()) {
      if (kv.second.empty()) {
        ++p->n_unnamed_constants;
        continue;
      }
      p->internal_names[kv.second] = kv.first;
      auto d = dtypes.find(kv.first);
      if (d != dtypes.end()) p->constant_dtypes[kv.second] = d->second;
    }
  }
  p->num_runners = num_runners;
  auto dev = p->metadata.find("AOTI_DEVICE_KEY");
  if (dev != p->metadata.end()) {
    c10::Device d(dev->second);
    p->device_type = ct::device_type_code(d.type());
    p->device_index = d.has_index() ? d.index() : -1;
  }
  *out = p.release();
  return CT_OK;
}

#if CTORCH_AOTI_EMPLACE_RUNTIME
// The update on LibTorch 2.6 (see CTORCH_AOTI_EMPLACE_RUNTIME): the first one
// fills the still-empty inactive buffer with copies the runtime then owns,
// folds constants there and swaps it in; it must give every constant, since
// the values of the others cannot be read back. Later updates copy into those
// tensors in place, which leaves folded constants stale, so packages with
// folded constants get only the first.
ct_status replace_constants_2_6(const char *func, ct_package *p,
                                const std::unordered_map<std::string, at::Tensor> &map) {
  if (p->swapped_in.empty()) {
    if (map.size() != p->constant_names.size())
      return ct::set_error(CT_ERR_NOT_SUPPORTED,
                           "%s: with LibTorch %s the first update must replace all %zu constants "
                           "of the package (got %zu); LibTorch 2.6's AOTInductor runtime cannot "
                           "replace some and keep the others",
                           func, TORCH_VERSION, p->constant_names.size(), map.size());
    torch::inductor::TensorConstantMap handed;
    std::unordered_map<std::string, at::Tensor *> mine;
    try {
      for (const auto &kv : map) {
        auto *t = new at::Tensor(kv.second.clone(at::MemoryFormat::Contiguous));
        handed.emplace(p->internal_names.at(kv.first), t);
        mine.emplace(kv.first, t);
      }
    } catch (...) {
      for (auto &kv : handed) delete kv.second;
      throw;
    }
    auto *runner = p->loader->get_runner();
    runner->update_constant_buffer(handed, /*use_inactive=*/true, /*validate_full_updates=*/false);
    runner->run_const_fold(/*use_inactive=*/true);
    runner->swap_constant_buffer();
    p->swapped_in = std::move(mine);
    return CT_OK;
  }
  if (p->n_unnamed_constants > 0)
    return ct::set_error(CT_ERR_NOT_SUPPORTED,
                         "%s: with LibTorch %s the constants of a package with folded constants "
                         "can be replaced only once",
                         func, TORCH_VERSION);
  for (const auto &kv : map) {
    at::Tensor *dst = p->swapped_in.at(kv.first);
    if (!dst->sizes().equals(kv.second.sizes()))
      return ct::set_error(CT_ERR_INVALID_ARGUMENT, "%s: constant '%s' has sizes %s, not %s", func,
                           kv.first.c_str(), c10::str(kv.second.sizes()).c_str(),
                           c10::str(dst->sizes()).c_str());
  }
  for (const auto &kv : map) p->swapped_in.at(kv.first)->copy_(kv.second);
  return CT_OK;
}
#endif

c10::IValue string_list_value(const std::vector<std::string> &strings) {
  c10::List<std::string> l;
  for (const auto &s : strings) l.push_back(s);
  return c10::IValue(std::move(l));
}

// The accessors that return one new value made from the package (make takes
// the package).
template <class Make>
ct_status package_value(const char *ct_fn_, ct_value **out, const ct_package *p, Make make) {
  return ct::guard(ct_fn_, [&] {
    CT_CHECK_NOT_NULL(out);
    CT_CHECK_NOT_NULL(p);
    *out = ct::new_value(make(*p));
    return CT_OK;
  });
}

// ct_package_run and ct_package_run_on_stream (stream NULL: torch's current).
ct_status run_package(const char *ct_fn_, ct_tensor **outputs, size_t n_outputs, size_t *n_returned,
                      ct_package *p, const ct_tensor *const *inputs, size_t n_inputs,
                      void *stream) {
  return ct::guard(ct_fn_, [&] {
    CT_CHECK_NOT_NULL(p);
    CT_CHECK_ARG(outputs != nullptr || n_outputs == 0, "%s: argument 'outputs' is NULL", ct_fn_);
    CT_CHECK_ARG(inputs != nullptr || n_inputs == 0, "%s: argument 'inputs' is NULL", ct_fn_);
    if (p->n_inputs != static_cast<size_t>(-1) && n_inputs != p->n_inputs)
      return ct::set_error(CT_ERR_INVALID_ARGUMENT,
                           "%s: the package's model takes %zu input tensors, got %zu", ct_fn_,
                           p->n_inputs, n_inputs);
    std::vector<at::Tensor> in;
    in.reserve(n_inputs);
    for (size_t i = 0; i < n_inputs; ++i) {
      if (!inputs[i])
        return ct::set_error(CT_ERR_INVALID_ARGUMENT, "%s: inputs[%zu] is NULL", ct_fn_, i);
      in.push_back(inputs[i]->t);
    }
    if (stream != nullptr && p->device_type != CT_DEVICE_CUDA)
      return ct::set_error(CT_ERR_INVALID_ARGUMENT,
                           "%s: a stream is for CUDA packages; this one runs on the CPU (pass "
                           "NULL)",
                           ct_fn_);
    if (stream != nullptr && !RunsOnStream<Loader>::value)
      return ct::set_error(CT_ERR_NOT_SUPPORTED,
                           "%s: LibTorch %s's package loader runs only on torch's current stream",
                           ct_fn_, TORCH_VERSION);
    std::vector<at::Tensor> res = run_loader(*p->loader, in, stream);
    if (res.size() > n_outputs)
      return ct::set_error(CT_ERR_INVALID_ARGUMENT,
                           "%s: the model returned %zu tensors, more than n_outputs (%zu)", ct_fn_,
                           res.size(), n_outputs);
    for (size_t i = 0; i < res.size(); ++i) outputs[i] = ct::new_tensor(std::move(res[i]));
    if (n_returned) *n_returned = res.size();
    return CT_OK;
  });
}

}  // namespace

extern "C" {

ct_status ct_package_load(ct_package **out, const char *path, const char *model_name) {
  const char *const ct_fn_ = __func__;
  return ct::guard(ct_fn_, [&] {
    CT_CHECK_NOT_NULL(out);
    CT_CHECK_NOT_NULL(path);
    return load_file(ct_fn_, out, path, model_name, path);
  });
}

ct_status ct_package_load_buffer(ct_package **out, const void *data, size_t len,
                                 const char *model_name) {
  const char *const ct_fn_ = __func__;
  return ct::guard(ct_fn_, [&] {
    CT_CHECK_NOT_NULL(out);
    CT_CHECK_ARG(data != nullptr || len == 0, "%s: argument 'data' is NULL", ct_fn_);
    const char *tmp = std::getenv("TMPDIR");
    std::string path = std::string(tmp && *tmp ? tmp : "/tmp") + "/ctorch-package-XXXXXX.pt2";
    int fd = mkstemps(&path[0], 4);
    if (fd < 0)
      return ct::set_error(CT_ERR_IO, "%s: cannot create a temporary file: %s", ct_fn_,
                           std::strerror(errno));
    const char *p = static_cast<const char *>(data);
    size_t left = len;
    while (left > 0) {
      ssize_t w = ::write(fd, p, left);
      if (w < 0 && errno == EINTR) continue;
      if (w <= 0) {
        int err = errno;
        ::close(fd);
        ::unlink(path.c_str());
        return ct::set_error(CT_ERR_IO, "%s: cannot write a temporary file: %s", ct_fn_,
                             std::strerror(err));
      }
      p += w;
      left -= static_cast<size_t>(w);
    }
    ::close(fd);
    ct_status st;
    try {
      st = load_file(ct_fn_, out, path, model_name, "<buffer>");
    } catch (...) {
      ::unlink(path.c_str());
      throw;
    }
    ::unlink(path.c_str());
    return st;
  });
}

void ct_package_free(ct_package *p) {
  try {
    delete p;
  } catch (...) {}
}

ct_status ct_package_run(ct_tensor **outputs, size_t n_outputs, size_t *n_returned, ct_package *p,
                         const ct_tensor *const *inputs, size_t n_inputs) {
  return run_package(__func__, outputs, n_outputs, n_returned, p, inputs, n_inputs, nullptr);
}

ct_status ct_package_run_on_stream(ct_tensor **outputs, size_t n_outputs, size_t *n_returned,
                                   ct_package *p, const ct_tensor *const *inputs, size_t n_inputs,
                                   void *stream) {
  return run_package(__func__, outputs, n_outputs, n_returned, p, inputs, n_inputs, stream);
}

ct_status ct_package_load_ext(ct_package **out, const char *path, const char *model_name,
                               size_t num_runners, int32_t device_index) {
  const char *const ct_fn_ = __func__;
  return ct::guard(ct_fn_, [&] {
    CT_CHECK_NOT_NULL(out);
    CT_CHECK_NOT_NULL(path);
    CT_CHECK_ARG(num_runners >= 1 && num_runners <= 1024,
                 "%s: num_runners must be between 1 and 1024, not %zu", ct_fn_, num_runners);
    CT_CHECK_ARG(device_index >= -1, "%s: device_index must be -1 or a device, not %d", ct_fn_,
                 device_index);
    if (!kLoaderHasRunners && (num_runners != 1 || device_index != -1))
      return ct::set_error(CT_ERR_NOT_SUPPORTED,
                           "%s: LibTorch %s's package loader has one runner on the package's "
                           "own device (num_runners 1, device_index -1); more needs a newer "
                           "LibTorch (2.11 has both)",
                           ct_fn_, TORCH_VERSION);
    return load_file(ct_fn_, out, path, model_name, path, num_runners, device_index);
  });
}

ct_status ct_package_num_runners(size_t *out, const ct_package *p) {
  const char *const ct_fn_ = __func__;
  return ct::guard(ct_fn_, [&] {
    CT_CHECK_NOT_NULL(out);
    CT_CHECK_NOT_NULL(p);
    *out = p->num_runners;
    return CT_OK;
  });
}

ct_status ct_package_metadata(ct_value **out, const ct_package *p) {
  return package_value(__func__, out, p, [](const auto &pk) {
    std::vector<std::string> keys;
    for (const auto &kv : pk.metadata) keys.push_back(kv.first);
    std::sort(keys.begin(), keys.end());
    c10::Dict<std::string, std::string> d;
    for (const auto &k : keys) d.insert(k, pk.metadata.at(k));
    return c10::IValue(std::move(d));
  });
}

ct_status ct_package_call_spec(ct_value **out, const ct_package *p) {
  return package_value(__func__, out, p,
                       [](const auto &pk) { return string_list_value(pk.call_spec); });
}

ct_status ct_package_constant_names(ct_value **out, const ct_package *p) {
  return package_value(__func__, out, p,
                       [](const auto &pk) { return string_list_value(pk.constant_names); });
}

ct_status ct_package_update_constants(ct_package *p, const char *const *names,
                                      const ct_tensor *const *tensors, size_t n) {
  const char *const ct_fn_ = __func__;
  return ct::guard(ct_fn_, [&] {
    CT_CHECK_NOT_NULL(p);
    CT_CHECK_ARG((names != nullptr && tensors != nullptr) || n == 0,
                 "%s: 'names' and 'tensors' must not be NULL when n > 0", ct_fn_);
    std::unordered_map<std::string, at::Tensor> map;
    for (size_t i = 0; i < n; ++i) {
      if (!names[i] || !tensors[i])
        return ct::set_error(CT_ERR_INVALID_ARGUMENT, "%s: names[%zu] or tensors[%zu] is NULL",
                             ct_fn_, i, i);
      std::string name = names[i];
      if (!std::binary_search(p->constant_names.begin(), p->constant_names.end(), name))
        return ct::set_error(CT_ERR_NOT_FOUND, "%s: the package has no constant '%s'", ct_fn_,
                             names[i]);
      const at::Tensor &t = tensors[i]->t;
      if (ct::device_type_code(t.device().type()) != p->device_type)
        return ct::set_error(
            CT_ERR_INVALID_ARGUMENT, "%s: constant '%s' is on %s, the package runs on %s", ct_fn_,
            names[i], t.device().str().c_str(),
            p->metadata.count("AOTI_DEVICE_KEY") ? p->metadata.at("AOTI_DEVICE_KEY").c_str() : "?");
      auto want = p->constant_dtypes.find(name);
      if (want != p->constant_dtypes.end() && want->second != static_cast<int32_t>(t.scalar_type()))
        return ct::set_error(CT_ERR_TYPE, "%s: constant '%s' is %s, the package expects %s", ct_fn_,
                             names[i], c10::toString(t.scalar_type()),
                             c10::toString(static_cast<c10::ScalarType>(want->second)));
      if (!map.emplace(name, t).second)
        return ct::set_error(CT_ERR_INVALID_ARGUMENT, "%s: constant '%s' given twice", ct_fn_,
                             names[i]);
    }
#if CTORCH_AOTI_EMPLACE_RUNTIME
    return replace_constants_2_6(ct_fn_, p, map);
#else
    p->loader->load_constants(map, /*use_inactive=*/false, /*check_full_update=*/false);
    return CT_OK;
#endif
  });
}

ct_status ct_package_device(int32_t *device_type, int32_t *device_index, const ct_package *p) {
  const char *const ct_fn_ = __func__;
  return ct::guard(ct_fn_, [&] {
    CT_CHECK_NOT_NULL(device_type);
    CT_CHECK_NOT_NULL(device_index);
    CT_CHECK_NOT_NULL(p);
    *device_type = p->device_type;
    *device_index = p->device_index;
    return CT_OK;
  });
}

}  // extern "C"
