// Files and memory buffers shared by module.cpp and src/pickle/: paths opened
// with ctorch's status codes, a borrowed buffer as archive-reader input, and
// caller-owned copies of output bytes. Internal; not installed.
#pragma once

#include "messages.h"

#include <caffe2/serialize/read_adapter_interface.h>

#include <algorithm>
#include <cstring>
#include <vector>

namespace ct {

// A borrowed byte range as PyTorchStreamReader input (reads past the end
// return fewer bytes; the reader then reports a corrupt archive).
class BorrowedReader final : public caffe2::serialize::ReadAdapterInterface {
 public:
  BorrowedReader(const void *data, size_t size)
      : data_(static_cast<const char *>(data)), size_(size) {}
  size_t size() const override { return size_; }
  size_t read(uint64_t pos, void *buf, size_t n, const char * /*what*/ = "") const override {
    if (pos >= size_) return 0;
    size_t k = std::min<uint64_t>(n, size_ - pos);
    std::memcpy(buf, data_ + pos, k);
    return k;
  }

 private:
  const char *data_;
  size_t size_;
};

// Sets the error and returns non-OK unless `path` is a regular file (no
// directory, FIFO, socket or device): CT_ERR_NOT_FOUND for a missing path,
// CT_ERR_IO otherwise.
ct_status check_input_file(const char *func, const char *path);

// Reads a whole file (check_input_file's codes; CT_ERR_IO on read errors).
ct_status read_file(const char *func, const char *path, std::vector<char> *out);

// Writes bytes to a file; CT_ERR_IO (error set) when it cannot.
ct_status write_file(const char *func, const char *path, const void *data, size_t size);

// Stores a caller-owned (malloc'd, freed with ct_free) copy of the bytes.
void copy_out(const void *data, size_t size, void **data_out, size_t *size_out);

}  // namespace ct
