// DLPack import, legacy and versioned, of structs built from the bytes. The
// producer's deleter must run exactly once; the data is read back only when
// the struct describes memory inside the harness's buffer.
#include "fuzz_util.h"

static int deletes;
static void del_legacy(DLManagedTensor *) { deletes++; }
static void del_versioned(DLManagedTensorVersioned *) { deletes++; }

alignas(64) static uint8_t buffer[1 << 16];

// Bytes the described tensor reaches, or -1 when it leaves the buffer.
static long long reach(const DLTensor &t, size_t elem) {
  __int128 last = 0, numel = 1;
  for (int i = 0; i < t.ndim; ++i) {
    if (t.shape[i] < 0) return -1;
    numel *= t.shape[i];
    if (numel > (1 << 20)) return -1;
  }
  if (numel == 0) return 0;
  __int128 contiguous = 1;  // NULL strides: row-major (not 1 in every dimension)
  for (int i = t.ndim - 1; i >= 0; --i) {
    __int128 st = t.strides ? t.strides[i] : contiguous;
    contiguous *= t.shape[i];
    if (st < 0) return -1;
    last += (__int128)(t.shape[i] - 1) * st;
    if (last > (__int128)sizeof buffer) return -1;
  }
  __int128 end = (__int128)t.byte_offset + (last + 1) * (__int128)elem;
  return end <= (__int128)sizeof buffer ? (long long)end : -1;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  Bytes in{data, size};
  uint8_t mode = in.get<uint8_t>();
  int64_t shape[8], strides[8];
  DLTensor t{};
  t.data = (mode & 8) ? nullptr : buffer;
  t.device.device_type = (mode & 16) ? static_cast<DLDeviceType>(in.get<uint8_t>()) : kDLCPU;
  t.device.device_id = in.get<int8_t>();
  t.ndim = in.get<int8_t>() % 10;
  t.dtype.code = in.get<uint8_t>() % 8;
  t.dtype.bits = in.get<uint8_t>();
  t.dtype.lanes = (mode & 32) ? in.get<uint16_t>() : 1;
  int nd = t.ndim < 0 ? 0 : (t.ndim > 8 ? 8 : t.ndim);
  if (t.ndim > 8) t.ndim = 8;
  for (int i = 0; i < nd; ++i) {
    // Small sizes mostly, any int64 sometimes.
    uint8_t k = in.get<uint8_t>();
    shape[i] = (k & 0x80) ? in.get<int64_t>() : (k & 7);
    uint8_t j = in.get<uint8_t>();
    strides[i] = (j & 0x80) ? in.get<int64_t>() : (j & 15) - 2;
  }
  t.shape = (mode & 64) ? nullptr : shape;
  t.strides = (mode & 2) ? strides : nullptr;
  t.byte_offset = (mode & 4) ? in.get<uint64_t>() : in.get<uint8_t>();
  bool fits = t.shape && t.data && t.dtype.bits % 8 == 0 && t.dtype.bits > 0 &&
              reach(t, t.dtype.bits / 8) >= 0;
  deletes = 0;
  ct_tensor *out = nullptr;
  ct_status s;
  // The producer's structs live until the last tensor is freed (DLPack's
  // rule; the first fuzz run found them declared in the branches, which ended
  // before ct_tensor_free ran the deleter).
  DLManagedTensorVersioned mv{};
  DLManagedTensor ml{};
  if (mode & 1) {
    DLManagedTensorVersioned &m = mv;
    m.version.major = (mode & 128) ? in.get<uint8_t>() % 3 : 1;
    m.deleter = del_versioned;
    m.dl_tensor = t;
    m.flags = fits ? in.get<uint64_t>() : 0;  // READ_ONLY copies: only readable memory
    s = ct_tensor_from_dlpack_versioned(&out, &m);
  } else {
    DLManagedTensor &m = ml;
    m.deleter = del_legacy;
    m.dl_tensor = t;
    s = ct_tensor_from_dlpack(&out, &m);
  }
  check_clean(s);
  if (s == CT_OK) {
    if (fits) {
      ct_tensor *c = nullptr;
      if (ct_tensor_clone(&c, out) == CT_OK) ct_tensor_free(c);
    }
    ct_tensor_free(out);
  }
  if (deletes != 1) __builtin_trap();  // exactly once, success or failure
  return 0;
}
