// ct_module_load_buffer on arbitrary bytes, then what a user reads first.
//
// Structure-aware mutation (LLVMFuzzerCustomMutator): most inputs are valid
// zip archives (the seeds are TorchScript archives), and byte flips in a
// zip mostly stop at the zip reader (a CRC, a header). So the mutator opens
// the input with LibTorch's own zip reader, mutates one entry the loader
// parses -- constants.pkl, a code/*.py source, data.pkl -- with libFuzzer's
// mutations (and dictionary), and writes the archive again with LibTorch's
// writer, so the mutation reaches the TorchScript loader. One input in 8,
// and any input that is not a readable archive, gets libFuzzer's plain byte
// mutations (the zip reader stays fuzzed too).
#include "fuzz_util.h"

#include <caffe2/serialize/inline_container.h>
#include <caffe2/serialize/read_adapter_interface.h>

#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <utility>
#include <vector>

extern "C" size_t LLVMFuzzerMutate(uint8_t *data, size_t size, size_t max_size);

namespace {

class SpanReader : public caffe2::serialize::ReadAdapterInterface {
 public:
  SpanReader(const uint8_t *p, size_t n) : p_(p), n_(n) {}
  size_t size() const override { return n_; }
  size_t read(uint64_t pos, void *buf, size_t n, const char *) const override {
    if (pos >= n_) return 0;
    if (n > n_ - pos) n = n_ - pos;
    std::memcpy(buf, p_ + pos, n);
    return n;
  }

 private:
  const uint8_t *p_;
  size_t n_;
};

bool ends_with(const std::string &s, const char *tail) {
  size_t n = std::strlen(tail);
  return s.size() >= n && s.compare(s.size() - n, n, tail) == 0;
}

// The entries the TorchScript loader parses (not the zip reader).
bool loader_entry(const std::string &name) {
  return name == "constants.pkl" || name == "data.pkl" ||
         (name.compare(0, 5, "code/") == 0 && ends_with(name, ".py"));
}

// The archive in `data` with one loader entry mutated; 0 when `data` is not
// a readable archive with such an entry or the result would not fit.
size_t mutate_entry(uint8_t *data, size_t size, size_t max_size, std::mt19937 &rng) {
  std::vector<std::pair<std::string, std::string>> records;
  uint64_t version = 0;
  try {
    caffe2::serialize::PyTorchStreamReader reader(std::make_shared<SpanReader>(data, size));
    version = reader.version();
    for (const std::string &name : reader.getAllRecords()) {
      if (name == "version" || name == ".data/version") continue;  // the writer writes it
      at::DataPtr p;
      size_t n = 0;
      std::tie(p, n) = reader.getRecord(name);
      records.emplace_back(name, std::string(static_cast<const char *>(p.get()), n));
    }
  } catch (...) {
    return 0;
  }
  std::vector<size_t> targets;
  for (size_t i = 0; i < records.size(); ++i)
    if (loader_entry(records[i].first)) {
      targets.push_back(i);
      // constants.pkl and the code twice as often as data.pkl
      if (records[i].first != "data.pkl") targets.push_back(i);
    }
  if (targets.empty()) return 0;
  std::string &body = records[targets[rng() % targets.size()]].second;
  size_t old = body.size();
  body.resize(old * 2 + 64);
  body.resize(LLVMFuzzerMutate(reinterpret_cast<uint8_t *>(&body[0]), old, body.size()));
  std::string out;
  try {
    caffe2::serialize::PyTorchStreamWriter writer([&](const void *b, size_t n) {
      out.append(static_cast<const char *>(b), n);
      return n;
    });
    writer.setMinVersion(version);
    for (const auto &r : records) writer.writeRecord(r.first, r.second.data(), r.second.size());
    writer.writeEndOfFile();
  } catch (...) {
    return 0;
  }
  if (out.size() > max_size) return 0;
  std::memcpy(data, out.data(), out.size());
  return out.size();
}

}  // namespace

extern "C" size_t LLVMFuzzerCustomMutator(uint8_t *data, size_t size, size_t max_size,
                                          unsigned int seed) {
  std::mt19937 rng(seed);
  if (rng() % 8 != 0) {
    size_t n = mutate_entry(data, size, max_size, rng);
    if (n) return n;
  }
  return LLVMFuzzerMutate(data, size, max_size);
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  ct_module *m = nullptr;
  ct_status s = ct_module_load_buffer(&m, data, size, CT_DEVICE_CPU, -1);
  check_clean(s);
  if (s != CT_OK) return 0;
  ct_value *v = nullptr;
  if (ct_module_named_parameters(&v, m, 1) == CT_OK) ct_value_free(v);
  if (ct_module_methods(&v, m) == CT_OK) ct_value_free(v);
  ct_module_free(m);
  return 0;
}
