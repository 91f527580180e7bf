// Loading and saving TorchScript modules (ct_module_load, _load_buffer,
// _save, _save_buffer): files and buffers, map_location, extra files, and
// the checks around LibTorch's loader -- every pickle of the archive for
// nesting and constants.pkl's tensors against their storages before, every
// tensor against its storage after.
#include "checks.h"
#include "file_io.h"
#include "internal.h"
#include "locks.h"
#include "messages.h"
#include "pickle/reader.h"

#include <caffe2/serialize/file_adapter.h>
#include <caffe2/serialize/inline_container.h>
#include <caffe2/serialize/read_adapter_interface.h>
#include <torch/csrc/jit/serialization/import.h>
#include <torch/csrc/jit/serialization/pickle.h>

#include <memory>
#include <sstream>
#include <string>

namespace {

using c10::IValue;
using ct::with_code;

ct_status load_impl(const char *func, ct_module **out,
                    std::shared_ptr<caffe2::serialize::ReadAdapterInterface> rai,
                    const std::string &what, c10::optional<c10::Device> device) {
  torch::jit::ExtraFilesMap extra;
  ct_status st = with_code(func, CT_ERR_IO, "", [&] {
    if (rai->size() == 0) ct::raise(CT_ERR_IO, "%s is empty", what.c_str());
    caffe2::serialize::PyTorchStreamReader reader(rai);
    if (!reader.hasRecord("constants.pkl")) {
      if (reader.hasRecord("data.pkl"))
        ct::raise(CT_ERR_IO,
                  "%s is a torch.save pickle, not a TorchScript archive (use "
                  "ct_pickle_load)",
                  what.c_str());
      ct::raise(CT_ERR_IO, "%s is not a TorchScript archive (no constants.pkl)", what.c_str());
    }
    for (const std::string &r : reader.getAllRecords()) {
      if (r.compare(0, 6, "extra/") == 0 && r.size() > 6) extra.emplace(r.substr(6), std::string());
      // LibTorch's Unpickler crashes on deep pickles (its destructor and dict
      // keys recurse per level): every pickle of the archive is checked first.
      const bool debug = r.size() > 10 && r.compare(r.size() - 10, 10, ".debug_pkl") == 0;
      if (debug || (r.size() > 4 && r.compare(r.size() - 4, 4, ".pkl") == 0)) {
        at::DataPtr pkl;
        size_t n = 0;
        std::tie(pkl, n) = reader.getRecord(r);
        ct::PickleScan scan = ct::scan_pickle_nesting(static_cast<const char *>(pkl.get()), n);
        if (scan == ct::PickleScan::kTooDeep)
          ct::raise(CT_ERR_IO, "cannot load %s: %s: %s", what.c_str(), r.c_str(),
                    ct::nesting_too_deep().c_str());
        if (scan == ct::PickleScan::kUnsure)
          ct::raise(CT_ERR_IO,
                    "cannot load %s: %s is not a pickle as TorchScript writes them (a container "
                    "filled after it was used, or an inconsistent stack)",
                    what.c_str(), r.c_str());
        // A code file's source ranges (code/X.py.debug_pkl) are read lazily,
        // inside ErrorReport::what() when the code has an error: an exception
        // there ends the process (what() is noexcept). Read them here once.
        if (debug) try {
            ct::release_value(torch::jit::unpickle(static_cast<const char *>(pkl.get()), n));
          } catch (const std::exception &e) {
            ct::raise(CT_ERR_IO, "cannot load %s: %s is not a valid pickle (%s)", what.c_str(),
                      r.c_str(), ct::exception_text(e).c_str());
          }
      }
    }
    // LibTorch compares tensor constants with at::equal while it compiles
    // the code (constant pooling), before any check after the load could
    // run: constants.pkl's tensors are checked against their records first.
    try {
      ct::pickle::check_archive_tensors(reader, "constants.pkl", "constants/");
    } catch (const ct::Error &e) {
      ct::raise(e.code, "cannot load %s: constants.pkl: %s", what.c_str(), e.msg.c_str());
    }
    return CT_OK;
  });
  if (st != CT_OK) return st;
  std::string prefix = "cannot load " + what + ": ";
  return with_code(func, CT_ERR_IO, prefix.c_str(), [&] {
    ct::RegistryRead registry_read;
    torch::jit::Module m = torch::jit::load(rai, device, extra);
    // A malformed file loads tensors that reach past their storages (#10).
    ct_status fit = ct::check_loaded_module(func, what.c_str(), m);
    if (fit != CT_OK) return fit;
    std::unique_ptr<ct_module> h(new ct_module{std::move(m), {}});
    for (auto &kv : extra) h->extra_files.emplace(kv.first, std::move(kv.second));
    *out = h.release();
    return CT_OK;
  });
}

ct_status check_extra_files(const char *func, const ct_value *extra_files,
                            torch::jit::ExtraFilesMap *out) {
  if (!extra_files) return CT_OK;
  const IValue &v = extra_files->v;
  if (!v.isGenericDict())
    return ct::set_error(CT_ERR_TYPE, "%s: extra_files must be a Dict[str, str], got %s", func,
                         ct::value_type_name(v).c_str());
  for (const auto &e : v.toGenericDict()) {
    if (!e.key().isString() || !e.value().isString())
      return ct::set_error(CT_ERR_TYPE, "%s: extra_files must be a Dict[str, str], got %s", func,
                           ct::value_type_name(v).c_str());
    (*out)[e.key().toStringRef()] = e.value().toStringRef();
  }
  return CT_OK;
}

}  // namespace

