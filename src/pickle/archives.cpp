// The containers of torch.save files for ctorch's reader and where their
// tensor data lives: the zip archive (torch.save since 1.6: data.pkl and
// data/<key> records), the legacy format (before 1.6, or
// _use_new_zipfile_serialization=False: pickles followed by raw storages),
// and a bare pickle without tensor data. Storages are checked against the
// sizes the pickle claims before any tensor is made over them.
#include "pickle/reader.h"

#include "checks.h"
#include "file_io.h"
#include "internal.h"

#include <caffe2/serialize/inline_container.h>

#include <cstring>
#include <unordered_map>
#include <unordered_set>

namespace ct {
namespace pickle {
namespace {

c10::ScalarType storage_dtype(const std::string &cls) {
  // "torch.FloatStorage" -> Float; "torch.storage.UntypedStorage" -> Byte.
  std::string n = cls.substr(cls.rfind('.') + 1);
  if (n == "UntypedStorage" || n == "TypedStorage") return c10::kByte;
  if (n.size() > 7 && n.compare(n.size() - 7, 7, "Storage") == 0) n.resize(n.size() - 7);
  for (int i = 0; i < static_cast<int>(c10::ScalarType::NumOptions); ++i) {
    auto st = static_cast<c10::ScalarType>(i);
    if (n == c10::toString(st)) return st;
  }
  fail("unknown storage type " + cls);
}

// Bytes of `numel` elements of `st`, or -1 if negative or past int64.
int64_t storage_bytes(int64_t numel, c10::ScalarType st) {
  int64_t n;
  if (numel < 0 || __builtin_mul_overflow(numel, static_cast<int64_t>(c10::elementSize(st)), &n))
    return -1;
  return n;
}

// ---- Zip (torch.save since 1.6) ----

// A tensor of dtype st over the whole storage (quantized storages hold ints).
at::Tensor storage_tensor(c10::Storage s, c10::ScalarType st) {
  auto opts = at::TensorOptions().dtype(st);
  int64_t es = static_cast<int64_t>(c10::elementSize(st));
  int64_t n = static_cast<int64_t>(s.nbytes()) / es;
  if (c10::isQIntType(st))  // the integers; _rebuild_qtensor makes the quantized tensor
    opts = opts.dtype(st == c10::kQInt8 ? c10::kChar : st == c10::kQInt32 ? c10::kInt : c10::kByte);
  return at::empty({0}, opts).set_(s, 0, {n}, {1});
}

// The storages of a zip archive's pickle: records `dir`<key> ("data/" for
// torch.save files, "constants/" for a TorchScript archive's constants.pkl).
struct ZipStorages : Storages {
  caffe2::serialize::PyTorchStreamReader &reader;
  std::string dir;
  std::unordered_map<std::string, c10::Storage> cache;
  ZipStorages(caffe2::serialize::PyTorchStreamReader &r, std::string d)
      : reader(r), dir(std::move(d)) {}
  at::Tensor get(c10::ScalarType st, const std::string &key, int64_t numel,
                 const c10::IValue &) override {
    auto it = cache.find(key);
    if (it == cache.end()) {
      at::DataPtr dp;
      size_t n = 0;
      std::tie(dp, n) = reader.getRecord(dir + key);
      it = cache
               .emplace(key, c10::Storage(c10::Storage::use_byte_size_t(), n, std::move(dp),
                                          nullptr, false))
               .first;
    }
    // The pickle says how large the storage is; the record is what there is.
    int64_t claimed = storage_bytes(numel, st);
    if (claimed < 0 || claimed > static_cast<int64_t>(it->second.nbytes()))
      refuse(
          "storage '" + dir + key + "' claims " +
          (claimed < 0 ? std::to_string(numel) + " elements" : std::to_string(claimed) + " bytes") +
          " but the file holds " + std::to_string(it->second.nbytes()));
    return storage_tensor(it->second, st);
  }
};

// ---- Legacy (torch.save before 1.6, or _use_new_zipfile_serialization=False) --------

struct LegacyStorages : Storages {
  std::unordered_map<std::string, std::pair<at::Tensor, c10::ScalarType>> by_key;  // bytes
  // The storages' bytes follow the pickles in the file: none can be larger.
  int64_t max_bytes;
  explicit LegacyStorages(size_t file_size) : max_bytes(static_cast<int64_t>(file_size)) {}
  at::Tensor get(c10::ScalarType st, const std::string &key, int64_t numel,
                 const c10::IValue &view) override {
    auto it = by_key.find(key);
    if (it == by_key.end()) {
      int64_t nbytes = storage_bytes(numel, st);
      if (nbytes < 0 || nbytes > max_bytes)
        refuse("legacy storage '" + key + "' of " + std::to_string(numel) + " " +
               c10::toString(st) + " elements is larger than the file");
      at::Tensor bytes = at::empty({nbytes}, at::TensorOptions().dtype(c10::kByte));
      it = by_key.emplace(key, std::make_pair(bytes, st)).first;
    }
    if (view.isTuple()) fail("legacy storage views are not supported");
    return storage_tensor(it->second.first.storage(), st);
  }
};

const unsigned char kLegacyMagic[] = {0x80, 0x02, 0x8a, 0x0a, 0x6c, 0xfc, 0x9c, 0x46,
                                      0xf9, 0x20, 0x6a, 0xa8, 0x50, 0x19, '.'};

c10::IValue load_legacy(const char *data, size_t size) {
  const char *p = data + sizeof kLegacyMagic, *end = data + size;
  auto next = [&](Storages *s) { return run(p, end - p, s, &p); };
  c10::IValue version = next(nullptr);
  if (!version.isInt() || version.toInt() != 1001)
    fail("unsupported legacy torch.save protocol version");
  next(nullptr);  // sys_info
  LegacyStorages storages(size);
  c10::IValue result = next(&storages);
  c10::IValue keys = next(nullptr);
  if (!keys.isList()) fail("legacy file without storage keys");
  std::unordered_set<std::string> filled;
  for (const auto &k : keys.toListRef()) {
    auto it = storages.by_key.find(k.isString() ? k.toStringRef() : std::string());
    if (it == storages.by_key.end() || !filled.insert(it->first).second)
      fail("legacy file with an unknown or repeated storage key");
    if (end - p < 8) fail("truncated legacy file");
    int64_t numel;
    std::memcpy(&numel, p, 8);
    p += 8;
    int64_t nbytes = storage_bytes(numel, it->second.second);
    if (nbytes < 0 || nbytes != it->second.first.numel() || nbytes > end - p)
      fail("legacy file with a storage of the wrong size");
    if (nbytes) std::memcpy(it->second.first.data_ptr(), p, nbytes);
    p += nbytes;
  }
  // Each key once, and every storage the pickle used has its data.
  if (filled.size() != storages.by_key.size())
    fail("legacy file without the data of every storage");
  return result;
}

}  // namespace

at::Tensor persistent_storage(const c10::IValue &pid, Storages *storages) {
  if (!pid.isTuple()) fail("unexpected persistent id");
  std::vector<c10::IValue> e(pid.toTupleRef().elements().begin(),
                             pid.toTupleRef().elements().end());
  if (e.size() < 5 || !e[0].isString() || e[0].toStringRef() != "storage")
    fail("unexpected persistent id");
  if (!storages) fail("this pickle refers to tensor data it does not have");
  if (!e[1].isString() || !e[2].isString() || !e[4].isInt()) fail("unexpected persistent id");
  c10::ScalarType st = storage_dtype(e[1].toStringRef());
  return storages->get(st, e[2].toStringRef(), e[4].toInt(), e.size() > 5 ? e[5] : c10::IValue());
}

bool check_archive_tensors(caffe2::serialize::PyTorchStreamReader &reader,
                           const std::string &record, const std::string &tensor_dir) {
  at::DataPtr pkl;
  size_t n = 0;
  c10::IValue v;
  try {
    std::tie(pkl, n) = reader.getRecord(record);
    ZipStorages storages(reader, tensor_dir);
    v = run(static_cast<const char *>(pkl.get()), n, &storages, nullptr);
  } catch (const ct::Error &) {
    throw;  // refused: a tensor outside its storage, a storage larger than its record
  } catch (const std::exception &) {
    return false;  // not a pickle this reader knows: LibTorch's reader judges it
  }
  ct::release_value(std::move(v));
  return true;
}

c10::IValue load(const char *data, size_t size) {
  if (size >= sizeof kLegacyMagic && std::memcmp(data, kLegacyMagic, sizeof kLegacyMagic) == 0)
    return load_legacy(data, size);
  if (size >= 4 && std::memcmp(data, "PK\x03\x04", 4) == 0) {
    caffe2::serialize::PyTorchStreamReader reader(std::make_shared<ct::BorrowedReader>(data, size));
    at::DataPtr pkl;
    size_t n = 0;
    std::tie(pkl, n) = reader.getRecord("data.pkl");
    ZipStorages storages(reader, "data/");
    return run(static_cast<const char *>(pkl.get()), n, &storages, nullptr);
  }
  // A bare pickle without tensor data (pickle.dump of plain objects).
  return run(data, size, nullptr, nullptr);
}

}  // namespace pickle
}  // namespace ct
