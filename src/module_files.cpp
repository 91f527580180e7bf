// Loading and saving TorchScript modules (ct_module_load, _load_buffer,
// _save, _save_buffer): files and buffers, map_location, extra files, and
// the checks around LibTorch's loader -- every pickle of the archive for
// nesting and constants.pkl's tensors against their storages before (code
// files' source ranges that would crash LibTorch's error messages left out),
// every tensor against its storage after.
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
#include <torch/csrc/jit/serialization/source_range_serialization.h>

#include <algorithm>
#include <memory>
#include <sstream>
#include <string>

namespace {

using c10::IValue;
using ct::with_code;

// Why a code file's unpickled source ranges (.debug_pkl) would make
// LibTorch's SourceRangeDeserializer throw or read out of bounds (it indexes
// tuples and its string table unchecked), or "" when they are sound: a tuple
// of (byte offset, (source, start, end)[, ...]) records, optionally after
// ("FORMAT_WITH_STRING_TABLE", (strings...), ...) where a source is
// ([text indices], filename index, line); else a source is (text,
// filename or None, line).
std::string source_ranges_problem(const IValue &v) {
  if (!v.isTuple() || v.toTupleRef().elements().empty()) return "not a tuple of source ranges";
  auto items = v.toTupleRef().elements();
  std::vector<size_t> table;  // the string table's entries' lengths
  bool with_table = items[0].isString() &&
                    items[0].toStringRef() == std::string(torch::jit::kFormatWithStringTable);
  if (with_table) {
    if (items.size() < 3 || !items[1].isTuple() || !items[2].isTuple())
      return "a string-table header without its table and records";
    for (const IValue &x : items[1].toTupleRef().elements()) {
      if (!x.isString()) return "a string table entry that is not a string";
      table.push_back(x.toStringRef().size());
    }
    items = items[2].toTupleRef().elements();
  }
  auto index = [&](const IValue &x) {
    return x.isInt() && x.toInt() >= 0 && static_cast<uint64_t>(x.toInt()) < table.size();
  };
  for (const IValue &rec : items) {
    if (!rec.isTuple() || rec.toTupleRef().elements().size() < 2)
      return "a record that is not (offset, range)";
    const auto &re = rec.toTupleRef().elements();
    if (!re[0].isInt() || !re[1].isTuple() || re[1].toTupleRef().elements().size() != 3)
      return "a record that is not (offset, (source, start, end))";
    const auto &range = re[1].toTupleRef().elements();
    if (!range[0].isTuple() || range[0].toTupleRef().elements().size() != 3 || !range[1].isInt() ||
        !range[2].isInt())
      return "a source range that is not ((text, file, line), start, end)";
    const auto &src = range[0].toTupleRef().elements();
    // (start and end are not compared with the text: LibTorch's own files
    // have ranges past the text pieces a record lists.)
    if (with_table) {
      if (!src[0].isIntList() || !index(src[1]) || !src[2].isInt())
        return "a source that is not ([text indices], file index, line)";
      for (int64_t i : src[0].toIntVector())
        if (!index(IValue(i))) return "a text index outside the string table";
    } else if (!src[0].isString() || !(src[1].isNone() || src[1].isString()) || !src[2].isInt()) {
      return "a source that is not (text, file, line)";
    }
  }
  return std::string();
}

// Why a code file's source ranges (a .debug_pkl record) cannot be used,
// or "" when they can: its nesting, LibTorch's unpickle, then their shape.
std::string debug_pkl_problem(const char *data, size_t n) {
  ct::PickleScan scan = ct::scan_pickle_nesting(data, n);
  if (scan == ct::PickleScan::kTooDeep) return ct::nesting_too_deep();
  if (scan == ct::PickleScan::kUnsure) return "not a pickle as TorchScript writes them";
  try {
    IValue ranges = torch::jit::unpickle(data, n);
    std::string why = source_ranges_problem(ranges);
    ct::release_value(std::move(ranges));
    return why;
  } catch (const std::exception &e) {
    return "not a valid pickle (" + ct::exception_text(e) + ")";
  }
}

// The archive without the records in `drop`, as bytes (the format version
// kept; the writer writes the version record itself).
std::string archive_without(caffe2::serialize::PyTorchStreamReader &reader,
                            const std::vector<std::string> &drop) {
  std::string bytes;
  caffe2::serialize::PyTorchStreamWriter writer([&](const void *buf, size_t n) {
    bytes.append(static_cast<const char *>(buf), n);
    return n;
  });
  writer.setMinVersion(reader.version());
  for (const std::string &r : reader.getAllRecords()) {
    if (std::find(drop.begin(), drop.end(), r) != drop.end() || r == "version" ||
        r == ".data/version" || r == ".data/serialization_id")
      continue;
    at::DataPtr data;
    size_t n = 0;
    std::tie(data, n) = reader.getRecord(r);
    writer.writeRecord(r, data.get(), n);
  }
  writer.writeEndOfFile();
  return bytes;
}

ct_status load_impl(const char *func, ct_module **out,
                    std::shared_ptr<caffe2::serialize::ReadAdapterInterface> rai,
                    const std::string &what, c10::optional<c10::Device> device) {
  torch::jit::ExtraFilesMap extra;
  // The archive without its unusable source ranges, when it has any.
  std::string repaired;
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
    std::vector<std::string> bad_debug;
    for (const std::string &r : reader.getAllRecords()) {
      if (r.compare(0, 6, "extra/") == 0 && r.size() > 6) extra.emplace(r.substr(6), std::string());
      const bool debug = r.size() > 10 && r.compare(r.size() - 10, 10, ".debug_pkl") == 0;
      if (!debug && !(r.size() > 4 && r.compare(r.size() - 4, 4, ".pkl") == 0)) continue;
      at::DataPtr pkl;
      size_t n = 0;
      std::tie(pkl, n) = reader.getRecord(r);
      const char *bytes = static_cast<const char *>(pkl.get());
      // A code file's source ranges (code/X.py.debug_pkl) only serve error
      // messages, and LibTorch reads them lazily, inside the noexcept
      // ErrorReport::what() when the code has an error: a corrupt one would
      // end the process there. They are read here; unusable ones are left out
      // (the model loads, its code errors without source lines).
      if (debug) {
        if (!debug_pkl_problem(bytes, n).empty()) bad_debug.push_back(r);
        continue;
      }
      // LibTorch's Unpickler crashes on deep pickles (its destructor and dict
      // keys recurse per level): every other pickle of the archive is checked first.
      ct::PickleScan scan = ct::scan_pickle_nesting(bytes, n);
      if (scan == ct::PickleScan::kTooDeep)
        ct::raise(CT_ERR_IO, "cannot load %s: %s: %s", what.c_str(), r.c_str(),
                  ct::nesting_too_deep().c_str());
      if (scan == ct::PickleScan::kUnsure)
        ct::raise(CT_ERR_IO,
                  "cannot load %s: %s is not a pickle as TorchScript writes them (a container "
                  "filled after it was used, or an inconsistent stack)",
                  what.c_str(), r.c_str());
    }
    // LibTorch compares tensor constants with at::equal while it compiles
    // the code (constant pooling), before any check after the load could
    // run: constants.pkl's tensors are checked against their records first.
    try {
      ct::pickle::check_archive_tensors(reader, "constants.pkl", "constants/");
    } catch (const ct::Error &e) {
      ct::raise(e.code, "cannot load %s: constants.pkl: %s", what.c_str(), e.msg.c_str());
    }
    if (!bad_debug.empty()) repaired = archive_without(reader, bad_debug);
    return CT_OK;
  });
  if (st != CT_OK) return st;
  if (!repaired.empty()) rai = std::make_shared<ct::BorrowedReader>(repaired.data(), repaired.size());
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
