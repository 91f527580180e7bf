/* .npy files (version 1-3, little-endian, C order) read into and written from tensors. */
#include "cli.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

int npy_read(ct_tensor **out, const char *path, int32_t dev, int32_t idx) {
  FILE *f = fopen(path, "rb");
  unsigned char pre[12];
  char *hdr = NULL, *p;
  size_t hlen, i, ndim = 0, hsize;
  int64_t sizes[32], numel = 1;
  int32_t dtype = 0;
  void *data = NULL;
  int rc = EXIT_ERROR;
  ct_status st;
  if (!f) return fail("%s: %s", path, strerror(errno));
  if (fread(pre, 1, 8, f) != 8 || memcmp(pre, "\x93NUMPY", 6)) {
    fail("%s: not a .npy file (no \\x93NUMPY magic)", path);
    goto done;
  }
  hsize = pre[6] == 1 ? 2 : 4; /* header length: 2 bytes in version 1, 4 after */
  if (fread(pre + 8, 1, hsize, f) != hsize) {
    fail("%s: truncated .npy header", path);
    goto done;
  }
  hlen = pre[8] | (size_t)pre[9] << 8;
  if (hsize == 4) hlen |= (size_t)pre[10] << 16 | (size_t)pre[11] << 24;
  hdr = malloc(hlen + 1);
  if (!hdr || fread(hdr, 1, hlen, f) != hlen) {
    fail("%s: truncated .npy header", path);
    goto done;
  }
  hdr[hlen] = 0;
  if ((p = strstr(hdr, "'descr'")) && (p = strchr(p + 7, '\''))) {
    char descr[16] = {0};
    size_t k = 0;
    for (p++; *p && *p != '\'' && k < sizeof descr - 1; p++) descr[k++] = *p;
    if (descr[0] == '=') descr[0] = '<';
    if (!strcmp(descr, "<b1")) strcpy(descr, "|b1");
    for (i = 0; i < n_dtypes; i++)
      if (dtypes[i].descr &&
          (!strcmp(descr, dtypes[i].descr) || (descr[0] == '<' && dtypes[i].descr[0] == '|' &&
                                               !strcmp(descr + 1, dtypes[i].descr + 1))))
        dtype = dtypes[i].code;
    if (!dtype) {
      fail("%s: unsupported .npy dtype '%s' (little-endian numbers only)", path, descr);
      goto done;
    }
  } else {
    fail("%s: .npy header has no 'descr'", path);
    goto done;
  }
  if ((p = strstr(hdr, "'fortran_order'")) && (p = strchr(p + 15, ':')) &&
      !strncmp(p + 1 + strspn(p + 1, " "), "True", 4)) {
    fail("%s: Fortran-order arrays are not supported (save np.ascontiguousarray(a))", path);
    goto done;
  }
  if (!(p = strstr(hdr, "'shape'")) || !(p = strchr(p, '('))) {
    fail("%s: .npy header has no 'shape'", path);
    goto done;
  }
  for (p++; *p && *p != ')';) {
    if (*p == '-') {
      fail("%s: .npy shape has a negative dimension", path);
      goto done;
    }
    if (isdigit((unsigned char)*p)) {
      if (ndim == 32) {
        fail("%s: more than 32 dimensions", path);
        goto done;
      }
      sizes[ndim] = strtoll(p, &p, 10);
      if (__builtin_mul_overflow(numel, sizes[ndim++], &numel)) {
        fail("%s: .npy shape has more elements than fit in 64 bits", path);
        goto done;
      }
    } else {
      p++;
    }
  }
  {
    size_t nbytes;
    if (__builtin_mul_overflow((size_t)numel, ct_dtype_element_size(dtype), &nbytes)) {
      fail("%s: .npy shape has more bytes than fit in 64 bits", path);
      goto done;
    }
    data = malloc(nbytes ? nbytes : 1);
    if (!data) {
      fail("%s: out of memory", path);
      goto done;
    }
    if (fread(data, 1, nbytes, f) != nbytes) {
      fail("%s: file ends before its %zu bytes of data", path, nbytes);
      goto done;
    }
  }
  st = ct_tensor_from_data(out, data, sizes, ndim, dtype, dev, idx);
  if (st != CT_OK) {
    fail_ct(st, path);
    goto done;
  }
  rc = 0;
done:
  free(data);
  free(hdr);
  fclose(f);
  return rc;
}

/* Writes a tensor as .npy (CPU, contiguous; bfloat16 is written as float32). */
int npy_write(const char *path, const ct_tensor *t) {
  ct_tensor *c = NULL, *cc = NULL;
  int32_t dtype = ct_tensor_dtype(t);
  const char *descr = NULL;
  char hdr[1024], shape[600];
  size_t i, len, pad;
  unsigned char pre[10] = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0, 0, 0};
  FILE *f;
  ct_status st;
  int64_t d, nd = ct_tensor_ndim(t);
  int rc = EXIT_ERROR;
  if (dtype == CT_BFLOAT16) dtype = CT_FLOAT32;
  for (i = 0; i < n_dtypes; i++)
    if (dtypes[i].code == dtype) descr = dtypes[i].descr;
  if (!descr) return fail("%s: numpy has no dtype for %s", path, dtype_name(dtype));
  if ((st = ct_tensor_to(&c, t, CT_DEVICE_CPU, -1, dtype, 0, 0)) != CT_OK ||
      (st = ct_tensor_contiguous(&cc, c)) != CT_OK) {
    ct_tensor_free(c);
    return fail_ct(st, path);
  }
  len = (size_t)snprintf(shape, sizeof shape, "(");
  for (d = 0; d < nd && len < sizeof shape; d++)
    len += (size_t)snprintf(shape + len, sizeof shape - len, "%lld,%s",
                            (long long)ct_tensor_sizes(cc)[d], d + 1 < nd ? " " : "");
  if (nd > 1 && len > 1) len--; /* (2, 3) not (2, 3,) */
  if (len < sizeof shape) snprintf(shape + len, sizeof shape - len, ")");
  len = (size_t)snprintf(hdr, sizeof hdr, "{'descr': '%s', 'fortran_order': False, 'shape': %s, }",
                         descr, shape);
  pad = 64 - (10 + len + 1) % 64;
  memset(hdr + len, ' ', pad);
  len += pad;
  hdr[len++] = '\n';
  pre[8] = (unsigned char)(len & 0xff);
  pre[9] = (unsigned char)(len >> 8);
  if (!(f = fopen(path, "wb"))) {
    fail("%s: %s", path, strerror(errno));
    goto done;
  }
  if (fwrite(pre, 1, 10, f) != 10 || fwrite(hdr, 1, len, f) != len ||
      fwrite(ct_tensor_data_ptr(cc), 1, ct_tensor_nbytes(cc), f) != ct_tensor_nbytes(cc)) {
    fail("%s: write failed: %s", path, strerror(errno));
    fclose(f);
    goto done;
  }
  if (fclose(f)) {
    fail("%s: %s", path, strerror(errno));
    goto done;
  }
  rc = 0;
done:
  ct_tensor_free(cc);
  ct_tensor_free(c);
  return rc;
}