extern "C" {

ct_status ct_module_load(ct_module **out, const char *path, int32_t device_type,
                         int32_t device_index) {
  const char *const ct_fn_ = __func__;
  return ct::guard(ct_fn_, [&] {
    CT_CHECK_NOT_NULL(out);
    CT_CHECK_NOT_NULL(path);
    c10::optional<c10::Device> dev;
    ct_status st = ct::to_optional_device(ct_fn_, device_type, device_index, &dev);
    if (st != CT_OK) return st;
    st = ct::check_input_file(ct_fn_, path);
    if (st != CT_OK) return st;
    std::string what = std::string("'") + path + "'";
    std::shared_ptr<caffe2::serialize::ReadAdapterInterface> rai;
    st = with_code(ct_fn_, CT_ERR_IO, "", [&] {
      rai = std::make_shared<caffe2::serialize::FileAdapter>(path);
      return CT_OK;
    });
    if (st != CT_OK) return st;
    return load_impl(ct_fn_, out, std::move(rai), what, dev);
  });
}

ct_status ct_module_load_buffer(ct_module **out, const void *data, size_t size, int32_t device_type,
                                int32_t device_index) {
  const char *const ct_fn_ = __func__;
  return ct::guard(ct_fn_, [&] {
    CT_CHECK_NOT_NULL(out);
    CT_CHECK_NOT_NULL(data);
    c10::optional<c10::Device> dev;
    ct_status st = ct::to_optional_device(ct_fn_, device_type, device_index, &dev);
    if (st != CT_OK) return st;
    return load_impl(ct_fn_, out, std::make_shared<ct::BorrowedReader>(data, size), "the buffer",
                     dev);
  });
}

ct_status ct_module_save(const ct_module *m, const char *path, const ct_value *extra_files) {
  const char *const ct_fn_ = __func__;
  return ct::guard(ct_fn_, [&] {
    CT_CHECK_NOT_NULL(m);
    CT_CHECK_NOT_NULL(path);
    torch::jit::ExtraFilesMap extra;
    ct_status st = check_extra_files(ct_fn_, extra_files, &extra);
    if (st != CT_OK) return st;
    std::string prefix = std::string("cannot save to '") + path + "': ";
    return with_code(ct_fn_, CT_ERR_IO, prefix.c_str(), [&] {
      m->m.save(path, extra);
      return CT_OK;
    });
  });
}

ct_status ct_module_save_buffer(void **data_out, size_t *size_out, const ct_module *m,
                                const ct_value *extra_files) {
  const char *const ct_fn_ = __func__;
  return ct::guard(ct_fn_, [&] {
    CT_CHECK_NOT_NULL(data_out);
    CT_CHECK_NOT_NULL(size_out);
    CT_CHECK_NOT_NULL(m);
    torch::jit::ExtraFilesMap extra;
    ct_status st = check_extra_files(ct_fn_, extra_files, &extra);
    if (st != CT_OK) return st;
    std::ostringstream os;
    st = with_code(ct_fn_, CT_ERR_IO, "cannot save: ", [&] {
      m->m.save(os, extra);
      return CT_OK;
    });
    if (st != CT_OK) return st;
    const std::string bytes = os.str();
    ct::copy_out(bytes.data(), bytes.size(), data_out, size_out);
    return CT_OK;
  });
}

}  // extern "C"
