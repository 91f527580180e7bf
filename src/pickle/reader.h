// ctorch's torch.save reader (src/pickle/): the declarations its files share.
// machine.cpp runs pickle opcodes, globals.cpp gives the Python callables a
// file names (tensor rebuilds, numpy, builtins) their meaning, objects.cpp
// holds the generic objects that stand for every other Python object,
// archives.cpp the zip and legacy containers with their tensor data, and
// api.cpp the ct_pickle_* entry points. It never runs Python code.
#pragma once

#include <ATen/core/ivalue.h>

#include <string>
#include <vector>

namespace caffe2 {
namespace serialize {
class PyTorchStreamReader;
}
}  // namespace caffe2

namespace ct {
namespace pickle {

// A malformed file: std::runtime_error with the message.
[[noreturn]] void fail(const std::string &msg);
// A file refused on purpose (too deep, a tensor outside its storage):
// ct::Error(CT_ERR_IO), reported as "cannot load <file>: <why>".
[[noreturn]] void refuse(const std::string &why);

// A stack or memo entry: a value, or a reference to a Python global
// ("module.name") that REDUCE/NEWOBJ/BUILD interpret.
struct Item {
  c10::IValue v;
  std::string global;
  // How deep lists, tuples, dicts and objects nest in v (0: none), as built;
  // a memoized container filled later can make it too small, so the value
  // is checked exactly again at STOP.
  int depth = 0;
};

// The depth of a container around something `inner` deep; refuses past
// ct::kMaxNesting.
int nest(int inner);
// An item as a value: a global used as a value is its name as a string.
c10::IValue value(Item it);

// Every container and object made while reading one pickle: kept alive
// until the read ends, so nothing dropped is destroyed while it runs, then
// let go without recursion (a value nested 100,000 deep would overflow the
// stack in destructors).
class Keep {
 public:
  Keep() = default;
  Keep(const Keep &) = delete;
  Keep &operator=(const Keep &) = delete;
  ~Keep();
  c10::IValue operator()(c10::IValue v) {
    owned_.push_back(v);
    return v;
  }

 private:
  std::vector<c10::IValue> owned_;
};

// Where a pickle's tensor data lives (the zip records, the legacy file's tail).
struct Storages {
  virtual ~Storages() = default;
  // A tensor over the storage of a persistent id ('storage', type, key,
  // location, numel[, view]).
  virtual at::Tensor get(c10::ScalarType st, const std::string &key, int64_t numel,
                         const c10::IValue &view) = 0;
};
// The storage a persistent id names (archives.cpp); fails without storages.
at::Tensor persistent_storage(const c10::IValue &pid, Storages *storages);

// REDUCE / NEWOBJ: the global `fn` called on `args` (globals.cpp). Known
// callables give values; every other one a generic object.
Item call_global(const std::string &fn, Item args, Keep &keep, int calls = 0);
// BUILD: `state` into the object `obj`. Returns a value that replaces the
// object wherever it was put (a numpy array becomes a tensor), or None.
c10::IValue build_object(Item &obj, Item state);

// Runs one pickle from data (machine.cpp); *stop gets the byte after its STOP.
c10::IValue run(const char *data, size_t size, Storages *storages, const char **stop);

// Generic objects (objects.cpp): one class per Python class name with the
// slots kObjectArgs (the constructor arguments, a tuple) and kObjectState
// (the state it was pickled with, None if none).
extern const char *const kObjectArgs;
extern const char *const kObjectState;
c10::IValue make_object(const std::string &cls, c10::IValue args);

// Reads a torch.save file (zip or legacy) or a bare pickle (archives.cpp).
// Throws std::exception with a message on failure.
c10::IValue load(const char *data, size_t size);

// Reads the pickle `record` of a zip archive with its tensors over the
// records `tensor_dir`<key> (a TorchScript archive's constants.pkl and
// "constants/"), checking every tensor against its storage as load() does,
// before LibTorch's own reader makes them (LibTorch compares constants with
// at::equal while it compiles the code, reading whatever their geometry
// says). Throws ct::Error (CT_ERR_IO) with why when a tensor does not fit;
// false when this reader cannot read the pickle (not refused: LibTorch's
// reader then judges it), true when every tensor fits.
bool check_archive_tensors(caffe2::serialize::PyTorchStreamReader &reader,
                           const std::string &record, const std::string &tensor_dir);

}  // namespace pickle
}  // namespace ct
