// Files and caller-owned buffers (declared in file_io.h).
#include "file_io.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <new>

namespace ct {

ct_status check_input_file(const char *func, const char *path) {
  struct stat st;
  if (::stat(path, &st) != 0)
    return set_error(errno == ENOENT ? CT_ERR_NOT_FOUND : CT_ERR_IO, "%s: cannot open '%s': %s",
                     func, path, std::strerror(errno));
  if (S_ISDIR(st.st_mode)) return set_error(CT_ERR_IO, "%s: '%s' is a directory", func, path);
  // A FIFO or a terminal would block the read forever; a device has no end.
  if (!S_ISREG(st.st_mode))
    return set_error(CT_ERR_IO, "%s: '%s' is not a regular file (a FIFO, socket or device)", func,
                     path);
  return CT_OK;
}

ct_status read_file(const char *func, const char *path, std::vector<char> *out) {
  ct_status rc = check_input_file(func, path);
  if (rc != CT_OK) return rc;
  FILE *f = std::fopen(path, "rb");
  if (!f) return set_error(CT_ERR_IO, "%s: cannot open '%s': %s", func, path, std::strerror(errno));
  std::vector<char> buf;
  char chunk[1 << 16];
  size_t k;
  try {
    while ((k = std::fread(chunk, 1, sizeof chunk, f)) > 0) buf.insert(buf.end(), chunk, chunk + k);
  } catch (...) {
    std::fclose(f);
    throw;
  }
  bool bad = std::ferror(f) != 0;
  std::fclose(f);
  if (bad) return set_error(CT_ERR_IO, "%s: error reading '%s'", func, path);
  *out = std::move(buf);
  return CT_OK;
}

ct_status write_file(const char *func, const char *path, const void *data, size_t size) {
  FILE *f = std::fopen(path, "wb");
  if (!f)
    return set_error(CT_ERR_IO, "%s: cannot open '%s' for writing: %s", func, path,
                     std::strerror(errno));
  size_t w = std::fwrite(data, 1, size, f);
  int rc = std::fclose(f);
  if (w != size || rc != 0) return set_error(CT_ERR_IO, "%s: error writing '%s'", func, path);
  return CT_OK;
}

void copy_out(const void *data, size_t size, void **data_out, size_t *size_out) {
  void *p = std::malloc(size == 0 ? 1 : size);
  if (!p) throw std::bad_alloc();
  if (size) std::memcpy(p, data, size);
  *data_out = p;
  *size_out = size;
}

}  // namespace ct
