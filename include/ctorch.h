/*
 * ctorch.h - a stable C99 interface to LibTorch.
 *
 * Conventions (docs/conventions.md has the long form):
 *  - Every object is an opaque handle. Input handles are BORROWED. Every handle
 *    returned through an out-parameter is NEW and owned by the caller, who frees
 *    it with the matching ct_<object>_free(). Every _free accepts NULL.
 *  - Calls that can fail return ct_status (CT_OK == 0). On failure the
 *    out-parameters are untouched, nothing leaks, and ct_last_error() holds a
 *    message for the calling thread.
 *  - Out-parameters come first, inputs after.
 *  - Strings returned as `const char *` are borrowed (each says how long it
 *    lives); strings and buffers returned as `char **`/`void **` are owned by
 *    the caller and freed with ct_free().
 *  - Sizes and strides are int64_t element counts; byte counts are size_t;
 *    array lengths are size_t. Booleans are int32_t 0/1.
 *  - Devices are (int32_t device_type, int32_t device_index); index -1 means
 *    "the current device of that type".
 *  - Thread safety: any number of threads may use the same handles for reading
 *    and may run the same module at once. Mutating one tensor from two threads
 *    at once is the caller's business, as in torch.
 *  - Nothing is ever thrown across this interface, and ctorch never prints,
 *    aborts or exits on an error.
 *  - Defaults, unless a function's comment says otherwise: every pointer
 *    argument must be non-NULL (else CT_ERR_INVALID_ARGUMENT, with the
 *    argument's name in the message); array arguments may be NULL when their
 *    count is 0; any function may be called from any thread; any LibTorch
 *    failure is CT_ERR_TORCH (CT_ERR_OUT_OF_MEMORY when allocation fails).
 *  - The API reference (docs/api.md) is generated from these comments by
 *    scripts/gen_api_docs.py.
 */
#ifndef CTORCH_H
#define CTORCH_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Marks a function that may run long (file I/O, large allocations and copies,
 * model code, collectives) or call back into the caller's code (deleters,
 * kernels, autograd functions): a binding lets its runtime's other threads
 * run meanwhile (Python: the GIL is released). Expands to nothing. */
#define CT_MAY_BLOCK

#if defined(_WIN32)
#define CT_API __declspec(dllimport)
#elif defined(__GNUC__)
#define CT_API __attribute__((visibility("default")))
#else
#define CT_API
#endif

/* ===================================================================== */
/* Versions                                                              */
/* ===================================================================== */

#define CTORCH_VERSION_MAJOR 0
#define CTORCH_VERSION_MINOR 1
#define CTORCH_VERSION_PATCH 0
#define CTORCH_VERSION_STRING "0.1.0"
/* Bumped only when an existing symbol changes meaning (never, we hope). */
#define CTORCH_ABI_VERSION 2

/* Runtime twin of CTORCH_VERSION_STRING. Static string; never NULL. */
CT_API const char *ct_version(void);
/* Runtime twin of CTORCH_ABI_VERSION. Bindings compare it with the header. */
CT_API int32_t ct_abi_version(void);
/* Version of the LibTorch this library was built against, e.g. "1.13.1".
 * Static string; never NULL. */
CT_API const char *ct_torch_version(void);

/* ===================================================================== */
/* Errors                                                                */
/* ===================================================================== */

typedef int32_t ct_status;

/* Frozen status codes; never renumbered. */
#define CT_OK 0
#define CT_ERR_INVALID_ARGUMENT 1 /* bad value, NULL where not allowed, bad shape */
#define CT_ERR_TYPE 2             /* wrong dtype, value tag or argument type */
#define CT_ERR_INDEX 3            /* index out of range */
#define CT_ERR_NOT_FOUND 4        /* unknown op, method, attribute, file */
#define CT_ERR_IO 5               /* cannot read/write, not a model, corrupt */
#define CT_ERR_OUT_OF_MEMORY 6
#define CT_ERR_NOT_SUPPORTED 7 /* e.g. CUDA in a CPU-only build */
#define CT_ERR_TORCH 8         /* any other error raised inside LibTorch */
#define CT_ERR_CALLBACK 9      /* a foreign callback reported failure */
#define CT_ERR_INTERNAL 10     /* a bug in ctorch */
#define CT_ERR_TIMEOUT 11      /* a wait ran past its timeout (distributed) */

/* Message of the last failing ctorch call on this thread. Never NULL ("" if
 * no call failed yet). Library-owned; valid until the next failing ctorch call
 * on the same thread. The first line is short; detail (such as a TorchScript
 * traceback) may follow on later lines. Thread-safe (thread-local). */
CT_API const char *ct_last_error(void);
/* Status code of the last failing call on this thread (CT_OK if none). */
CT_API ct_status ct_last_error_code(void);
/* Sets this thread's last error. For callbacks: a foreign forward/backward or
 * op callback calls this before returning a non-zero status, and the message
 * reaches the caller of the ctorch call that ran the callback. `message` may be
 * NULL (treated as ""); it is copied. Returns `code`, so a callback can write
 * `return ct_set_error(CT_ERR_CALLBACK, "bad input");`. */
CT_API ct_status ct_set_error(ct_status code, const char *message);
/* Clears this thread's last error (code CT_OK, message ""). */
CT_API void ct_clear_error(void);

/* Warnings. LibTorch's warnings (TORCH_WARN, TorchScript's warnings.warn)
 * raised on a thread during a ctorch call are kept in that thread's list
 * instead of being printed (ctorch never prints). The list holds the latest
 * 1000; older ones are dropped. Warnings raised on LibTorch's own worker
 * threads (intra-op pool, autograd device threads) are not captured. */
/* Number of warnings kept for this thread. */
CT_API size_t ct_warnings_count(void);
/* Warning i (0 = oldest) of this thread, or NULL when i >= count.
 * Library-owned; valid until ct_warnings_clear() on this thread or until it
 * is dropped (more than 1000 newer warnings). */
CT_API const char *ct_warnings_get(size_t i);
/* Empties this thread's warning list. */
CT_API void ct_warnings_clear(void);

/* Frees a string or buffer that ctorch returned as caller-owned (char **,
 * void ** out-parameters). Accepts NULL. Any thread. */
CT_API CT_MAY_BLOCK void ct_free(void *p);

/* LibTorch 1.13+ symbolizes a full C++ backtrace for every error it raises,
 * costing milliseconds. ctorch disables that when it loads (process-wide, via
 * c10::SetStackTraceFetcher; this also affects other LibTorch users in the
 * process). Messages are otherwise unchanged. Pass 1 to restore the C++
 * backtraces (or set CTORCH_CPP_BACKTRACE=1 before loading). Not thread-safe
 * against concurrent failing calls; call it at start-up. Never fails (CT_OK). */
CT_API ct_status ct_set_cpp_backtraces(int32_t enabled);

/* ===================================================================== */
/* Library-wide settings                                                 */
/* ===================================================================== */

/* Intra-op (at::get_num_threads) and inter-op thread counts. Setting the
 * inter-op count fails with CT_ERR_TORCH once inter-op work has started.
 * n must be between 1 and 4 x the hardware threads (at least 8)
 * (CT_ERR_INVALID_ARGUMENT otherwise, the message gives the bound). */
CT_API int32_t ct_num_threads(void);
CT_API ct_status ct_set_num_threads(int32_t n);
CT_API int32_t ct_num_interop_threads(void);
CT_API ct_status ct_set_num_interop_threads(int32_t n);
/* Seeds the default CPU generator (and CUDA generators when available). */
CT_API ct_status ct_manual_seed(uint64_t seed);

/* Backend flags: torch's process-wide switches (torch.backends.*), read and
 * set by number. Each takes effect for ops started after the call, on every
 * thread; set them before the work they are meant for, as in torch (no lock
 * orders a set against ops already running). The CUDA ones are plain
 * settings in a CPU-only build too (they only matter once CUDA runs).
 * Errors: CT_ERR_INVALID_ARGUMENT (out NULL, unknown flag, value other than
 * 0 or 1), CT_ERR_NOT_SUPPORTED (a flag this LibTorch does not have; the
 * message names the version it needs). */
#define CT_FLAG_CUDNN_ENABLED 0       /* torch.backends.cudnn.enabled */
#define CT_FLAG_CUDNN_BENCHMARK 1     /* torch.backends.cudnn.benchmark */
#define CT_FLAG_CUDNN_DETERMINISTIC 2 /* torch.backends.cudnn.deterministic */
#define CT_FLAG_CUDNN_ALLOW_TF32 3    /* torch.backends.cudnn.allow_tf32 */
#define CT_FLAG_MATMUL_ALLOW_TF32 4   /* torch.backends.cuda.matmul.allow_tf32 */
#define CT_FLAG_MATMUL_ALLOW_FP16_REDUCTION             \
  5 /* ...matmul.allow_fp16_reduced_precision_reduction \
     */
#define CT_FLAG_MATMUL_ALLOW_BF16_REDUCTION \
  6 /* ...matmul.allow_bf16_reduced_precision_reduction (>= 2.0) */
#define CT_FLAG_DETERMINISTIC_ALGORITHMS 7 /* torch.use_deterministic_algorithms(mode) */
#define CT_FLAG_DETERMINISTIC_WARN_ONLY 8  /* its warn_only (setting one keeps the other) */
#define CT_FLAG_MKLDNN_ENABLED 9           /* torch.backends.mkldnn.enabled */
#define CT_FLAG_SDPA_FLASH 10              /* torch.backends.cuda.flash_sdp_enabled() */
#define CT_FLAG_SDPA_MATH 11               /* ...math_sdp_enabled() */
#define CT_FLAG_SDPA_MEM_EFFICIENT 12      /* ...mem_efficient_sdp_enabled() (>= 2.0) */
#define CT_FLAG_SDPA_CUDNN 13              /* ...cudnn_sdp_enabled() (>= 2.5) */
CT_API ct_status ct_backend_flag(int32_t *out, int32_t flag);
CT_API ct_status ct_set_backend_flag(int32_t flag, int32_t value);
/* torch.get_float32_matmul_precision / set_float32_matmul_precision:
 * "highest", "high" or "medium" (TF32 or bfloat16 inside float32 matmuls).
 * *out is a static string (not freed). Setting it also sets
 * CT_FLAG_MATMUL_ALLOW_TF32, as in torch. Errors: CT_ERR_INVALID_ARGUMENT
 * (NULL, another string). */
CT_API ct_status ct_float32_matmul_precision(const char **out);
CT_API ct_status ct_set_float32_matmul_precision(const char *precision);

/* Loads a shared library (dlopen RTLD_NOW|RTLD_GLOBAL), typically one that
 * registers custom TorchScript operators (e.g. torchvision's). Models that
 * need those ops load afterwards. path: not NULL. Errors: CT_ERR_INVALID_ARGUMENT,
 * CT_ERR_IO (with dlerror()'s message). The library is never unloaded. */
CT_API CT_MAY_BLOCK ct_status ct_load_library(const char *path);

/* Grad mode and inference mode are per thread, as in torch. Setting grad
 * mode never fails (CT_OK); enabled: 0 or nonzero. */
CT_API ct_status ct_grad_mode_set_enabled(int32_t enabled);
CT_API int32_t ct_grad_mode_is_enabled(void);
/* Enters inference mode (enabled=1) or explicitly leaves it (enabled=0) for
 * this thread, pushing onto a per-thread stack; ct_inference_mode_pop()
 * restores the previous state. Pop on an empty stack: CT_ERR_INVALID_ARGUMENT.
 * Tensors created in inference mode cannot be used in autograd later. */
CT_API ct_status ct_inference_mode_push(int32_t enabled);
CT_API ct_status ct_inference_mode_pop(void);
CT_API int32_t ct_inference_mode_is_enabled(void);

/* TorchScript's CPU fusion (NNC, the tensorexpr fuser) compiles fused kernels
 * with LLVM. On LibTorch 2.x builds that have it (Debian 13's LibTorch 2.6,
 * built with LLVM 19) the LLVM code generator can hang forever the first time
 * a module's graph is optimized, so ctorch turns CPU fusion off when it loads
 * (process-wide; it also affects other LibTorch users in the process, such as
 * Python's torch). CUDA fusion is untouched; results are the same either way.
 * CTORCH_CPU_FUSER=1 in the environment before loading turns it on (where
 * LibTorch has a CPU fusion backend), CTORCH_CPU_FUSER=0 off on any version.
 * ct_cpu_fuser_set_enabled(1) turns it back on, (0) off; it affects graphs optimized
 * afterwards. Enabling fails with CT_ERR_NOT_SUPPORTED when LibTorch has no
 * CPU fusion backend. Not thread-safe against concurrent module runs; call it
 * at start-up. */
CT_API ct_status ct_cpu_fuser_set_enabled(int32_t enabled);
/* 1 if TorchScript CPU fusion is on, else 0. */
CT_API int32_t ct_cpu_fuser_is_enabled(void);

/* The LSTM guard. LibTorch 2.x runs float32 nn.LSTM layers on the CPU through
 * oneDNN's RNN kernels, and without grad (no_grad, inference mode) its
 * inference kernel gives wrong results on some CPUs (Debian 13's LibTorch 2.6
 * on AVX-512 CPUs: errors of 0.05 where float64 agrees to 1e-7). ctorch puts
 * its own CPU kernel in front of LibTorch's LSTM layer
 * (aten::mkldnn_rnn_layer): the first time a float32 LSTM layer runs without
 * grad, it compares oneDNN's inference and training kernels on a few small
 * LSTMs with ctorch's own LSTM layer (LibTorch's non-oneDNN math on
 * at::linear/addmm). If the inference kernel is off by more than 1e-3, such
 * layers run from then on through oneDNN's training kernel (about as fast;
 * its workspace is dropped) where that one is right, else through ctorch's
 * layer, and a warning is recorded (ct_warnings_get) on the thread that ran
 * it. Everything else, convolutions and LSTMs with grad included, is
 * untouched. Process-wide: it applies to every LibTorch user in the process
 * (Python's torch too). On LibTorch without a oneDNN LSTM kernel (1.13) there
 * is nothing to guard. CTORCH_LSTM_GUARD=0 in the environment before loading
 * uses oneDNN's kernels as LibTorch does, =1 always ctorch's layer; unset:
 * probe.
 *
 * ct_lstm_guard_set_mode(mode): -1 probe (the default), 0 oneDNN's kernels as
 * LibTorch does (ctorch's kernel is removed from the dispatcher), 1 ctorch's
 * layer for every float32 LSTM layer without grad (no oneDNN RNN kernel at
 * all; as fast as LibTorch's non-oneDNN LSTM, which is slow where LibTorch
 * uses a reference BLAS). Errors: CT_ERR_INVALID_ARGUMENT (another mode),
 * CT_ERR_NOT_SUPPORTED (mode 1 where there is nothing to guard). Not
 * thread-safe against LSTMs running on other threads; call it at start-up. */
CT_API ct_status ct_lstm_guard_set_mode(int32_t mode);
/* -1: nothing to guard (no oneDNN LSTM kernel in this LibTorch); 0: oneDNN's
 * inference kernel in use (mode 0, or the probe found it right); 1: routed
 * around it (mode 1, or the probe found it wrong); 2: mode -1, not probed yet.
 * Any thread. */
CT_API int32_t ct_lstm_guard_route(void);
/* Runs the probe now, whatever the mode, and writes into *max_error the
 * largest difference between oneDNN's inference kernel and ctorch's layer on
 * the probe's small LSTMs; the first probe also decides mode -1. max_error: not
 * NULL, untouched on failure. Errors: CT_ERR_INVALID_ARGUMENT,
 * CT_ERR_NOT_SUPPORTED (nothing to guard). Any thread. */
CT_API CT_MAY_BLOCK ct_status ct_lstm_guard_check(double *max_error);

/* ===================================================================== */
/* Dtypes and devices                                                    */
/* ===================================================================== */

/* Frozen dtype codes. 0 is never a valid dtype. */
#define CT_BOOL 1
#define CT_UINT8 2
#define CT_INT8 3
#define CT_INT16 4
#define CT_INT32 5
#define CT_INT64 6
#define CT_FLOAT16 7
#define CT_BFLOAT16 8
#define CT_FLOAT32 9
#define CT_FLOAT64 10
#define CT_COMPLEX64 11
#define CT_COMPLEX128 12
/* Codes for dtypes of newer LibTorch releases. The codes are always valid
 * (names, element sizes); creating a tensor of a dtype the LibTorch in use
 * lacks fails with CT_ERR_NOT_SUPPORTED naming the release needed. */
#define CT_UINT16 13          /* LibTorch >= 2.3 */
#define CT_UINT32 14          /* LibTorch >= 2.3 */
#define CT_UINT64 15          /* LibTorch >= 2.3 */
#define CT_FLOAT8_E4M3FN 16   /* LibTorch >= 2.1 */
#define CT_FLOAT8_E5M2 17     /* LibTorch >= 2.1 */
#define CT_FLOAT8_E4M3FNUZ 18 /* LibTorch >= 2.2 */
#define CT_FLOAT8_E5M2FNUZ 19 /* LibTorch >= 2.2 */
/* Quantized dtypes: made by ct_tensor_quantize_per_tensor/_per_channel,
 * read through ct_tensor_int_repr and the ct_tensor_q_* accessors. */
#define CT_QINT8 20
#define CT_QUINT8 21
#define CT_QINT32 22
#define CT_QUINT4X2 23 /* two 4-bit values per byte; element size 1 */
/* In ct_tensor_to / ct_module_to: leave the dtype as it is. */
#define CT_DTYPE_KEEP (-1)

/* Bytes per element of a dtype; 0 for an unknown code. */
CT_API size_t ct_dtype_element_size(int32_t dtype);
/* Name such as "float32"; static string; "unknown" for an unknown code. */
CT_API const char *ct_dtype_name(int32_t dtype);
/* 1 if the LibTorch in use has the dtype; 0 otherwise (unknown code, or a
 * dtype of a newer release such as CT_UINT16 on LibTorch 1.13). */
CT_API int32_t ct_dtype_is_supported(int32_t dtype);

/* Frozen device type codes. CPU and CUDA equal DLPack's DLDeviceType values;
 * the others are ctorch's own (DLPack export maps them, or refuses).
 * CT_DEVICE_META tensors have shapes and dtypes but no memory (data pointer
 * NULL) and work in every build; the other devices give CT_ERR_NOT_SUPPORTED
 * where the LibTorch in use has no backend registered for them. The CPU device index is -1 or 0
 * (anything else: CT_ERR_INVALID_ARGUMENT). */
#define CT_DEVICE_KEEP 0 /* in "to"/"load": leave the device as it is */
#define CT_DEVICE_CPU 1
#define CT_DEVICE_CUDA 2
#define CT_DEVICE_META 3
#define CT_DEVICE_MPS 4
#define CT_DEVICE_XPU 5
#define CT_DEVICE_HIP 6
#define CT_DEVICE_PRIVATEUSE1 7
#define CT_DEVICE_XLA 8
#define CT_DEVICE_HPU 9
#define CT_DEVICE_MTIA 10 /* LibTorch >= 2.0 */
#define CT_DEVICE_LAZY 11
#define CT_DEVICE_IPU 12
#define CT_DEVICE_VE 13
#define CT_DEVICE_VULKAN 14
#define CT_DEVICE_METAL 15
#define CT_DEVICE_MAIA 16 /* LibTorch >= 2.5 (ORT before) */
/* Name such as "cpu"; static string; "unknown" for an unknown code. */
CT_API const char *ct_device_type_name(int32_t device_type);

/* ===================================================================== */
/* Handles                                                               */
/* ===================================================================== */

typedef struct ct_tensor ct_tensor;               /* a torch::Tensor reference */
typedef struct ct_value ct_value;                 /* a TorchScript value (c10::IValue) */
typedef struct ct_module ct_module;               /* a torch::jit::Module */
typedef struct ct_script ct_script;               /* a compiled TorchScript unit */
typedef struct ct_op ct_op;                       /* a resolved operator (or overload set) */
typedef struct ct_library ct_library;             /* operators defined in torch's dispatcher */
typedef struct ct_package ct_package;             /* an AOTInductor package (.pt2) */
typedef struct ct_generator ct_generator;         /* a random generator (torch.Generator) */
typedef struct ct_optimizer ct_optimizer;         /* an optimizer (torch.optim) */
typedef struct ct_grad_scaler ct_grad_scaler;     /* a loss scaler (torch.amp.GradScaler) */
typedef struct ct_cuda_event ct_cuda_event;       /* a CUDA event (torch.cuda.Event) */
typedef struct ct_cuda_graph ct_cuda_graph;       /* a CUDA graph (torch.cuda.CUDAGraph) */
typedef struct ct_store ct_store;                 /* a c10d key-value store */
typedef struct ct_process_group ct_process_group; /* a c10d process group */
typedef struct ct_work ct_work;                   /* a collective in flight */
typedef struct ct_ddp ct_ddp;                     /* data-parallel state (c10d's Reducer) */

/* ===================================================================== */
/* Tensors: creation                                                     */
/* ===================================================================== */

/* Factories. sizes: ndim int64_t (may be NULL when ndim == 0), each >= 0.
 * dtype: a CT_<dtype> code. device_type/index: where to allocate.
 * requires_grad: 0/1 (floating and complex dtypes only).
 * Errors: CT_ERR_INVALID_ARGUMENT (NULL out, negative size, bad device),
 * CT_ERR_TYPE (unknown dtype), CT_ERR_NOT_SUPPORTED (CUDA in CPU build),
 * CT_ERR_OUT_OF_MEMORY. Any thread. */
CT_API CT_MAY_BLOCK ct_status ct_tensor_empty(ct_tensor **out, const int64_t *sizes, size_t ndim,
                                              int32_t dtype, int32_t device_type,
                                              int32_t device_index, int32_t requires_grad);
CT_API CT_MAY_BLOCK ct_status ct_tensor_zeros(ct_tensor **out, const int64_t *sizes, size_t ndim,
                                              int32_t dtype, int32_t device_type,
                                              int32_t device_index, int32_t requires_grad);
CT_API CT_MAY_BLOCK ct_status ct_tensor_ones(ct_tensor **out, const int64_t *sizes, size_t ndim,
                                             int32_t dtype, int32_t device_type,
                                             int32_t device_index, int32_t requires_grad);
/* A new uninitialised contiguous tensor with t's sizes and device, and dtype
 * (CT_DTYPE_KEEP: t's); it does not require grad. The usual output of a
 * kernel. *out: free with ct_tensor_free. Errors: CT_ERR_INVALID_ARGUMENT
 * (NULL, undefined t), CT_ERR_TYPE (unknown dtype), CT_ERR_OUT_OF_MEMORY.
 * Any thread. */
CT_API ct_status ct_tensor_empty_like(ct_tensor **out, const ct_tensor *t, int32_t dtype);
/* Every element set to `value` (converted to dtype). */
CT_API CT_MAY_BLOCK ct_status ct_tensor_full(ct_tensor **out, const int64_t *sizes, size_t ndim,
                                             double value, int32_t dtype, int32_t device_type,
                                             int32_t device_index, int32_t requires_grad);
/* A 0-dim CPU tensor standing for a host-language number where an operator
 * takes a Tensor, marked as torch marks a Python scalar ("wrapped number"):
 * type promotion counts it as a number (x + n keeps x's dtype within its
 * category), and torch's dispatch modes and tracers (FakeTensorMode,
 * torch.compile) see the number itself, not a tensor. Made without
 * dispatching (no mode sees its creation). dtype: CT_BOOL, CT_INT64 or
 * CT_FLOAT64 (value converted to it). *out: free with ct_tensor_free.
 * Errors: CT_ERR_INVALID_ARGUMENT (NULL out; for CT_INT64 a value that is not
 * an integer with |value| <= 2^53), CT_ERR_TYPE (another dtype). Any thread. */
CT_API ct_status ct_tensor_wrapped_number(ct_tensor **out, double value, int32_t dtype);
/* Uniform [0,1) and standard normal; floating dtypes only (CT_ERR_TYPE). */
CT_API CT_MAY_BLOCK ct_status ct_tensor_rand(ct_tensor **out, const int64_t *sizes, size_t ndim,
                                             int32_t dtype, int32_t device_type,
                                             int32_t device_index, int32_t requires_grad);
CT_API CT_MAY_BLOCK ct_status ct_tensor_randn(ct_tensor **out, const int64_t *sizes, size_t ndim,
                                              int32_t dtype, int32_t device_type,
                                              int32_t device_index, int32_t requires_grad);
/* [start, end) with `step` (non-zero, with the sign of end - start). */
CT_API CT_MAY_BLOCK ct_status ct_tensor_arange(ct_tensor **out, double start, double end,
                                               double step, int32_t dtype, int32_t device_type,
                                               int32_t device_index, int32_t requires_grad);
/* n x m identity (m < 0 means m = n). */
CT_API CT_MAY_BLOCK ct_status ct_tensor_eye(ct_tensor **out, int64_t n, int64_t m, int32_t dtype,
                                            int32_t device_type, int32_t device_index,
                                            int32_t requires_grad);

/* Copies prod(sizes) * element_size(dtype) bytes of contiguous row-major host
 * memory at `data` into a new tensor on the given device. data: borrowed, not
 * kept; may be NULL only when the tensor has no elements. */
CT_API CT_MAY_BLOCK ct_status ct_tensor_from_data(ct_tensor **out, const void *data,
                                                  const int64_t *sizes, size_t ndim, int32_t dtype,
                                                  int32_t device_type, int32_t device_index);

/* Deleter for memory that torch borrows. Called exactly once, on any thread
 * (whichever frees the last tensor using the memory), at any time after the
 * last tensor (or view of it) is freed. It must not call back into ctorch
 * with handles it does not own, and must not throw/longjmp. */
typedef void (*ct_deleter)(void *data, void *ctx);

/* Wraps existing memory as a tensor, with no copy. data: host memory for
 * CT_DEVICE_CPU or a device pointer for CT_DEVICE_CUDA; not NULL unless the
 * tensor has no elements. strides: ndim element strides, or NULL for
 * contiguous row-major. deleter: may be NULL (the memory must then outlive
 * every tensor using it); otherwise deleter(data, ctx) runs when torch lets go
 * of the memory. If this call FAILS the deleter is NOT called: the caller
 * still owns `data`. The element count, the byte size and the extent the
 * strides reach must fit in int64 and in the address space (checked with
 * overflow-safe arithmetic). Errors: CT_ERR_INVALID_ARGUMENT (NULL out/data,
 * negative size/stride, overflowing count/extent/byte size), CT_ERR_TYPE
 * (unknown dtype), CT_ERR_NOT_SUPPORTED. */
CT_API ct_status ct_tensor_from_blob(ct_tensor **out, void *data, const int64_t *sizes, size_t ndim,
                                     const int64_t *strides, int32_t dtype, int32_t device_type,
                                     int32_t device_index, ct_deleter deleter, void *ctx);

/* Like ct_tensor_from_blob, for garbage-collected hosts that must not be
 * called back from foreign threads. Instead of calling a deleter, ctorch
 * appends `ctx` to a thread-safe library-owned release queue when torch lets
 * go of the memory; the host polls the queue (ct_release_queue_poll) and then
 * un-roots its buffer. If this call fails, nothing is queued. */
CT_API ct_status ct_tensor_from_blob_queued(ct_tensor **out, void *data, const int64_t *sizes,
                                            size_t ndim, const int64_t *strides, int32_t dtype,
                                            int32_t device_type, int32_t device_index, void *ctx);
/* Moves up to `capacity` released ctx values (oldest first) into `ctxs` and
 * stores how many in *n. ctxs may be NULL when capacity is 0. n: not NULL.
 * Thread-safe. */
CT_API ct_status ct_release_queue_poll(void **ctxs, size_t capacity, size_t *n);
/* Number of ctx values waiting in the release queue. Thread-safe. */
CT_API size_t ct_release_queue_length(void);

/* ===================================================================== */
/* Tensors: handles and conversions                                      */
/* ===================================================================== */

/* Frees one handle. Other handles to the same tensor stay valid. NULL ok. */
CT_API void ct_tensor_free(ct_tensor *t);
/* Frees the handle stored at *slot (as ct_tensor_free; a NULL *slot is a
 * no-op) and sets *slot to NULL. slot: may be NULL (no-op). For hosts whose
 * garbage collector can call a C function with the address of a dead object
 * that holds the handle in its first field (Julia's finalizer(::Ptr, x)):
 * the object is freed with no call into the host language, and an object
 * freed earlier by hand (its field set to NULL) is skipped. Not safe while
 * another thread uses *slot; the same thread rules as ct_tensor_free. */
CT_API void ct_tensor_free_slot(ct_tensor **slot);
/* A new handle to the same tensor (same storage, same autograd identity). */
CT_API ct_status ct_tensor_ref(ct_tensor **out, const ct_tensor *t);
/* Deep copy (differentiable, like torch.clone). */
CT_API CT_MAY_BLOCK ct_status ct_tensor_clone(ct_tensor **out, const ct_tensor *t);
/* Shares storage, detached from autograd. */
CT_API ct_status ct_tensor_detach(ct_tensor **out, const ct_tensor *t);
/* The tensor itself (new handle) if already contiguous, else a contiguous copy. */
CT_API CT_MAY_BLOCK ct_status ct_tensor_contiguous(ct_tensor **out, const ct_tensor *t);
/* Converts device and/or dtype. device_type CT_DEVICE_KEEP and dtype
 * CT_DTYPE_KEEP leave that part alone. copy=0 returns the same tensor when
 * nothing changes; copy=1 always copies. non_blocking=1 allows asynchronous
 * host/device copies (pinned memory). */
CT_API CT_MAY_BLOCK ct_status ct_tensor_to(ct_tensor **out, const ct_tensor *t, int32_t device_type,
                                           int32_t device_index, int32_t dtype,
                                           int32_t non_blocking, int32_t copy);
/* dst.copy_(src): copies values, converting dtype and device, broadcasting
 * src to dst's shape. Errors: CT_ERR_INVALID_ARGUMENT/CT_ERR_TORCH. */
CT_API CT_MAY_BLOCK ct_status ct_tensor_copy_(ct_tensor *dst, const ct_tensor *src,
                                              int32_t non_blocking);
/* t.fill_(value). */
CT_API CT_MAY_BLOCK ct_status ct_tensor_fill_(ct_tensor *t, double value);
/* A pinned (page-locked) host copy of a CPU tensor. CUDA only:
 * CT_ERR_NOT_SUPPORTED otherwise. */
CT_API CT_MAY_BLOCK ct_status ct_tensor_pin_memory(ct_tensor **out, const ct_tensor *t);
/* 1 if the tensor lives in pinned host memory; 0 otherwise or for NULL. */
CT_API int32_t ct_tensor_is_pinned(const ct_tensor *t);

/* ===================================================================== */
/* Tensors: metadata (infallible; say what NULL gives)                   */
/* ===================================================================== */

/* An undefined tensor (a handle to no tensor, as returned for unused
 * gradients, e.g. by aten::convolution_backward with output_mask False) gives
 * the same as NULL in every accessor below (ndim -1, sizes/strides NULL, ...);
 * ct_tensor_is_defined tells it apart. Functions that need a tensor refuse it
 * with CT_ERR_INVALID_ARGUMENT ("... is an undefined tensor"); ct_tensor_ref
 * and ct_tensor_to_string accept it. */

/* Number of dimensions; -1 for NULL. */
CT_API int64_t ct_tensor_ndim(const ct_tensor *t);
/* Borrowed arrays of ndim sizes/strides (elements). Valid until the tensor is
 * freed or its shape changes (resize_, in-place view ops). NULL for NULL;
 * strides are NULL for layouts without strides (sparse). */
CT_API const int64_t *ct_tensor_sizes(const ct_tensor *t);
CT_API const int64_t *ct_tensor_strides(const ct_tensor *t);
/* Size / stride of one dimension (negative dims count from the end).
 * Errors: CT_ERR_INVALID_ARGUMENT (NULL, undefined tensor), CT_ERR_INDEX (bad
 * dim), CT_ERR_NOT_SUPPORTED (stride of a sparse tensor). */
CT_API ct_status ct_tensor_size(int64_t *out, const ct_tensor *t, int64_t dim);
CT_API ct_status ct_tensor_stride(int64_t *out, const ct_tensor *t, int64_t dim);
/* Number of elements; -1 for NULL. */
CT_API int64_t ct_tensor_numel(const ct_tensor *t);
/* Storage offset in elements; -1 for NULL or a layout without storage. */
CT_API int64_t ct_tensor_storage_offset(const ct_tensor *t);
/* Bytes per element; 0 for NULL. */
CT_API size_t ct_tensor_element_size(const ct_tensor *t);
/* numel * element size; 0 for NULL. */
CT_API size_t ct_tensor_nbytes(const ct_tensor *t);
/* CT_<dtype> code; 0 for NULL or a dtype ctorch has no code for. */
CT_API int32_t ct_tensor_dtype(const ct_tensor *t);
/* CT_DEVICE_* code; 0 for NULL. Device index (-1 for CPU or NULL). */
CT_API int32_t ct_tensor_device_type(const ct_tensor *t);
CT_API int32_t ct_tensor_device_index(const ct_tensor *t);
/* Address of the first element, with the storage offset applied. Host or
 * device address depending on the device. NULL for NULL, for an empty
 * tensor, or for a tensor without storage. Valid while the tensor lives and
 * is not resized. */
CT_API void *ct_tensor_data_ptr(const ct_tensor *t);
/* 0/1; 0 for NULL (and is_contiguous 0 for sparse). */
CT_API int32_t ct_tensor_is_contiguous(const ct_tensor *t);
/* 0/1: whether autograd records operations on t; 0 for NULL. */
CT_API int32_t ct_tensor_requires_grad(const ct_tensor *t);
/* 1 if the handle refers to a defined tensor; 0 for NULL/undefined. */
CT_API int32_t ct_tensor_is_defined(const ct_tensor *t);

/* All metadata of a tensor in one call (what the accessors above return one
 * by one). The caller sets `size` to sizeof(ct_tensor_info) before the call;
 * the library fills the fields of the version it knows and never writes past
 * `size`. Fields: dtype (CT_<dtype>, 0 for a dtype without a code),
 * device_type/device_index (CT_DEVICE_*, -1 for CPU), ndim, requires_grad and
 * is_contiguous (0/1), numel, storage_offset (elements; 0 for a layout without
 * strides), data (as ct_tensor_data_ptr), sizes/strides (ndim entries each,
 * borrowed: valid until the tensor is freed or its metadata changes, e.g. by
 * resize_ or an in-place view op; strides is NULL for a layout without
 * strides, such as sparse). */
typedef struct ct_tensor_info {
  size_t size;
  int32_t dtype;
  int32_t device_type;
  int32_t device_index;
  int32_t ndim;
  int32_t requires_grad;
  int32_t is_contiguous;
  int64_t numel;
  int64_t storage_offset;
  void *data;
  const int64_t *sizes;
  const int64_t *strides;
} ct_tensor_info;
/* Fills *out (see ct_tensor_info). Errors: CT_ERR_INVALID_ARGUMENT (NULL
 * out or t, out->size smaller than the first version of the struct, an
 * undefined tensor). Thread-safe as the accessors: reads only. */
CT_API ct_status ct_tensor_metadata(ct_tensor_info *out, const ct_tensor *t);

/* ===================================================================== */
/* Tensors: one-call exchanges (host memory in, handle + metadata out)   */
/* ===================================================================== */

/* Flags of ct_blob.flags (frozen bits; unknown bits are refused). */
/* Release through the release queue (as ct_tensor_from_blob_queued): ctx is
 * queued when torch lets go of the memory; `deleter` must be NULL. */
#define CT_BLOB_QUEUED 1
/* `strides` are in bytes (numpy's convention), each a multiple of the element
 * size; without this flag they are in elements. */
#define CT_BLOB_BYTE_STRIDES 2
/* The new tensor requires grad (a floating or complex dtype). */
#define CT_BLOB_REQUIRES_GRAD 4

/* Everything ct_tensor_wrap needs, in one struct. The caller sets
 * `size` to sizeof(ct_blob); the library reads only the fields of the version
 * it knows. data, sizes, strides, dtype, device_type, device_index, deleter
 * and ctx mean what the arguments of ct_tensor_from_blob mean (sizes may be
 * NULL only when ndim is 0; strides NULL means contiguous row-major); ndim
 * is the number of entries of sizes (and strides); flags is CT_BLOB_*. */
typedef struct ct_blob {
  size_t size;
  void *data;
  const int64_t *sizes;
  const int64_t *strides;
  int64_t ndim;
  int32_t dtype;
  int32_t device_type;
  int32_t device_index;
  int32_t flags;
  ct_deleter deleter;
  void *ctx;
} ct_blob;

/* Wraps memory as a tensor with no copy (ct_tensor_from_blob, or
 * ct_tensor_from_blob_queued with CT_BLOB_QUEUED) and fills *info with the new
 * tensor's metadata (as ct_tensor_metadata), in one call. out: not NULL;
 * *out is a new handle owned by the caller (ct_tensor_free). info: may be
 * NULL; otherwise the caller sets info->size as for ct_tensor_metadata, and
 * its sizes/strides are borrowed from *out. blob: borrowed, read during the
 * call only (sizes and strides are copied). If this call FAILS the deleter is
 * NOT called and nothing is queued: the caller still owns the memory; *out
 * and *info are not written. Errors: CT_ERR_INVALID_ARGUMENT (NULL out or
 * blob, blob->size or info->size too small, ndim negative, the checks of
 * ct_tensor_from_blob, byte strides that are not a multiple of the element
 * size, a deleter with CT_BLOB_QUEUED, unknown flag bits), CT_ERR_TYPE
 * (unknown dtype; CT_BLOB_REQUIRES_GRAD with a non-floating dtype),
 * CT_ERR_NOT_SUPPORTED (device not in this build). Thread-safe; the
 * deleter runs on whichever thread frees the last tensor using the memory. */
CT_API ct_status ct_tensor_wrap(ct_tensor **out, ct_tensor_info *info, const ct_blob *blob);

/* A new handle to the same tensor (as ct_tensor_ref) and its metadata (as
 * ct_tensor_metadata), in one call: what a host needs to lend a tensor's
 * memory to an array object that keeps the memory alive by holding the new
 * handle. out: not NULL; *out is owned by the caller (ct_tensor_free). info:
 * not NULL, info->size set by the caller; its sizes/strides are borrowed
 * from *out (valid until *out is freed or the tensor's metadata changes).
 * t: borrowed. Errors: CT_ERR_INVALID_ARGUMENT (NULL out, info or t,
 * info->size too small, an undefined tensor); on failure nothing is written.
 * Thread-safe as the accessors (reads t only). */
CT_API ct_status ct_tensor_ref_info(ct_tensor **out, ct_tensor_info *info, const ct_tensor *t);

/* Torch's own printable form (as `std::cout << tensor`). *out: caller-owned,
 * free with ct_free. */
CT_API ct_status ct_tensor_to_string(char **out, const ct_tensor *t);
/* torch.equal: same shape and same values (1/0). */
CT_API CT_MAY_BLOCK ct_status ct_tensor_equal(int32_t *out, const ct_tensor *a, const ct_tensor *b);
/* torch.allclose. Errors: CT_ERR_TORCH if shapes do not broadcast. */
CT_API CT_MAY_BLOCK ct_status ct_tensor_allclose(int32_t *out, const ct_tensor *a,
                                                 const ct_tensor *b, double rtol, double atol,
                                                 int32_t equal_nan);

/* ===================================================================== */
/* Tensors: layouts, memory formats, quantized and sparse tensors        */
/* ===================================================================== */

/* Frozen layout codes. */
#define CT_LAYOUT_STRIDED 0
#define CT_LAYOUT_SPARSE_COO 1
#define CT_LAYOUT_SPARSE_CSR 2
#define CT_LAYOUT_SPARSE_CSC 3
#define CT_LAYOUT_SPARSE_BSR 4
#define CT_LAYOUT_SPARSE_BSC 5
#define CT_LAYOUT_MKLDNN 6
/* *out = the tensor's CT_LAYOUT_* code. Only strided tensors have strides,
 * a data pointer and a DLPack form. Errors: CT_ERR_INVALID_ARGUMENT (NULL,
 * undefined tensor), CT_ERR_NOT_SUPPORTED (a layout without a code). */
CT_API ct_status ct_tensor_layout(int32_t *out, const ct_tensor *t);

/* Frozen memory format codes. */
#define CT_MEMORY_FORMAT_CONTIGUOUS 0       /* row-major */
#define CT_MEMORY_FORMAT_CHANNELS_LAST 1    /* 4-d NCHW stored as NHWC */
#define CT_MEMORY_FORMAT_CHANNELS_LAST_3D 2 /* 5-d NCDHW stored as NDHWC */
/* *out = 1 if the tensor is contiguous in `memory_format` (t.is_contiguous(
 * memory_format)), else 0. A tensor of the wrong rank for a channels-last
 * format gives 0. Errors: CT_ERR_INVALID_ARGUMENT (NULL, unknown format). */
CT_API ct_status ct_tensor_is_contiguous_format(int32_t *out, const ct_tensor *t,
                                                int32_t memory_format);
/* t.contiguous(memory_format): t itself (new handle) if already so, else a
 * copy. Channels-last formats need a 4-d (5-d for 3D) tensor (CT_ERR_TORCH). */
CT_API ct_status ct_tensor_contiguous_format(ct_tensor **out, const ct_tensor *t,
                                             int32_t memory_format);
/* *out = the format torch would pick for t (t.suggest_memory_format()). */
CT_API ct_status ct_tensor_suggest_memory_format(int32_t *out, const ct_tensor *t);

/* Frozen quantization scheme codes. */
#define CT_QSCHEME_PER_TENSOR_AFFINE 1
#define CT_QSCHEME_PER_CHANNEL_AFFINE 2
#define CT_QSCHEME_PER_TENSOR_SYMMETRIC 3
#define CT_QSCHEME_PER_CHANNEL_SYMMETRIC 4
#define CT_QSCHEME_PER_CHANNEL_AFFINE_FLOAT_QPARAMS 5
/* Quantized tensors (dtype CT_QINT8, CT_QUINT8, CT_QINT32, CT_QUINT4X2).
 * Each accessor fails with CT_ERR_TYPE on a tensor that is not quantized (or
 * not quantized with the scheme asked about), CT_ERR_INVALID_ARGUMENT on NULL.
 * ct_tensor_q_scheme: *out = CT_QSCHEME_* code.
 * ct_tensor_q_scale / _q_zero_point: per-tensor schemes.
 * ct_tensor_q_per_channel_scales (float64 tensor), _zero_points (int64
 * tensor) and _axis: per-channel schemes; the tensors are new handles. */
CT_API ct_status ct_tensor_q_scheme(int32_t *out, const ct_tensor *t);
CT_API ct_status ct_tensor_q_scale(double *out, const ct_tensor *t);
CT_API ct_status ct_tensor_q_zero_point(int64_t *out, const ct_tensor *t);
CT_API ct_status ct_tensor_q_per_channel_scales(ct_tensor **out, const ct_tensor *t);
CT_API ct_status ct_tensor_q_per_channel_zero_points(ct_tensor **out, const ct_tensor *t);
CT_API ct_status ct_tensor_q_per_channel_axis(int64_t *out, const ct_tensor *t);
/* The stored integers of a quantized tensor, as a new plain tensor (uint8
 * for quint8/quint4x2 (packed: two values per byte), int8, int32). */
CT_API ct_status ct_tensor_int_repr(ct_tensor **out, const ct_tensor *t);
/* A float32 tensor of the values a quantized tensor represents. */
CT_API ct_status ct_tensor_dequantize(ct_tensor **out, const ct_tensor *t);
/* torch.quantize_per_tensor(t, scale, zero_point, dtype): t is a float
 * tensor, dtype a quantized code. Errors: CT_ERR_TYPE (dtype not
 * quantized), CT_ERR_INVALID_ARGUMENT (a scale that is not positive and
 * finite, in every quantize and make function below; an axis that is not a
 * dimension of t), CT_ERR_TORCH (torch refuses: zero point out of range,
 * ...). */
CT_API ct_status ct_tensor_quantize_per_tensor(ct_tensor **out, const ct_tensor *t, double scale,
                                               int64_t zero_point, int32_t dtype);
/* torch.quantize_per_channel: scales (float64) and zero_points (int64) are
 * 1-d tensors of t's size along `axis`. */
CT_API ct_status ct_tensor_quantize_per_channel(ct_tensor **out, const ct_tensor *t,
                                                const ct_tensor *scales,
                                                const ct_tensor *zero_points, int64_t axis,
                                                int32_t dtype);
/* A quantized tensor from its stored integers (no rounding): int_repr of
 * dtype uint8 gives quint8, int8 gives qint8, int32 gives qint32. The
 * result does not share int_repr's memory. */
CT_API ct_status ct_tensor_make_per_tensor_quantized(ct_tensor **out, const ct_tensor *int_repr,
                                                     double scale, int64_t zero_point);
CT_API ct_status ct_tensor_make_per_channel_quantized(ct_tensor **out, const ct_tensor *int_repr,
                                                      const ct_tensor *scales,
                                                      const ct_tensor *zero_points, int64_t axis);

/* Sparse tensors. Each result is a new handle sharing the sparse tensor's
 * memory. Errors: CT_ERR_INVALID_ARGUMENT (NULL), CT_ERR_TYPE (wrong layout).
 * ct_tensor_sparse_indices: COO only; the int64 (sparse_dim x nnz) indices
 *   as stored (call aten::coalesce first for sorted, unique indices).
 * ct_tensor_sparse_values: COO (as stored) and the compressed layouts.
 * ct_tensor_sparse_compressed_indices: crow_indices (CSR, BSR) or
 *   ccol_indices (CSC, BSC).
 * ct_tensor_sparse_plain_indices: col_indices (CSR, BSR) or row_indices
 *   (CSC, BSC). */
CT_API ct_status ct_tensor_sparse_indices(ct_tensor **out, const ct_tensor *t);
CT_API ct_status ct_tensor_sparse_values(ct_tensor **out, const ct_tensor *t);
CT_API ct_status ct_tensor_sparse_compressed_indices(ct_tensor **out, const ct_tensor *t);
CT_API ct_status ct_tensor_sparse_plain_indices(ct_tensor **out, const ct_tensor *t);
/* A strided copy of a sparse or mkldnn tensor; a strided tensor itself
 * (new handle). */
CT_API ct_status ct_tensor_to_dense(ct_tensor **out, const ct_tensor *t);

/* ===================================================================== */
/* Autograd on tensors                                                   */
/* ===================================================================== */

/* Sets whether autograd records operations on t (0 or 1), in place on the
 * tensor every handle of it shares. t is borrowed. Errors:
 * CT_ERR_INVALID_ARGUMENT (NULL or undefined t, a value other than 0/1, t not
 * a leaf: detach it first), CT_ERR_TYPE (requires_grad 1 on a non-floating,
 * non-complex dtype). Not safe while another thread uses t. */
CT_API ct_status ct_tensor_set_requires_grad(ct_tensor *t, int32_t requires_grad);
/* t.backward(grad, retain_graph, create_graph). grad may be NULL for a scalar
 * t. Errors raised by foreign backward callbacks come back here with code
 * CT_ERR_CALLBACK and the callback's message. Runs CPU backward on the
 * calling thread. */
CT_API CT_MAY_BLOCK ct_status ct_tensor_backward(const ct_tensor *t, const ct_tensor *grad,
                                                 int32_t retain_graph, int32_t create_graph);
/* t.grad: *out is a new handle, or NULL when t has no gradient. */
CT_API ct_status ct_tensor_grad(ct_tensor **out, const ct_tensor *t);
/* Sets t.grad (grad NULL clears it). */
CT_API ct_status ct_tensor_set_grad(ct_tensor *t, const ct_tensor *grad);
/* Zeroes t.grad in place if it exists. */
CT_API ct_status ct_tensor_zero_grad(ct_tensor *t);
/* 1 if t is a leaf of the autograd graph; 0 otherwise or for NULL. */
CT_API int32_t ct_tensor_is_leaf(const ct_tensor *t);
/* Name of the node that created t ("AddBackward0"), or *out = NULL for
 * leaves. *out: caller-owned, free with ct_free. */
CT_API ct_status ct_tensor_grad_fn_name(char **out, const ct_tensor *t);
/* torch.autograd.grad. grads: caller array of n_inputs slots; each receives a
 * new handle (NULL for an unused input when allow_unused=1). grad_outputs:
 * NULL or an array of n_outputs handles (each may be NULL). */
CT_API CT_MAY_BLOCK ct_status ct_autograd_grad(ct_tensor **grads, const ct_tensor *const *outputs,
                                               size_t n_outputs, const ct_tensor *const *inputs,
                                               size_t n_inputs,
                                               const ct_tensor *const *grad_outputs,
                                               int32_t retain_graph, int32_t create_graph,
                                               int32_t allow_unused);

/* Custom autograd functions written in the host language.
 *
 * forward(ctx, inputs, n_inputs, outputs, n_outputs): inputs are borrowed
 *   handles (valid during the call); the callback stores n_outputs NEW handles
 *   in outputs[] (ctorch takes them, also on failure). Runs on the thread
 *   that called ct_autograd_function_apply, with grad mode off.
 * backward(ctx, grad_outputs, n_outputs, grad_inputs, n_inputs): grad_outputs
 *   are borrowed; the callback stores a NEW handle or NULL (no gradient) in
 *   each of the n_inputs slots. For CPU tensors it runs on the thread that
 *   called ct_tensor_backward / ct_autograd_grad; for CUDA tensors it runs on
 *   torch's autograd device thread. Grad mode is on only when create_graph=1.
 * Each returns CT_OK, or an error status after calling ct_set_error(); the
 *   error reaches the caller of apply (forward) or backward (backward) with
 *   code CT_ERR_CALLBACK and the callback's message.
 * destroy(ctx): may be NULL; called exactly once, when the graph node is
 *   released (after the last backward that can use it, when the outputs and
 *   graph are freed), or before apply returns when no graph was recorded or
 *   apply failed. It may run on any thread. */
typedef ct_status (*ct_autograd_forward_fn)(void *ctx, const ct_tensor *const *inputs,
                                            size_t n_inputs, ct_tensor **outputs, size_t n_outputs);
typedef ct_status (*ct_autograd_backward_fn)(void *ctx, const ct_tensor *const *grad_outputs,
                                             size_t n_outputs, ct_tensor **grad_inputs,
                                             size_t n_inputs);
typedef void (*ct_ctx_destroy_fn)(void *ctx);

/* Applies a foreign autograd function. outputs: caller array of n_outputs
 * slots, each receives a new handle connected to the graph. name: node name
 * reported by ct_tensor_grad_fn_name (NULL gives "CTorchFunction").
 * Errors: CT_ERR_INVALID_ARGUMENT, CT_ERR_CALLBACK. */
CT_API CT_MAY_BLOCK ct_status ct_autograd_function_apply(ct_tensor **outputs, size_t n_outputs,
                                                         const ct_tensor *const *inputs,
                                                         size_t n_inputs, const char *name,
                                                         ct_autograd_forward_fn forward,
                                                         ct_autograd_backward_fn backward,
                                                         void *ctx, ct_ctx_destroy_fn destroy);

/* ===================================================================== */
/* DLPack (layout-compatible declarations of DLPack 1.1)                 */
/* ===================================================================== */

#ifndef DLPACK_DLPACK_H_
#define DLPACK_DLPACK_H_
#define DLPACK_MAJOR_VERSION 1
#define DLPACK_MINOR_VERSION 1
typedef struct {
  uint32_t major;
  uint32_t minor;
} DLPackVersion;
typedef enum {
  kDLCPU = 1,
  kDLCUDA = 2,
  kDLCUDAHost = 3,
  kDLOpenCL = 4,
  kDLVulkan = 7,
  kDLMetal = 8,
  kDLVPI = 9,
  kDLROCM = 10,
  kDLROCMHost = 11,
  kDLExtDev = 12,
  kDLCUDAManaged = 13,
  kDLOneAPI = 14,
  kDLWebGPU = 15,
  kDLHexagon = 16,
  kDLMAIA = 17
} DLDeviceType;
typedef struct {
  DLDeviceType device_type;
  int32_t device_id;
} DLDevice;
typedef enum {
  kDLInt = 0U,
  kDLUInt = 1U,
  kDLFloat = 2U,
  kDLOpaqueHandle = 3U,
  kDLBfloat = 4U,
  kDLComplex = 5U,
  kDLBool = 6U,
  kDLFloat8_e3m4 = 7U,
  kDLFloat8_e4m3 = 8U,
  kDLFloat8_e4m3b11fnuz = 9U,
  kDLFloat8_e4m3fn = 10U,
  kDLFloat8_e4m3fnuz = 11U,
  kDLFloat8_e5m2 = 12U,
  kDLFloat8_e5m2fnuz = 13U,
  kDLFloat8_e8m0fnu = 14U,
  kDLFloat6_e2m3fn = 15U,
  kDLFloat6_e3m2fn = 16U,
  kDLFloat4_e2m1fn = 17U
} DLDataTypeCode;
typedef struct {
  uint8_t code;
  uint8_t bits;
  uint16_t lanes;
} DLDataType;
typedef struct {
  void *data;
  DLDevice device;
  int32_t ndim;
  DLDataType dtype;
  int64_t *shape;
  int64_t *strides;
  uint64_t byte_offset;
} DLTensor;
typedef struct DLManagedTensor {
  DLTensor dl_tensor;
  void *manager_ctx;
  void (*deleter)(struct DLManagedTensor *self);
} DLManagedTensor;
#define DLPACK_FLAG_BITMASK_READ_ONLY (1UL << 0UL)
#define DLPACK_FLAG_BITMASK_IS_COPIED (1UL << 1UL)
#define DLPACK_FLAG_BITMASK_IS_SUBBYTE_TYPE_PADDED (1UL << 2UL)
typedef struct DLManagedTensorVersioned {
  DLPackVersion version;
  void *manager_ctx;
  void (*deleter)(struct DLManagedTensorVersioned *self);
  uint64_t flags;
  DLTensor dl_tensor;
} DLManagedTensorVersioned;
#endif /* DLPACK_DLPACK_H_ */

/* Exports a tensor as DLPack, with no copy unless copy=1 (then the data is
 * copied and, for the versioned form, DLPACK_FLAG_BITMASK_IS_COPIED is set).
 * *out is owned by the caller: call (*out)->deleter(*out) once when done.
 * The tensor's memory stays alive until then, even if `t` is freed.
 * stream (CUDA only): -1 means no synchronisation; otherwise the consumer's
 * cudaStream_t (1 = legacy default stream, 2 = per-thread default), on which
 * ctorch makes the data safe to use by recording an event on torch's current
 * stream and making `stream` wait for it (no device sync). Ignored for CPU.
 * Errors: CT_ERR_INVALID_ARGUMENT, CT_ERR_TYPE (dtype DLPack cannot describe),
 * CT_ERR_NOT_SUPPORTED (tensor that requires grad: detach it first; sparse
 * or other non-strided layouts). */
CT_API CT_MAY_BLOCK ct_status ct_tensor_to_dlpack(DLManagedTensor **out, const ct_tensor *t,
                                                  int32_t copy, int64_t stream);
CT_API CT_MAY_BLOCK ct_status ct_tensor_to_dlpack_versioned(DLManagedTensorVersioned **out,
                                                            const ct_tensor *t, int32_t copy,
                                                            int64_t stream);
/* Imports a DLPack tensor, taking ownership of `src` in every case: on
 * success its deleter runs exactly once, when the last tensor using the
 * memory is freed; on failure it runs before this call returns. src may be
 * NULL (CT_ERR_INVALID_ARGUMENT, nothing to delete). byte_offset is honoured,
 * NULL strides mean contiguous. Refused with CT_ERR_INVALID_ARGUMENT: negative
 * strides (torch has none: import a contiguous copy instead), shapes whose
 * element count, byte size or stride extent overflow int64 or the address
 * space, and data + byte_offset not aligned to the element type. A READ_ONLY versioned tensor is
 * copied (and its deleter run at once), since torch tensors are always writable. Versions with a
 * major other than 1 are refused (CT_ERR_NOT_SUPPORTED). */
CT_API CT_MAY_BLOCK ct_status ct_tensor_from_dlpack(ct_tensor **out, DLManagedTensor *src);
CT_API CT_MAY_BLOCK ct_status ct_tensor_from_dlpack_versioned(ct_tensor **out,
                                                              DLManagedTensorVersioned *src);

/* ===================================================================== */
/* Values (TorchScript arguments and results)                            */
/* ===================================================================== */

/* Frozen value tags. */
#define CT_VALUE_NONE 0
#define CT_VALUE_BOOL 1
#define CT_VALUE_INT 2
#define CT_VALUE_DOUBLE 3
#define CT_VALUE_STRING 4
#define CT_VALUE_TENSOR 5
#define CT_VALUE_DEVICE 6
#define CT_VALUE_LIST 7 /* generic list */
#define CT_VALUE_TUPLE 8
#define CT_VALUE_DICT 9
#define CT_VALUE_INT_LIST 10
#define CT_VALUE_DOUBLE_LIST 11
#define CT_VALUE_BOOL_LIST 12
#define CT_VALUE_TENSOR_LIST 13
#define CT_VALUE_OBJECT 14 /* a TorchScript object, e.g. a submodule */
#define CT_VALUE_OTHER 15  /* anything else (complex, generator, ...) */

CT_API void ct_value_free(ct_value *v);
/* Tag of a value; -1 for NULL. */
CT_API int32_t ct_value_tag(const ct_value *v);
/* A new handle to the same value (containers are shared, not copied). */
CT_API ct_status ct_value_ref(ct_value **out, const ct_value *v);

/* Constructors. Items passed to containers are borrowed and copied by
 * reference (a tensor inside stays the same tensor). */
CT_API ct_status ct_value_none(ct_value **out);
CT_API ct_status ct_value_from_bool(ct_value **out, int32_t b);
CT_API ct_status ct_value_from_int(ct_value **out, int64_t i);
CT_API ct_status ct_value_from_double(ct_value **out, double d);
/* s: UTF-8, `size` bytes (may contain NUL); s may be NULL only if size == 0. */
CT_API ct_status ct_value_from_string(ct_value **out, const char *s, size_t size);
CT_API ct_status ct_value_from_tensor(ct_value **out, const ct_tensor *t);
CT_API ct_status ct_value_from_device(ct_value **out, int32_t device_type, int32_t device_index);
/* A module as a value (an Object), e.g. to pass a submodule to a method or
 * set it as an attribute. Shares the module (no copy). */
CT_API ct_status ct_value_from_module(ct_value **out, const ct_module *m);
/* A value holding a generator (for an op's Generator argument); it refers
 * to the same generator, not a copy. */
CT_API ct_status ct_value_from_generator(ct_value **out, const ct_generator *g);
/* A list whose element type is the unified type of the items (an empty list
 * takes its type from the schema it is passed to). */
CT_API ct_status ct_value_list(ct_value **out, const ct_value *const *items, size_t n);
CT_API ct_status ct_value_int_list(ct_value **out, const int64_t *items, size_t n);
CT_API ct_status ct_value_double_list(ct_value **out, const double *items, size_t n);
CT_API ct_status ct_value_bool_list(ct_value **out, const int32_t *items, size_t n);
CT_API ct_status ct_value_tensor_list(ct_value **out, const ct_tensor *const *items, size_t n);
CT_API ct_status ct_value_tuple(ct_value **out, const ct_value *const *items, size_t n);
/* A dict from n key/value pairs (insertion order kept). Keys must all be
 * strings, all ints or all tensors (CT_ERR_TYPE otherwise). */
CT_API ct_status ct_value_dict(ct_value **out, const ct_value *const *keys,
                               const ct_value *const *values, size_t n);

/* Accessors. CT_ERR_TYPE when the tag does not match (an int is accepted
 * where a double is asked for). */
CT_API ct_status ct_value_to_bool(int32_t *out, const ct_value *v);
CT_API ct_status ct_value_to_int(int64_t *out, const ct_value *v);
CT_API ct_status ct_value_to_double(double *out, const ct_value *v);
/* *out: BORROWED UTF-8 (the `as_` of a view, where `to_` gives a copy or a
 * new handle), NUL-terminated, valid while v (or any handle to the same
 * string) lives; *size its length in bytes (size may be NULL). */
CT_API ct_status ct_value_as_string(const char **out, size_t *size, const ct_value *v);
CT_API ct_status ct_value_to_tensor(ct_tensor **out, const ct_value *v);
CT_API ct_status ct_value_to_device(int32_t *device_type, int32_t *device_index, const ct_value *v);
/* A CT_VALUE_OBJECT that is a module, as a module handle. */
CT_API ct_status ct_value_to_module(ct_module **out, const ct_value *v);
/* Length of a list, tuple, dict or string. */
CT_API ct_status ct_value_length(size_t *out, const ct_value *v);
/* Item i of a list (any kind) or tuple: a new handle. CT_ERR_INDEX. */
CT_API ct_status ct_value_get(ct_value **out, const ct_value *v, size_t i);
/* The i-th entry of a dict in iteration order: new handles for key and value
 * (either out-parameter may be NULL). CT_ERR_INDEX. */
CT_API ct_status ct_value_dict_item(ct_value **key, ct_value **value, const ct_value *v, size_t i);
/* Dict lookup. CT_ERR_NOT_FOUND when the key is absent. */
CT_API ct_status ct_value_dict_get(ct_value **out, const ct_value *v, const ct_value *key);
/* Dict lookup by string key. */
CT_API ct_status ct_value_dict_get_str(ct_value **out, const ct_value *v, const char *key);
/* TorchScript's printable form of any value. Caller-owned, ct_free. Errors:
 * CT_ERR_INVALID_ARGUMENT (NULL; a container that contains itself, or nests
 * deeper than 256 levels: the message says which). */
CT_API ct_status ct_value_to_repr(char **out, const ct_value *v);
/* Python-compatible type string, e.g. "Dict[str, Tensor]". Caller-owned. */
CT_API ct_status ct_value_type_str(char **out, const ct_value *v);

/* torch.save / torch.load interop. Loads a tensor, a state_dict,
 * lists/tuples/dicts of tensors and scalars; and real checkpoints, without
 * running any Python code: legacy (pre-1.6, non-zip) torch.save files, plain
 * pickles, numpy arrays (as tensors) and numpy scalars (as numbers), and any
 * other Python object (argparse.Namespace, a whole nn.Module, ...) as a
 * CT_VALUE_OBJECT whose ct_value_object_class is the Python class name
 * ("argparse.Namespace") and whose ct_value_object_state is the state it was
 * pickled with (usually a Dict[str, Any] of its attributes). Sets become
 * lists, torch.Size an int list, a reference to a class or function its
 * qualified name as a string; tensors load onto the CPU. Limits on what
 * loads (files are untrusted input): lists, tuples, dicts and objects nest
 * at most 256 deep (CT_ERR_IO "nesting deeper than 256": everything that
 * walks a value -- ct_value_to_repr, ct_value_type_str, ct_pickle_save, the
 * bindings, destructors -- recurses once per level, and 256 levels fit a
 * 256 KB thread stack, besides what glibc takes from it for the loaded
 * libraries' thread-local storage: about 215 KB with a CUDA LibTorch); no list, tuple or dict
 * contains itself (a Python object may refer back to itself); every tensor fits its storage, which
 * fits the file. Errors: CT_ERR_IO. ct_pickle_save refuses a value nested
 * deeper than 256 or containing itself (CT_ERR_INVALID_ARGUMENT).
 * Buffers: data borrowed; *data_out caller-owned (ct_free). */
CT_API CT_MAY_BLOCK ct_status ct_pickle_load(ct_value **out, const char *path);
CT_API CT_MAY_BLOCK ct_status ct_pickle_load_buffer(ct_value **out, const void *data, size_t size);
CT_API CT_MAY_BLOCK ct_status ct_pickle_save(const ct_value *v, const char *path);
CT_API CT_MAY_BLOCK ct_status ct_pickle_save_buffer(void **data_out, size_t *size_out,
                                                    const ct_value *v);
/* Checks an untrusted torch.save file without risking this process: loads it
 * (and prints what it loaded) in a short-lived forked child. CT_OK if that
 * worked; the child's own error (code and message) if the load failed
 * cleanly; CT_ERR_IO naming the signal if the child crashed (LibTorch's
 * unpickler crashes on some malformed files) or did not finish within
 * CTORCH_VERIFY_TIMEOUT seconds (default 120). CT_ERR_NOT_FOUND for a missing
 * file. Costs a fork and a full load; the file is not kept: load it again
 * afterwards (docs/conventions.md, "Untrusted files"). Call it from a
 * process that can fork (not between CUDA calls in the child's lifetime). */
CT_API CT_MAY_BLOCK ct_status ct_pickle_verify(const char *path);

/* Objects (CT_VALUE_OBJECT): TorchScript objects and the Python objects of
 * loaded checkpoints. ct_value_object_class: *out = the qualified class name,
 * borrowed, valid while v lives. ct_value_object_state: a new value: for a
 * Python object its pickled state (None if it had none), for a TorchScript
 * object a Dict[str, Any] of its attributes. ct_value_object_args: the
 * arguments its class was called with when unpickled (a tuple; empty for
 * TorchScript objects). Errors: CT_ERR_INVALID_ARGUMENT (NULL), CT_ERR_TYPE
 * (not an object). */
CT_API ct_status ct_value_object_class(const char **out, const ct_value *v);
CT_API ct_status ct_value_object_state(ct_value **out, const ct_value *v);
CT_API ct_status ct_value_object_args(ct_value **out, const ct_value *v);

/* ===================================================================== */
/* Modules (TorchScript)                                                 */
/* ===================================================================== */

/* Loads a TorchScript archive (torch.jit.save). device_type CT_DEVICE_KEEP
 * keeps the saved devices, otherwise it is the map_location. Every extra file
 * in the archive is read (see ct_module_extra_files). Errors: CT_ERR_NOT_FOUND
 * (no such file), CT_ERR_IO (not a TorchScript archive: empty, corrupt,
 * truncated, a torch.save pickle), CT_ERR_TORCH. */
CT_API CT_MAY_BLOCK ct_status ct_module_load(ct_module **out, const char *path, int32_t device_type,
                                             int32_t device_index);
/* Same from memory; data is borrowed and not kept. */
CT_API CT_MAY_BLOCK ct_status ct_module_load_buffer(ct_module **out, const void *data, size_t size,
                                                    int32_t device_type, int32_t device_index);
/* Checks an untrusted TorchScript archive like ct_pickle_verify: loads it on
 * the CPU in a forked child and inspects it there (methods, attributes,
 * parameters, children, and saving it again, which prints every method's
 * code). Same results and costs as ct_pickle_verify. Threads: safe while
 * other threads use ctorch; the fork waits for ctorch's locks (a registration
 * in flight) so that the child never inherits one held. */
CT_API CT_MAY_BLOCK ct_status ct_module_verify(const char *path);
CT_API void ct_module_free(ct_module *m);
/* The archive's extra files (_extra_files) as a Dict[str, str] value (empty
 * for modules that were not loaded from an archive). */
CT_API ct_status ct_module_extra_files(ct_value **out, const ct_module *m);

/* Runs forward(*args). args: n borrowed values (may be NULL if n == 0).
 * *out: the result (None, a value, or a tuple for several results).
 * Errors: CT_ERR_TYPE/CT_ERR_INVALID_ARGUMENT for arguments that do not match
 * the schema (message shows the schema), CT_ERR_TORCH for errors inside the
 * model (message has the TorchScript traceback after the first line).
 * Thread-safe: many threads may run the same module at once. */
CT_API CT_MAY_BLOCK ct_status ct_module_forward(ct_value **out, ct_module *m,
                                                const ct_value *const *args, size_t n);
/* Runs any method with positional and keyword arguments. kwnames/kwvalues:
 * nkw names and values (may be NULL if nkw == 0). Arguments not given take the
 * schema's defaults. Arguments are matched by the same binder as ct_op_call's,
 * with its coercions: an int argument named dtype takes a ctorch dtype code.
 * CT_ERR_NOT_FOUND for an unknown method. */
CT_API CT_MAY_BLOCK ct_status ct_module_call(ct_value **out, ct_module *m, const char *method,
                                             const ct_value *const *args, size_t n,
                                             const char *const *kwnames,
                                             const ct_value *const *kwvalues, size_t nkw);
/* Tensors in, tensors out: the module twin of ct_op_call_tensors, with no
 * value boxing. Runs `method` (NULL: "forward") with the n_inputs tensors as
 * its positional arguments (the others take their defaults; the same
 * binding and messages as ct_module_call). A Tensor result fills one output;
 * a tuple or list of tensors fills one output per element. outputs: caller
 * array of n_outputs slots; each result gets a new handle, and slots past
 * the results are set to NULL. *n_returned (may be NULL) receives the number
 * of results. The method's schema decides before it runs (so a model with
 * side effects never runs for nothing; see ct_module_method_results):
 * CT_ERR_TYPE when its return type is not Tensor, a tuple of Tensors or
 * List[Tensor] (use ct_module_call then), CT_ERR_INVALID_ARGUMENT when a
 * Tensor or tuple result has more tensors than n_outputs (the message gives
 * the count, *n_returned receives it, slots untouched). Only a List[Tensor]
 * longer than n_outputs is found after the run (the same error). Also
 * CT_ERR_INVALID_ARGUMENT for NULL arguments, CT_ERR_NOT_FOUND (unknown
 * method), and the errors of ct_module_call. Thread-safe as
 * ct_module_forward. */
CT_API CT_MAY_BLOCK ct_status ct_module_forward_tensors(ct_tensor **outputs, size_t n_outputs,
                                                        size_t *n_returned, ct_module *m,
                                                        const char *method,
                                                        const ct_tensor *const *inputs,
                                                        size_t n_inputs);
/* What ct_module_forward_tensors gives for `method` (NULL: "forward"), read
 * from its schema without running it, so a binding asks once per method:
 * *kind is CT_RESULT_TENSOR (one Tensor; *count = 1), CT_RESULT_TUPLE (a
 * tuple of *count Tensors), CT_RESULT_LIST (a List[Tensor], whose length
 * only the run tells; *count = -1) or CT_RESULT_OTHER (anything else:
 * ct_module_forward_tensors refuses it without running; *count = -1).
 * count may be NULL. Errors: CT_ERR_INVALID_ARGUMENT (NULL kind or m),
 * CT_ERR_NOT_FOUND (unknown method). Thread-safe. */
#define CT_RESULT_OTHER 0
#define CT_RESULT_TENSOR 1
#define CT_RESULT_TUPLE 2
#define CT_RESULT_LIST 3
CT_API CT_MAY_BLOCK ct_status ct_module_method_results(int32_t *kind, int64_t *count,
                                                       const ct_module *m, const char *method);
/* Methods as a Dict[str, str] value: name -> schema string. */
CT_API ct_status ct_module_methods(ct_value **out, const ct_module *m);
/* Dict[str, Tensor] with Python's dotted names; recurse=1 includes children.
 * The tensors are the module's own (no copy). */
CT_API ct_status ct_module_named_parameters(ct_value **out, const ct_module *m, int32_t recurse);
CT_API ct_status ct_module_named_buffers(ct_value **out, const ct_module *m, int32_t recurse);
/* torch.nn.Module.state_dict: a dict value, str -> Tensor, in torch's order
 * (each module's parameters, then its buffers, then its children's, depth
 * first), dotted names; the tensors are the module's own (detach or copy to
 * keep a snapshot). *out: free with ct_value_free. */
CT_API ct_status ct_module_state_dict(ct_value **out, const ct_module *m);
/* torch.nn.Module.load_state_dict: copies each tensor of state_dict (a dict
 * value, str -> Tensor, as ct_module_named_parameters and _buffers name
 * them) into the module's parameter or buffer of that name, without
 * recording autograd, converting dtype and device as copy_ does. All or
 * nothing: a shape mismatch ("size mismatch for 0.weight: ..."), a
 * non-tensor value, or with strict=1 a missing or unexpected key (each
 * listed, as torch's message) changes nothing and returns
 * CT_ERR_INVALID_ARGUMENT. incompatible (may be NULL): a tuple value
 * (missing_keys, unexpected_keys), lists of str, free with ct_value_free.
 * Not concurrently with other use of m. */
CT_API CT_MAY_BLOCK ct_status ct_module_load_state_dict(ct_value **incompatible, ct_module *m,
                                           const ct_value *state_dict, int32_t strict);
/* torch.nn.Module.zero_grad: every parameter's gradient set to none
 * (set_to_none=1, torch's default) or detached and zeroed. */
CT_API ct_status ct_module_zero_grad(ct_module *m, int32_t set_to_none);
/* Dict[str, Any]: every attribute (parameters, buffers, submodules as
 * objects, plain attributes), dotted when recurse=1. */
CT_API ct_status ct_module_named_attributes(ct_value **out, const ct_module *m, int32_t recurse);
/* Dict[str, Object] of child modules; recurse=1 gives all descendants with
 * dotted names (named_modules without the root). */
CT_API ct_status ct_module_named_children(ct_value **out, const ct_module *m, int32_t recurse);
/* Gets / sets one attribute (name may be dotted, "layer1.0.conv1.weight").
 * CT_ERR_NOT_FOUND, CT_ERR_TYPE (set with a value of the wrong type). */
CT_API ct_status ct_module_get_attr(ct_value **out, const ct_module *m, const char *name);
CT_API ct_status ct_module_set_attr(ct_module *m, const char *name, const ct_value *v);
/* In place: moves parameters and buffers (device and/or dtype, see
 * ct_tensor_to). dtype must be floating; only floating tensors change dtype. */
CT_API CT_MAY_BLOCK ct_status ct_module_to(ct_module *m, int32_t device_type, int32_t device_index,
                                           int32_t dtype, int32_t non_blocking);
/* train(on) / eval() in place, recursively. */
CT_API ct_status ct_module_train(ct_module *m, int32_t on);
CT_API ct_status ct_module_eval(ct_module *m);
/* 1 if training, 0 if eval, -1 for NULL. */
CT_API int32_t ct_module_is_training(const ct_module *m);
/* Deep copy: parameters and buffers are copied. */
CT_API CT_MAY_BLOCK ct_status ct_module_clone(ct_module **out, const ct_module *m);
/* Saves a TorchScript archive that Python's torch.jit.load reads.
 * extra_files: NULL or a Dict[str, str] value stored as _extra_files. */
CT_API CT_MAY_BLOCK ct_status ct_module_save(const ct_module *m, const char *path,
                                             const ct_value *extra_files);
CT_API CT_MAY_BLOCK ct_status ct_module_save_buffer(void **data_out, size_t *size_out,
                                                    const ct_module *m,
                                                    const ct_value *extra_files);
/* torch.jit.freeze (module is put in eval mode first; the input is left
 * unchanged) and torch.jit.optimize_for_inference; both give new modules. */
CT_API CT_MAY_BLOCK ct_status ct_module_freeze(ct_module **out, const ct_module *m);
CT_API CT_MAY_BLOCK ct_status ct_module_optimize_for_inference(ct_module **out, const ct_module *m);

/* Building modules without Python. ct_module_new makes an empty module of
 * class `__torch__.<class_name>`; register tensors and submodules on it,
 * then define methods from TorchScript source, e.g.
 *   "def forward(self, x):\n    return x * self.w + self.b\n".
 * Source may call registered foreign ops as `myns.scale(x, 2.0)` or
 * `torch.ops.myns.scale(x, 2.0)`. Errors: CT_ERR_TORCH with the compiler's
 * message for bad source, CT_ERR_INVALID_ARGUMENT for a name in use, and for
 * source deeper than LibTorch's parser can take: brackets or blocks nested
 * more than 64 deep, more than 512 operators, calls, subscripts, attributes
 * and and/or/not/in/is/if/else/for in one statement (also ct_script_compile). */
CT_API ct_status ct_module_new(ct_module **out, const char *class_name);
CT_API ct_status ct_module_register_parameter(ct_module *m, const char *name, const ct_tensor *t,
                                              int32_t requires_grad);
CT_API ct_status ct_module_register_buffer(ct_module *m, const char *name, const ct_tensor *t);
CT_API ct_status ct_module_register_module(ct_module *m, const char *name, const ct_module *child);
CT_API CT_MAY_BLOCK ct_status ct_module_define(ct_module *m, const char *source);

/* torch.nn's layers and losses, as TorchScript modules. ct_module_new_nn
 * makes the layer `layer` ("Linear", "Conv2d", "Sequential", ...) with
 * torch.nn's constructor arguments, bound as in an operator call (positional
 * args, then kwnames/kwvalues; defaults as torch.nn's; "dtype" and "device"
 * as for factories). The result is an ordinary module: forward (and the
 * module API) as torch.nn's layer, parameters and buffers under torch.nn's
 * names (state_dict keys such as "0.weight", "bn.running_mean",
 * "weight_ih_l0"), initialized by torch.nn's initializers in torch.nn's
 * order from the default generator (ct_manual_seed(s) then a layer gives
 * the parameters torch.manual_seed(s) then torch.nn's layer gives), train
 * and eval as torch's, and it saves as a file torch.jit.load opens.
 * ct_module_nn_layers lists the layers with their signatures.
 *   Layers: Linear, Bilinear, Identity, Flatten, Conv1d/2d/3d,
 *   ConvTranspose1d/2d/3d, BatchNorm1d/2d/3d, LayerNorm, GroupNorm, Dropout,
 *   AlphaDropout, Embedding, LSTM, GRU, RNN, MultiheadAttention,
 *   TransformerEncoderLayer (activation "relu", "gelu" or a module), MaxPool1d/2d/3d,
 *   AvgPool1d/2d/3d, AdaptiveAvgPool1d/2d/3d, AdaptiveMaxPool1d/2d/3d,
 *   activations (ReLU, ReLU6, LeakyReLU, ELU, SELU, CELU, GELU, SiLU, Mish,
 *   Sigmoid, Tanh, Hardtanh, Hardswish, Hardsigmoid, Softplus, Softsign,
 *   Tanhshrink, Softmax, LogSoftmax), losses (CrossEntropyLoss, NLLLoss,
 *   MSELoss, L1Loss, SmoothL1Loss, HuberLoss, BCELoss, BCEWithLogitsLoss,
 *   KLDivLoss, CosineEmbeddingLoss) and the containers Sequential (modules
 *   as args; forward chains them), ModuleList (a list value of modules) and
 *   ModuleDict (a dict value, str to module). Containers hold the modules
 *   themselves (shared, as torch.nn does), not copies.
 * *out: a new module, free with ct_module_free. Any thread (each call makes
 * its own module; the default generator is shared, so layers made on
 * several threads at once draw in no fixed order). Errors:
 * CT_ERR_INVALID_ARGUMENT (NULL, unknown layer naming the known ones, an
 * argument missing, unknown or out of range, as torch.nn's message says),
 * CT_ERR_TYPE (an argument of the wrong type), CT_ERR_NOT_SUPPORTED (an
 * option torch.nn has that ctorch does not build, named). */
CT_API ct_status ct_module_new_nn(ct_module **out, const char *layer, const ct_value *const *args,
                                  size_t n, const char *const *kwnames,
                                  const ct_value *const *kwvalues, size_t nkw);
/* A dict value, layer name -> its signature as a schema string
 * ("nn::Linear(int in_features, int out_features, bool bias=True, *,
 * Device? device=None, ScalarType? dtype=None) -> ()"). *out: free with
 * ct_value_free. Any thread. */
CT_API ct_status ct_module_nn_layers(ct_value **out);
/* torch.nn.init's initializer `method` ("kaiming_uniform_", "xavier_normal_",
 * "orthogonal_", "trunc_normal_", "uniform_", "normal_", "constant_",
 * "ones_", "zeros_", "eye_", "dirac_", ...: ct_tensor_nn_init_methods lists
 * them with their signatures) on t in place, without recording autograd
 * (as torch's, under no_grad), drawing from the default generator or the
 * "generator" argument; the same numbers torch.nn.init gives after the
 * same seed. Arguments bound as ct_module_new_nn's. Errors:
 * CT_ERR_INVALID_ARGUMENT (NULL, unknown method, a tensor the method does
 * not take, such as fewer than 2 dimensions for fan-based methods, with
 * torch's message), CT_ERR_TYPE. Any thread; not concurrently with other
 * use of t. */
CT_API ct_status ct_tensor_nn_init(ct_tensor *t, const char *method, const ct_value *const *args,
                                   size_t n, const char *const *kwnames,
                                   const ct_value *const *kwvalues, size_t nkw);
/* A dict value, initializer name -> its signature as a schema string. */
CT_API ct_status ct_tensor_nn_init_methods(ct_value **out);

/* A copy of m for PyTorch: every call of an operator registered through
 * ctorch (ct_library_define, ct_op_register) in its methods is replaced by
 * that operator's twin (ct_library_set_twin), so the copy, saved with
 * ct_module_save, opens with torch.jit.load in a Python that has neither
 * ctorch nor the host language. Parameters and buffers are copied (as
 * ct_module_clone). *out: a new module, free with ct_module_free.
 * Errors: CT_ERR_INVALID_ARGUMENT (NULL), CT_ERR_NOT_SUPPORTED naming every
 * operator that has no twin (nothing is made). Not concurrently with
 * ct_library_set_twin for the same operators. */
CT_API CT_MAY_BLOCK ct_status ct_module_to_pytorch(ct_module **out, const ct_module *m);

/* TorchScript functions compiled from source (no module). */
CT_API CT_MAY_BLOCK ct_status ct_script_compile(ct_script **out, const char *source);
CT_API void ct_script_free(ct_script *s);
/* List[str] of the function names. */
CT_API ct_status ct_script_functions(ct_value **out, const ct_script *s);
/* Calls a function by name, like ct_module_call. */
CT_API CT_MAY_BLOCK ct_status ct_script_call(ct_value **out, const ct_script *s,
                                             const char *function, const ct_value *const *args,
                                             size_t n, const char *const *kwnames,
                                             const ct_value *const *kwvalues, size_t nkw);

/* ===================================================================== */
/* Operators by name                                                     */
/* ===================================================================== */

/* Looks up an operator, e.g. ("aten::add", "Tensor"). overload "" is the
 * default overload; overload NULL gives the whole overload set, resolved
 * against the arguments at each call (the first overload whose schema
 * accepts them). Also finds foreign ops registered with ct_op_register.
 * Errors: CT_ERR_NOT_FOUND (message names the op and lists overloads).
 * The handle is immutable and may be used from any number of threads. */
CT_API ct_status ct_op_find(ct_op **out, const char *name, const char *overload);
CT_API void ct_op_free(ct_op *op);
/* Number of overloads in the handle (1 for a specific overload). */
CT_API size_t ct_op_num_overloads(const ct_op *op);
/* Schema of overload i, e.g. "aten::add.Tensor(Tensor self, Tensor other, *,
 * Scalar alpha=1) -> Tensor". Borrowed; valid while op lives. */
CT_API ct_status ct_op_schema(const char **out, const ct_op *op, size_t overload);
CT_API ct_status ct_op_num_arguments(size_t *out, const ct_op *op, size_t overload);
/* Argument i of overload `overload`. Each out may be NULL. Strings borrowed
 * (valid while op lives); *default_value is NULL when there is no default,
 * else its TorchScript repr ("1", "None", "[0, 1]"). */
CT_API ct_status ct_op_argument(const char **name, const char **type, const char **default_value,
                                int32_t *kwarg_only, const ct_op *op, size_t overload, size_t i);
CT_API ct_status ct_op_num_returns(size_t *out, const ct_op *op, size_t overload);
CT_API ct_status ct_op_return(const char **name, const char **type, const ct_op *op,
                              size_t overload, size_t i);

/* Calls the operator. Arguments of type ScalarType (e.g. `dtype=`), and int
 * arguments named dtype (TorchScript's prim overloads), take ctorch dtype
 * codes (CT_FLOAT64, ...); Layout and MemoryFormat take torch's own
 * numbers. args: n positional values; kwnames/kwvalues: nkw keyword
 * arguments ("axis" and "keepdims" name `dim` and `keepdim` where the schema
 * has no argument of that name, as in torch's Python); missing arguments take
 * their defaults. Python-like coercions
 * apply (int for float, list for int[], a tensor for Scalar is not allowed).
 * *out: None (no results), the single result, or a tuple of results. An
 * in-place op returns a value referring to the same tensor it mutated.
 * Errors: CT_ERR_TYPE / CT_ERR_INVALID_ARGUMENT (message names the op and
 * shows its schema), CT_ERR_TORCH, CT_ERR_CALLBACK (foreign op failed). */
CT_API CT_MAY_BLOCK ct_status ct_op_call(ct_value **out, const ct_op *op,
                                         const ct_value *const *args, size_t n,
                                         const char *const *kwnames,
                                         const ct_value *const *kwvalues, size_t nkw);
/* Fast path for the common case: tensors in, tensors out. inputs: the first
 * n_inputs arguments (all the others take their defaults); outputs: a caller
 * array of n_outputs slots, each receiving a new handle, where n_outputs must
 * equal the number of results and every result must be a Tensor
 * (CT_ERR_INVALID_ARGUMENT / CT_ERR_TYPE otherwise, slots untouched). Saves
 * the value wrapping of ct_op_call (bindings' a + b). Same resolution and
 * errors as ct_op_call otherwise. */
CT_API CT_MAY_BLOCK ct_status ct_op_call_tensors(ct_tensor **outputs, size_t n_outputs,
                                                 const ct_op *op, const ct_tensor *const *inputs,
                                                 size_t n_inputs);
/* *out = 1 when ct_op_call_tensors(op, n_inputs tensors) resolves to an
 * overload whose first n_inputs arguments accept tensors, whose other
 * arguments have defaults, and which returns one or more results that are
 * all Tensors (not Tensor[] or Tensor?); else 0 (also for an overload that
 * cannot be called by name). For an overload set this is the overload the
 * call would choose. Bindings use it instead of parsing schemas. Errors:
 * CT_ERR_INVALID_ARGUMENT (NULL out or op). */
CT_API ct_status ct_op_tensors_only(int32_t *out, const ct_op *op, size_t n_inputs);
/* ct_op_call_tensors with further positional arguments given as values: the
 * op's positional arguments are tensors[0..n_tensors) followed by
 * values[0..n_values) (ints, floats, None, ... as for ct_op_call, same
 * coercions); all others take their defaults. Results as ct_op_call_tensors:
 * outputs is a caller array of n_outputs slots, each receiving a new handle;
 * n_outputs must equal the number of results and every result must be a
 * Tensor. Saves the value wrapping of the tensors and of the results
 * (bindings' x[1] is aten::select.int(x, 0, 1): one call, with the int values
 * reused across calls). Ownership: tensors and values are borrowed and not
 * kept; tensors may be NULL if n_tensors == 0, values if n_values == 0.
 * Errors: CT_ERR_INVALID_ARGUMENT (NULL op, array or element; wrong
 * n_outputs), CT_ERR_TYPE (an argument the op does not accept, or a result
 * that is not a Tensor), CT_ERR_TORCH, CT_ERR_CALLBACK, as ct_op_call. The
 * results are checked after the op ran, so an in-place op has had its effect
 * when n_outputs or a result type is wrong: check ct_op_num_returns and
 * ct_op_return first. Threads: as ct_op_call (any number of threads may call
 * one op handle). */
CT_API CT_MAY_BLOCK ct_status ct_op_call_tensors_values(ct_tensor **outputs, size_t n_outputs,
                                                        const ct_op *op,
                                                        const ct_tensor *const *tensors,
                                                        size_t n_tensors,
                                                        const ct_value *const *values,
                                                        size_t n_values);
/* One-shot call by qualified name: "aten::add.Tensor", "aten::add" (overload
 * set) or "myns::scale". Lookups are cached. */
CT_API CT_MAY_BLOCK ct_status ct_op_call_name(ct_value **out, const char *qualified_name,
                                 const ct_value *const *args, size_t n, const char *const *kwnames,
                                 const ct_value *const *kwvalues, size_t nkw);
/* List[str] of every registered operator, as "ns::name" or
 * "ns::name.overload". */
CT_API ct_status ct_op_list(ct_value **out);

/* Foreign operators callable from TorchScript and ct_op_call.
 * fn(ctx, args, n, out): args are n borrowed values in schema order (defaults
 * filled in); the callback stores one NEW value in *out: None, the single
 * result, or a tuple for several results (ctorch checks it against the
 * schema). It runs on the thread that calls the op. Returns CT_OK or an error
 * status after ct_set_error(); the caller gets CT_ERR_CALLBACK with that
 * message. The op stays registered for the life of the process (there is no
 * unregistering), so ctx must stay valid until exit. It lives in TorchScript's
 * registry only (one kernel for every device, no autograd); for an operator
 * in torch's dispatcher, seen by PyTorch too, use ct_library_define. schema: e.g.
 * "myns::scale(Tensor x, float a) -> Tensor". Errors: CT_ERR_INVALID_ARGUMENT
 * (bad schema, op already registered). */
typedef ct_status (*ct_op_fn)(void *ctx, const ct_value *const *args, size_t n, ct_value **out);
CT_API CT_MAY_BLOCK ct_status ct_op_register(const char *schema, ct_op_fn fn, void *ctx);

/* Operators in torch's dispatcher (torch.library), with kernels written in
 * the host language. A library handle is a registration scope for one
 * namespace: the operators it defines and the kernels it adds live in the
 * dispatcher until ct_library_free, so PyTorch's Python (torch.ops.ns.name),
 * TorchScript, AOTInductor packages and ct_op_call* all reach them, on the
 * device the inputs are on.
 *
 * Kernels are ct_op_fn callbacks (see ct_op_register: borrowed arguments in
 * schema order, one NEW result in *out, an error status after ct_set_error
 * reaches the caller as CT_ERR_CALLBACK, or as a RuntimeError in PyTorch,
 * with the kernel's message). A kernel runs on the thread that calls the op,
 * except where torch itself moves work (TorchScript's fork, CUDA autograd's
 * device threads). destroy(ctx) (may be NULL) runs exactly once: when the
 * kernel is removed and no autograd graph still uses it, or before a failing
 * registration call returns; never after exit() has begun (kernels still
 * registered then are left to the process's end).
 *
 * Threads: registration calls on one library handle are serialized; calls of
 * other operators may run meanwhile. Freeing a library while one of its
 * kernels runs on another thread is undefined: stop those calls first. */

/* A registration scope for namespace ns (letters, digits, '_'; not "aten"
 * or "prim"). Several libraries may share a namespace. *out: free with
 * ct_library_free. Errors: CT_ERR_INVALID_ARGUMENT. Any thread. */
CT_API CT_MAY_BLOCK ct_status ct_library_new(ct_library **out, const char *ns);

/* Removes every kernel and definition the library added (NULL is a no-op).
 * Afterwards its operators are no longer listed or found; a handle or a
 * compiled TorchScript function that still refers to one fails with
 * CT_ERR_NOT_FOUND ("... was removed") instead of running a freed kernel.
 * Defining the name again (in any library) makes it callable again. */
CT_API CT_MAY_BLOCK void ct_library_free(ct_library *lib);

/* Defines an operator from a schema, "scale(Tensor x, float a) -> Tensor"
 * (the library's namespace is added) or "myns::scale(...)" (it must match).
 * tags: NULL or n_tags names of torch.Tag values the LibTorch version has
 * ("pt2_compliant_tag", "nondeterministic_seeded", ...). The operator has no
 * kernel until ct_library_impl gives it one. Errors: CT_ERR_INVALID_ARGUMENT
 * (bad schema, other namespace, name already defined in the dispatcher or by
 * ct_op_register, unknown tag). */
CT_API CT_MAY_BLOCK ct_status ct_library_define(ct_library *lib, const char *schema,
                                                const char *const *tags, size_t n_tags);

/* Flags of ct_library_impl and ct_library_impl_autograd. */
/* The kernel may only run on the thread that registered it; a call from any
 * other thread fails with CT_ERR_NOT_SUPPORTED before the kernel is entered
 * (for runtimes such as Julia < 1.9 that cannot be entered from a thread they
 * did not start). */
#define CT_KERNEL_SAME_THREAD 1

/* Gives operator `name` ("scale", "scale.overload" or "myns::scale"), which
 * must be defined, a kernel for one dispatch key: "CPU", "CUDA", "Meta"
 * (shapes only: inputs and outputs are meta tensors, no data),
 * "CompositeExplicitAutograd" (every device; autograd through
 * ct_library_impl_autograd) or "CompositeImplicitAutograd" (every device;
 * autograd through the ops the kernel calls). One kernel per operator and
 * key. The library takes ctx: destroy(ctx) also runs when this call fails.
 * Errors: CT_ERR_INVALID_ARGUMENT (unknown key, operator not defined, key
 * already has a ctorch kernel), CT_ERR_NOT_FOUND. */
CT_API CT_MAY_BLOCK ct_status ct_library_impl(ct_library *lib, const char *name,
                                              const char *dispatch_key, ct_op_fn kernel, void *ctx,
                                              ct_ctx_destroy_fn destroy, int32_t flags);

/* A tensors-only kernel: inputs are the operator's n_inputs Tensor arguments
 * in schema order (borrowed handles, valid during the call only; do not free
 * them); outputs has n_outputs slots, NULL on entry: store a NEW handle in
 * each (ctorch takes it, also when the kernel fails). Returns CT_OK or an
 * error status after ct_set_error(), as a ct_op_fn kernel. */
typedef ct_status (*ct_tensor_kernel_fn)(void *ctx, const ct_tensor *const *inputs, size_t n_inputs,
                                         ct_tensor **outputs, size_t n_outputs);

/* ct_library_impl for an operator whose arguments and returns are all
 * Tensor ("softsign(Tensor x) -> Tensor"): the kernel gets handles instead
 * of values and stores handles, which saves the value wrapping and the
 * schema check of each result (bench_custom: a 4-float kernel at 0.96x of a
 * C++ TORCH_LIBRARY kernel's time, 1.19x through values). Keys, flags,
 * ownership of ctx, threads and errors as ct_library_impl, and
 * CT_ERR_INVALID_ARGUMENT when an argument or return is not a plain Tensor
 * (Tensor?, Tensor[], numbers: use ct_library_impl). A kernel that stores
 * NULL in a slot, one handle in two slots, or an input handle fails the call
 * with CT_ERR_CALLBACK (nothing is freed twice). */
CT_API CT_MAY_BLOCK ct_status ct_library_impl_tensors(ct_library *lib, const char *name,
                                         const char *dispatch_key, ct_tensor_kernel_fn kernel,
                                         void *ctx, ct_ctx_destroy_fn destroy, int32_t flags);

/* Backward of an operator's autograd formula.
 * args: the n_args arguments of the forward call (borrowed; tensors detached);
 * result: its result (borrowed; one tensor, or a tuple of tensors);
 * grad_outputs: n_outputs borrowed gradients, one per result tensor;
 * grad_inputs: n_args slots, NULL on entry: store a NEW gradient (same shape
 * as the argument) for each Tensor argument that needs one, NULL for none;
 * values stored for other arguments are freed and ignored. Returns CT_OK or
 * an error status after ct_set_error(). Grad mode is on only when backward was
 * asked to create a graph. */
typedef ct_status (*ct_op_backward_fn)(void *ctx, const ct_value *const *args, size_t n_args,
                                       const ct_value *result, const ct_tensor *const *grad_outputs,
                                       size_t n_outputs, ct_tensor **grad_inputs);

/* Gives operator `name` an autograd formula (dispatch key "Autograd"): the
 * forward runs the operator's device kernel below autograd, and when an input
 * requires grad (and grad mode is on) the results get a graph node named
 * "<ns>::<name>" whose backward calls `backward`. The operator's returns must
 * all be Tensor. The node keeps ctx alive while it exists. Ownership, flags
 * and errors as ct_library_impl. */
CT_API CT_MAY_BLOCK ct_status ct_library_impl_autograd(ct_library *lib, const char *name,
                                                       ct_op_backward_fn backward, void *ctx,
                                                       ct_ctx_destroy_fn destroy, int32_t flags);

/* A TorchScript twin of operator `name` (defined by this library): source
 * defining a function named as the operator ("def psoftsign(x: Tensor) ->
 * Tensor: return x / (1 + x.abs())"; or, under any name, the source's only
 * function), taking the operator's arguments and
 * returning its results, written with torch's own operators only. The twin
 * is what ct_module_to_pytorch puts in place of the operator's calls, so a
 * model with host-language layers loads in PyTorch without ctorch; it is not
 * run otherwise (bindings' check_twin helpers compare it with the kernel).
 * A second call replaces the twin; ct_library_free forgets it. Errors:
 * CT_ERR_INVALID_ARGUMENT (NULL, operator not defined by this library, no
 * function of that name among several, a different number of arguments or
 * results), CT_ERR_TORCH
 * (the compiler's message). Any thread. */
CT_API CT_MAY_BLOCK ct_status ct_library_set_twin(ct_library *lib, const char *name,
                                                  const char *source);

/* ===================================================================== */
/* Random generators                                                      */
/* ===================================================================== */

/* Random generators (torch.Generator). A handle refers to one generator:
 * ct_generator_default gives the device's default one (what ops use without
 * a generator argument and what ct_manual_seed seeds), ct_generator_new a
 * generator of its own. Pass one to an op's `Generator? generator` argument
 * through ct_value_from_generator. device_type CT_DEVICE_CPU or
 * CT_DEVICE_CUDA (device_index -1: the current device). Free with
 * ct_generator_free (NULL is a no-op); freeing a default generator's handle
 * leaves the generator. Threads: each call locks the generator, as torch
 * does, so handles may be shared; draws from several threads at once are
 * safe but their order is not fixed. Errors: CT_ERR_INVALID_ARGUMENT (NULL,
 * device type), CT_ERR_NOT_SUPPORTED (CUDA without a device). */
CT_API ct_status ct_generator_default(ct_generator **out, int32_t device_type,
                                      int32_t device_index);
/* A new generator seeded with torch's default seed (67280421310721), as
 * torch.Generator(device) is. */
CT_API ct_status ct_generator_new(ct_generator **out, int32_t device_type, int32_t device_index);
CT_API void ct_generator_free(ct_generator *g);
/* Seeds the generator (torch.Generator.manual_seed). */
CT_API ct_status ct_generator_manual_seed(ct_generator *g, uint64_t seed);
/* Seeds it from a non-deterministic source and returns that seed
 * (torch.Generator.seed). */
CT_API ct_status ct_generator_seed(uint64_t *out, ct_generator *g);
/* The seed it was last seeded with (torch.Generator.initial_seed). */
CT_API ct_status ct_generator_initial_seed(uint64_t *out, const ct_generator *g);
/* Its whole state as a NEW 1-D uint8 CPU tensor, the bytes
 * torch.Generator.get_state() gives (5056 for the CPU generator): a state
 * from PyTorch's get_state() sets ctorch's generator to draw the same
 * numbers, and the reverse. */
CT_API ct_status ct_generator_state(ct_tensor **out, const ct_generator *g);
/* Restores a state from ct_generator_state or torch.Generator.get_state.
 * state is borrowed: a uint8 CPU tensor of the size that device's generator
 * uses. Errors: CT_ERR_TYPE (not uint8), CT_ERR_INVALID_ARGUMENT (NULL, not
 * on the CPU, wrong size, a state the generator refuses); on error the
 * generator is unchanged. */
CT_API ct_status ct_generator_set_state(ct_generator *g, const ct_tensor *state);
CT_API ct_status ct_generator_device(int32_t *device_type, int32_t *device_index,
                                     const ct_generator *g);

/* ===================================================================== */
/* Training: optimizers, gradient clipping, autocast, loss scaling       */
/* ===================================================================== */

/* Optimizers with torch.optim's algorithms, options and state_dict layout.
 * algorithm: "sgd", "adam", "adamw", "rmsprop" or "adagrad" (torch.optim's
 * class names, any case). A step equals torch.optim's default CPU step
 * (the single-tensor one of the same LibTorch version) to float rounding.
 * options: NULL for torch.optim's defaults, or a Dict[str, Any] value of the
 * keyword arguments torch.optim takes ({"lr": 0.1, "momentum": 0.9},
 * {"betas": (0.9, 0.99)}; borrowed); an unknown name, a wrong type or a value
 * torch.optim refuses gives CT_ERR_INVALID_ARGUMENT naming it, and a
 * differentiable, capturable or fused optimizer CT_ERR_NOT_SUPPORTED.
 * params: n borrowed tensors (n >= 1), leaves (not results of a recorded op),
 * none twice and none in another group (CT_ERR_INVALID_ARGUMENT); the
 * optimizer keeps its own references. Free with ct_optimizer_free (NULL is a
 * no-op). Threads: every call locks the optimizer, so a handle may be shared;
 * a step must not race with a backward() that writes the same gradients. */
CT_API ct_status ct_optimizer_new(ct_optimizer **out, const char *algorithm,
                                  const ct_tensor *const *params, size_t n,
                                  const ct_value *options);
CT_API void ct_optimizer_free(ct_optimizer *opt);
/* Adds a parameter group (torch's add_param_group): options it does not set
 * are the ones ct_optimizer_new was given (or torch's defaults). Same rules
 * for params and options as ct_optimizer_new. */
CT_API ct_status ct_optimizer_add_param_group(ct_optimizer *opt, const ct_tensor *const *params,
                                              size_t n, const ct_value *options);
/* The algorithm's lower-case name ("adam"); static string. */
CT_API ct_status ct_optimizer_algorithm(const char **out, const ct_optimizer *opt);
/* One update of every parameter that has a gradient (the others are left
 * alone, as in torch), with autograd not recording. Errors:
 * CT_ERR_NOT_SUPPORTED (a sparse gradient), CT_ERR_INVALID_ARGUMENT (a loaded
 * state that lacks what the options ask for, e.g. amsgrad turned on later),
 * CT_ERR_TORCH (a gradient whose shape or device differs from its
 * parameter's). On error some parameters may already be updated. */
CT_API CT_MAY_BLOCK ct_status ct_optimizer_step(ct_optimizer *opt);
/* set_to_none 1: gradients become undefined (torch 2.x's default);
 * 0: zeroed in place (and detached, as torch does). */
CT_API ct_status ct_optimizer_zero_grad(ct_optimizer *opt, int32_t set_to_none);
CT_API ct_status ct_optimizer_num_groups(size_t *out, const ct_optimizer *opt);
/* A group's parameters as a NEW tensor-list value (the tensors themselves).
 * Errors: CT_ERR_INDEX (no such group). */
CT_API ct_status ct_optimizer_params(ct_value **out, const ct_optimizer *opt, size_t group);
/* One option of a group, by torch's name ("lr", "betas", "momentum", ...):
 * get gives a NEW value; set takes a borrowed one, checked as in
 * ct_optimizer_new (on error the group is unchanged). A name the algorithm
 * does not have may be set (as Python code stores "initial_lr" in a group) and
 * is kept in the state_dict. Errors: CT_ERR_INDEX (group), CT_ERR_NOT_FOUND
 * (get of a name the group lacks), CT_ERR_INVALID_ARGUMENT, CT_ERR_NOT_SUPPORTED. */
CT_API ct_status ct_optimizer_get(ct_value **out, const ct_optimizer *opt, size_t group,
                                  const char *name);
CT_API ct_status ct_optimizer_set(ct_optimizer *opt, size_t group, const char *name,
                                  const ct_value *value);
/* All of a group's options as a NEW Dict[str, Any] value, in torch's order
 * (a copy: changing it leaves the group alone). CT_ERR_INDEX (group). */
CT_API ct_status ct_optimizer_options(ct_value **out, const ct_optimizer *opt, size_t group);
/* The same for options that are numbers (what LR schedules change): get
 * accepts an int or float option (CT_ERR_TYPE otherwise); set stores a float. */
CT_API ct_status ct_optimizer_get_double(double *out, const ct_optimizer *opt, size_t group,
                                         const char *name);
CT_API ct_status ct_optimizer_set_double(ct_optimizer *opt, size_t group, const char *name,
                                         double value);
/* torch.optim's state_dict(): a NEW Dict[str, Any] value
 * {"state": {index: {"step": tensor, "exp_avg": tensor, ...}},
 *  "param_groups": [{options..., "params": [index, ...]}]}, indices counting
 * parameters over all groups in order; the state tensors are the optimizer's
 * own (not copies: save it, or clone what you keep). Saved with
 * ct_pickle_save it is what Python's optimizer.load_state_dict() takes. */
CT_API ct_status ct_optimizer_state_dict(ct_value **out, const ct_optimizer *opt);
/* torch.optim's load_state_dict(): state_dict (borrowed) from
 * ct_optimizer_state_dict or a torch.save'd Python optimizer state_dict
 * (ct_pickle_load). The groups must match in number and size; the state is
 * copied (cast to each parameter's dtype and device, "step" kept as it is)
 * and each group's options are the saved ones. Errors:
 * CT_ERR_INVALID_ARGUMENT naming what does not match (layout, group sizes, a
 * state for an index no group has, a state tensor whose shape differs from
 * its parameter's, a refused option); on error the optimizer is unchanged. */
CT_API ct_status ct_optimizer_load_state_dict(ct_optimizer *opt, const ct_value *state_dict);

/* torch.nn.utils.clip_grad_norm_: scales the gradients of the n borrowed
 * params (those without one are skipped) so that their total norm of order
 * norm_type (INFINITY for the max-norm) is at most max_norm; *out (may be
 * NULL) is a NEW 0-dim tensor holding the total norm before clipping (0 when
 * no parameter has a gradient). error_if_nonfinite 1: a NaN or infinite
 * total norm gives CT_ERR_INVALID_ARGUMENT and leaves the gradients alone.
 * Errors: CT_ERR_INVALID_ARGUMENT (NULL params with n > 0, a NULL item). */
CT_API CT_MAY_BLOCK ct_status ct_clip_grad_norm(ct_tensor **out, const ct_tensor *const *params,
                                                size_t n, double max_norm, double norm_type,
                                                int32_t error_if_nonfinite);
/* torch.nn.utils.clip_grad_value_: clamps every gradient into
 * [-clip_value, clip_value] in place. */
CT_API ct_status ct_clip_grad_value(const ct_tensor *const *params, size_t n, double clip_value);

/* Autocast (torch.autocast) for the calling thread, as a stack like
 * ct_inference_mode_push/pop: ops this thread calls (ct_op_call*, modules'
 * methods, autograd functions' forwards) run in `dtype` where torch's autocast
 * lists say so. device_type: CT_DEVICE_CPU or CT_DEVICE_CUDA (settable in a
 * build without CUDA, as in torch); dtype 0 for the device's default
 * (CT_FLOAT16 on CUDA, CT_BFLOAT16 on the CPU), else CT_FLOAT16 or
 * CT_BFLOAT16 (LibTorch 1.13's CPU autocast: CT_BFLOAT16 only); enabled 0
 * turns autocast off inside the scope; cache_enabled as torch's. Pop restores
 * what push saw and, when the outermost scope ends, empties the cast cache.
 * Errors: CT_ERR_INVALID_ARGUMENT (device type, dtype; pop on an empty
 * stack). */
CT_API ct_status ct_autocast_push(int32_t device_type, int32_t dtype, int32_t enabled,
                                  int32_t cache_enabled);
CT_API ct_status ct_autocast_pop(void);
/* torch.is_autocast_enabled(device) and torch.get_autocast_dtype(device) for
 * this thread. */
CT_API ct_status ct_autocast_is_enabled(int32_t *out, int32_t device_type);
CT_API ct_status ct_autocast_dtype(int32_t *out, int32_t device_type);

/* Loss scaling for float16 training (torch.amp.GradScaler): scale the loss,
 * unscale the gradients an optimizer holds, skip its step when they hold an
 * inf or NaN, and grow the scale after growth_interval good steps or back it
 * off after a bad one. torch's defaults: init_scale 65536, growth_factor 2,
 * backoff_factor 0.5, growth_interval 2000. device_type: where the scale
 * lives (CT_DEVICE_CPU or CT_DEVICE_CUDA). A disabled scaler (enabled 0)
 * passes everything through: scale returns the tensor, step steps.
 * Errors: CT_ERR_INVALID_ARGUMENT (growth_factor <= 1, backoff_factor not in
 * (0, 1), growth_interval <= 0, init_scale not > 0). Threads: calls lock the
 * scaler. Free with ct_grad_scaler_free (NULL ok). */
CT_API ct_status ct_grad_scaler_new(ct_grad_scaler **out, int32_t device_type, double init_scale,
                                    double growth_factor, double backoff_factor,
                                    int64_t growth_interval, int32_t enabled);
CT_API void ct_grad_scaler_free(ct_grad_scaler *s);
/* *out: a NEW tensor, t (borrowed) times the current scale (differentiable). */
CT_API ct_status ct_grad_scaler_scale(ct_tensor **out, ct_grad_scaler *s, const ct_tensor *t);
/* Divides the gradients of opt's parameters by the scale in place and records
 * whether any was not finite (torch's unscale_, e.g. before clipping).
 * Errors: CT_ERR_INVALID_ARGUMENT (already unscaled or stepped since the last
 * update; float16 gradients, as torch). */
CT_API ct_status ct_grad_scaler_unscale(ct_grad_scaler *s, ct_optimizer *opt);
/* Unscales (if not done yet) and steps opt unless an inf or NaN was found;
 * *stepped (may be NULL) says which. Errors: CT_ERR_INVALID_ARGUMENT (stepped
 * already since the last update), the step's own. */
CT_API CT_MAY_BLOCK ct_status ct_grad_scaler_step(int32_t *stepped, ct_grad_scaler *s,
                                                  ct_optimizer *opt);
/* Updates the scale from the steps since the last update and forgets them.
 * Errors: CT_ERR_INVALID_ARGUMENT (no step or unscale since the last update). */
CT_API ct_status ct_grad_scaler_update(ct_grad_scaler *s);
/* The current scale (init_scale before the first scale call); the same
 * number torch's get_scale() gives. */
CT_API ct_status ct_grad_scaler_current_scale(double *out, const ct_grad_scaler *s);
/* torch's GradScaler.state_dict(): a NEW Dict[str, Any] value {"scale",
 * "growth_factor", "backoff_factor", "growth_interval", "_growth_tracker"}
 * (empty when disabled); load takes one from either (borrowed). Errors
 * (load): CT_ERR_INVALID_ARGUMENT (missing key, wrong type, refused value). */
CT_API ct_status ct_grad_scaler_state_dict(ct_value **out, const ct_grad_scaler *s);
CT_API ct_status ct_grad_scaler_load_state_dict(ct_grad_scaler *s, const ct_value *state_dict);

/* ===================================================================== */
/* CUDA (every function exists in every build; without CUDA they return    */
/* CT_ERR_NOT_SUPPORTED, and the int-returning queries return 0)           */
/* ===================================================================== */

/* 1 if this build of ctorch has CUDA compiled in, else 0. */
CT_API int32_t ct_cuda_is_compiled(void);
/* 1 if CUDA is compiled in and at least one device is usable, else 0. */
CT_API int32_t ct_cuda_is_available(void);
/* Number of CUDA devices (0 without CUDA). */
CT_API int32_t ct_cuda_device_count(void);
CT_API ct_status ct_cuda_current_device(int32_t *out);
CT_API ct_status ct_cuda_set_device(int32_t device);
/* Waits for all work on a device (device -1: current). */
CT_API CT_MAY_BLOCK ct_status ct_cuda_synchronize(int32_t device);
/* Bytes allocated by / reserved in torch's caching allocator on a device. */
CT_API ct_status ct_cuda_memory_allocated(size_t *out, int32_t device);
CT_API ct_status ct_cuda_memory_reserved(size_t *out, int32_t device);
CT_API CT_MAY_BLOCK ct_status ct_cuda_empty_cache(void);
CT_API ct_status ct_cuda_manual_seed_all(uint64_t seed);
/* torch's current stream on a device (-1: current device), as a raw
 * cudaStream_t (borrowed; owned by torch). Per thread, as in torch. */
CT_API ct_status ct_cuda_current_stream(void **out, int32_t device);
/* Makes an external cudaStream_t torch's current stream on `device` for the
 * calling thread; *previous receives the stream it replaces (previous may be
 * NULL). Restore by calling again with the previous stream. NULL or
 * cudaStreamLegacy (1) select torch's default stream; cudaStreamPerThread (2)
 * is refused (CT_ERR_INVALID_ARGUMENT). The stream must outlive its use by
 * torch. */
CT_API ct_status ct_cuda_set_stream(void **previous, int32_t device, void *stream);
/* Waits for all work queued on `stream` (a cudaStream_t on `device`). */
CT_API CT_MAY_BLOCK ct_status ct_cuda_stream_synchronize(int32_t device, void *stream);
/* Makes `waiting` wait (on the device) for all work queued so far on
 * `producer`: records an event on producer, cudaStreamWaitEvent on waiting.
 * No host synchronisation. */
CT_API ct_status ct_cuda_stream_wait_stream(int32_t device, void *waiting, void *producer);

/* Peak bytes allocated by / reserved in torch's caching allocator on a
 * device since the start or the last ct_cuda_reset_peak_memory_stats
 * (torch.cuda.max_memory_allocated / max_memory_reserved). These and the
 * functions below to ct_cuda_stream_from_pool: out is written only on
 * success (CT_ERR_INVALID_ARGUMENT if NULL), device -1 is the current device
 * (CT_ERR_INDEX if out of range), any thread may call them. */
CT_API ct_status ct_cuda_max_memory_allocated(size_t *out, int32_t device);
CT_API ct_status ct_cuda_max_memory_reserved(size_t *out, int32_t device);
CT_API ct_status ct_cuda_reset_peak_memory_stats(int32_t device);
/* The caching allocator's statistics as a NEW Dict[str, int] value, with
 * torch.cuda.memory_stats()'s keys for what every LibTorch version counts:
 * "<stat>.<pool>.<current|peak|allocated|freed>" for stat in allocation,
 * segment, active, inactive_split, allocated_bytes, reserved_bytes,
 * active_bytes, inactive_split_bytes and pool in all, small_pool,
 * large_pool; and "num_alloc_retries", "num_ooms". */
CT_API ct_status ct_cuda_memory_stats(ct_value **out, int32_t device);
/* Caps what the caching allocator may reserve on a device at `fraction` of
 * its memory (torch.cuda.set_per_process_memory_fraction); allocations
 * past it fail (CT_ERR_OUT_OF_MEMORY). fraction: 0 to 1, else
 * CT_ERR_INVALID_ARGUMENT. */
CT_API ct_status ct_cuda_set_memory_fraction(int32_t device, double fraction);
/* A stream from torch's pool (what torch.cuda.Stream() gives): a
 * cudaStream_t torch owns and hands out round-robin (do not destroy it);
 * high_priority 1 takes it from the high-priority pool. */
CT_API ct_status ct_cuda_stream_from_pool(void **out, int32_t device, int32_t high_priority);

/* CUDA events (torch.cuda.Event): mark a point in a stream, wait for it,
 * time between two. ct_cuda_event_new(&e, enable_timing); the CUDA event
 * is created on the first record, on the stream's device. Free with
 * ct_cuda_event_free (NULL is a no-op). One event is used by one thread at a
 * time. Errors: CT_ERR_NOT_SUPPORTED (no CUDA device), CT_ERR_INVALID_ARGUMENT
 * (NULL; elapsed time of an event never recorded or created without
 * timing), CT_ERR_TORCH (CUDA's own errors, e.g. the end event not done). */
CT_API ct_status ct_cuda_event_new(ct_cuda_event **out, int32_t enable_timing);
CT_API void ct_cuda_event_free(ct_cuda_event *e);
/* Records the event on `stream` (a cudaStream_t; NULL: torch's current
 * stream on the current device). */
CT_API ct_status ct_cuda_event_record(ct_cuda_event *e, void *stream);
/* Blocks until the work before the record has finished (at once if never
 * recorded). */
CT_API CT_MAY_BLOCK ct_status ct_cuda_event_synchronize(ct_cuda_event *e);
/* *done: 1 if the work before the record has finished (or nothing was
 * recorded), else 0. Does not block. */
CT_API ct_status ct_cuda_event_query(int32_t *done, ct_cuda_event *e);
/* Milliseconds from `start` to `end` (both recorded, with timing; end
 * finished: synchronize it first). */
CT_API ct_status ct_cuda_event_elapsed_ms(double *out, ct_cuda_event *start, ct_cuda_event *end);

/* CUDA graphs (torch.cuda.CUDAGraph): capture the CUDA work of a sequence
 * of calls (ops, a module's forward) once, replay it with one launch.
 * Between ct_cuda_graph_capture_begin and _end, the calling thread's work on
 * the device is captured, not run: begin synchronizes the device and makes
 * a side stream from torch's pool current (capture cannot use the default
 * stream), end restores the stream that was current. Tensors made during the
 * capture live in the graph's private memory and keep their addresses: a
 * replay reads the captured inputs at their addresses (copy new values into
 * them) and writes the captured outputs in place. Work that synchronizes
 * with the host (.item(), printing, CPU copies) fails the capture
 * (CT_ERR_TORCH at that call or at end). Free with ct_cuda_graph_free (NULL
 * is a no-op). Errors: CT_ERR_NOT_SUPPORTED (no CUDA device),
 * CT_ERR_INVALID_ARGUMENT (NULL; begin twice, end without begin, replay
 * before a capture ended), CT_ERR_TORCH (CUDA's capture errors). Threads: one
 * graph handle is used by one thread at a time; begin and end on the same
 * thread. */
CT_API ct_status ct_cuda_graph_new(ct_cuda_graph **out);
CT_API void ct_cuda_graph_free(ct_cuda_graph *g);
CT_API ct_status ct_cuda_graph_capture_begin(ct_cuda_graph *g, int32_t device);
CT_API ct_status ct_cuda_graph_capture_end(ct_cuda_graph *g);
/* Replays the captured work on torch's current stream (not waiting for it). */
CT_API CT_MAY_BLOCK ct_status ct_cuda_graph_replay(ct_cuda_graph *g);
/* Drops the captured graph and its memory; the handle can capture again. */
CT_API ct_status ct_cuda_graph_reset(ct_cuda_graph *g);

/* ===================================================================== */
/* AOTInductor packages (.pt2)                                           */
/* ===================================================================== */

/* A model exported with torch.export and compiled ahead of time with
 * torch._inductor.aoti_compile_and_package: tensors in, tensors out, no
 * TorchScript and no Python. Needs LibTorch >= 2.6 (AOTIModelPackageLoader);
 * with an older LibTorch every ct_package_* function returns
 * CT_ERR_NOT_SUPPORTED, naming the version needed (after its argument
 * checks: a NULL argument is CT_ERR_INVALID_ARGUMENT on every LibTorch).
 *
 * Loads the package at `path`; model_name selects a model inside it (NULL:
 * "model", what aoti_compile_and_package writes). LibTorch unpacks it into a
 * temporary directory and dlopens the compiled code. Errors:
 * CT_ERR_NOT_FOUND (no such file), CT_ERR_IO (not a zip archive, or not an
 * AOTInductor package / no such model in it: the message says which),
 * CT_ERR_NOT_SUPPORTED (a package compiled for a device this LibTorch cannot
 * run, e.g. CUDA on a CPU-only build; or LibTorch < 2.6). */
CT_API CT_MAY_BLOCK ct_status ct_package_load(ct_package **out, const char *path,
                                              const char *model_name);
/* ct_package_load with the loader's options. num_runners (1 to 1024): model
 * instances, so that up to that many threads run the package at once (each
 * ct_package_run takes a free instance; more callers wait for one).
 * device_index: the CUDA device a CUDA package loads on (-1: the current
 * device; CPU packages take -1). LibTorch 2.6's loader has neither option:
 * there num_runners other than 1 or device_index other than -1 are
 * CT_ERR_NOT_SUPPORTED (LibTorch 2.11 and 2.15 have both). Errors as
 * ct_package_load, and CT_ERR_INVALID_ARGUMENT (num_runners out of range,
 * device_index below -1). Ownership and threads as ct_package_load. */
CT_API CT_MAY_BLOCK ct_status ct_package_load_ext(ct_package **out, const char *path,
                                                  const char *model_name, size_t num_runners,
                                                  int32_t device_index);
/* How many runners the package was loaded with (1 for ct_package_load). */
CT_API CT_MAY_BLOCK ct_status ct_package_num_runners(size_t *out, const ct_package *p);
/* Same from memory (data borrowed, not kept): LibTorch loads packages only
 * from files, so the bytes are written to a private temporary file first,
 * removed again before this returns. */
CT_API CT_MAY_BLOCK ct_status ct_package_load_buffer(ct_package **out, const void *data,
                                                     size_t size, const char *model_name);
/* Frees the package (and LibTorch's unpacked files). Accepts NULL. */
CT_API CT_MAY_BLOCK void ct_package_free(ct_package *p);
/* Runs the model: n_inputs borrowed tensors (flattened in the exported
 * order; inputs may be NULL if n_inputs == 0) -> up to n_outputs new tensors
 * in outputs[0..]; *n_returned (may be NULL) receives the count. The inputs
 * must have the dtypes, devices and (static) sizes the model was exported
 * with; AOTInductor checks only some of this. Errors: CT_ERR_INVALID_ARGUMENT
 * (wrong number of inputs, message gives the count expected; more results
 * than n_outputs, message gives the count; NULL input), CT_ERR_TORCH (raised
 * by the model). Thread-safe: as many calls run at once as the package has
 * runners (ct_package_load_ext; one for ct_package_load), the others wait
 * inside LibTorch. A CUDA package runs on torch's current stream. */
CT_API CT_MAY_BLOCK ct_status ct_package_run(ct_tensor **outputs, size_t n_outputs,
                                             size_t *n_returned, ct_package *p,
                                             const ct_tensor *const *inputs, size_t n_inputs);
/* ct_package_run on a caller's CUDA stream (a cudaStream_t, borrowed; NULL:
 * torch's current stream): the model's kernels are queued there and the
 * call returns without waiting for them. Errors as ct_package_run, and
 * CT_ERR_INVALID_ARGUMENT (a stream for a CPU package), CT_ERR_NOT_SUPPORTED
 * (a LibTorch whose loader takes no stream). */
CT_API CT_MAY_BLOCK ct_status ct_package_run_on_stream(ct_tensor **outputs, size_t n_outputs,
                                                       size_t *n_returned, ct_package *p,
                                                       const ct_tensor *const *inputs,
                                                       size_t n_inputs, void *stream);
/* The package's metadata as a Dict[str, str] value (AOTI_DEVICE_KEY and
 * what the exporter stored). */
CT_API CT_MAY_BLOCK ct_status ct_package_metadata(ct_value **out, const ct_package *p);
/* The call spec as a List[str] value: [in_spec, out_spec], torch.export's
 * serialized pytree specs (JSON). */
CT_API CT_MAY_BLOCK ct_status ct_package_call_spec(ct_value **out, const ct_package *p);
/* Names of the constants (weights and buffers) as a List[str] value, with
 * the module's dotted names ("fc1.weight"), sorted. */
CT_API CT_MAY_BLOCK ct_status ct_package_constant_names(ct_value **out, const ct_package *p);
/* Replaces constants without recompiling: names[i] gets tensors[i] (n pairs;
 * a subset is fine). The handles may be freed afterwards; whether LibTorch
 * copies the tensors or uses them in place depends on its version, so do not
 * write to them while the package is in use. Each tensor must match
 * the constant's dtype and sizes and the package's device. Errors:
 * CT_ERR_NOT_FOUND (unknown name), CT_ERR_INVALID_ARGUMENT (NULL, duplicate
 * name, wrong device), CT_ERR_TYPE (wrong dtype, where LibTorch tells the
 * constants' dtypes), CT_ERR_NOT_SUPPORTED (LibTorch 2.6 only: its AOTInductor
 * runtime cannot replace some constants and keep the others, so the first
 * update must give every constant; later ones may give a subset, which is
 * copied in place, except in packages with folded constants). Not thread-safe
 * against concurrent ct_package_run. */
CT_API CT_MAY_BLOCK ct_status ct_package_update_constants(ct_package *p, const char *const *names,
                                                          const ct_tensor *const *tensors,
                                                          size_t n);
/* The device the package runs on: CT_DEVICE_CPU / CT_DEVICE_CUDA and an
 * index (-1: the current device, and always for the CPU). */
CT_API CT_MAY_BLOCK ct_status ct_package_device(int32_t *device_type, int32_t *device_index,
                                                const ct_package *p);

/* ===================================================================== */
/* Distributed: stores, process groups, collectives, data parallel       */
/* ===================================================================== */

/* torch.distributed's engine (LibTorch's c10d) for ranks written in any
 * language. A ctorch rank speaks c10d's own protocol, so ranks in C, Julia,
 * Python through ctorch and PyTorch's own Python (torch.distributed with the
 * same LibTorch version) form one group: ct_process_group_new does what
 * torch.distributed.init_process_group(backend, store=..., rank=...,
 * world_size=...) does, and ct_process_group_new_from_env what it does with
 * init_method "env://" (torchrun).
 *
 * Backends: "gloo" (CPU tensors; Debian's libtorch-dev with libgloo-dev,
 * and PyPI's torch wheels, whose Gloo ctorch reaches through src/shims/gloo)
 * and "nccl" (CUDA tensors; CUDA builds against a torch wheel).
 * ct_distributed_has_backend says which this build has;
 * ct_distributed_is_compiled() whether it has c10d at all; where it does
 * not, every function below returns CT_ERR_NOT_SUPPORTED.
 *
 * Timeouts: every wait (rendezvous, collectives, ct_work_wait) ends by its
 * timeout. A peer that dies or never arrives gives the other ranks an error
 * (CT_ERR_TIMEOUT when the wait ran out, CT_ERR_IO when a connection broke)
 * whose message names this rank, the operation and, where ctorch can tell,
 * the ranks that exited, stopped responding, or are alive but have not
 * called that collective (their program blocked or busy elsewhere); never a
 * hang past the timeout.
 *
 * Threads: a store may be used from any thread. Collectives on one process
 * group must be issued in the same order on every rank (as in torch); issue
 * them from one thread at a time per group. Work handles may be waited on
 * from any thread. Each group has a thread of ctorch's own besides Gloo's:
 * it bumps this rank's heartbeat in the store (ctorch/beat/<rank>) twice a
 * second and publishes how many collectives this rank has called on the
 * group (ctorch/calls/<rank>; send and recv are not counted), so that after
 * a timeout the ranks that stopped responding or lag behind can be named; it
 * ends when the group is freed or the process exits. A group made
 * before fork() cannot be used in the child (CT_ERR_INVALID_ARGUMENT).
 *
 * Signals: a peer that dies breaks the sockets to it, and writing to one
 * raises SIGPIPE, whose default action ends the process. As Python does at
 * start-up (so PyTorch's ranks never see it), the first TCP store or process
 * group sets SIGPIPE to ignored when its disposition is still the default;
 * the broken connection then surfaces as CT_ERR_IO. A handler or SIG_IGN the
 * program installed itself is kept. */

/* 1 if this build of ctorch has LibTorch's distributed engine, else 0. */
CT_API int32_t ct_distributed_is_compiled(void);
/* 1 if backend ("gloo" or "nccl") is compiled into this build, else 0 (also
 * for NULL or an unknown name); as torch.distributed.is_gloo_available and
 * is_nccl_available. "nccl" also needs a CUDA device when a group is made.
 * Any thread. */
CT_API int32_t ct_distributed_has_backend(const char *backend);

/* A TCPStore: is_master 1 runs the store server on port (0: a free port,
 * read it back with ct_store_port) and connects to it; 0 connects to
 * host:port, retrying until timeout_s. world_size: the number of ranks that
 * will connect, counting the master (-1: unknown); as torch's TCPStore, each
 * store counts itself in and the master waits until all world_size have, at
 * most timeout_s (then LibTorch 1.13 goes on and newer ones fail with
 * CT_ERR_IO). timeout_s > 0 also becomes the store's default wait. *out: free with ct_store_free
 * (the master's server stops when its handle is freed). Errors: CT_ERR_INVALID_ARGUMENT (NULL host,
 * port out of 0..65535, timeout <= 0), CT_ERR_IO (port in use, host unknown, nothing listening
 * until the timeout: the message says which). Any thread. */
CT_API CT_MAY_BLOCK ct_status ct_store_new_tcp(ct_store **out, const char *host, int32_t port,
                                               int32_t is_master, int32_t world_size,
                                               double timeout_s);
/* A FileStore on a shared file (created if missing) for world_size ranks;
 * the file is removed when the last rank frees its handle. timeout_s: how
 * long a ct_store_get waits for a missing key (LibTorch's default is 300 s).
 * Errors: CT_ERR_INVALID_ARGUMENT (NULL, world_size < 1, timeout <= 0),
 * CT_ERR_IO. */
CT_API CT_MAY_BLOCK ct_status ct_store_new_file(ct_store **out, const char *path,
                                                int32_t world_size, double timeout_s);
/* A view of store whose keys all start with prefix + "/" (c10d's
 * PrefixStore). store stays owned by the caller; the view keeps it alive. */
CT_API ct_status ct_store_new_prefix(ct_store **out, ct_store *store, const char *prefix);
/* The port a TCP store listens on or connects to. Errors:
 * CT_ERR_INVALID_ARGUMENT (NULL), CT_ERR_NOT_SUPPORTED (not a TCP store). */
CT_API ct_status ct_store_port(int32_t *out, const ct_store *store);
/* Sets key to `size` bytes (data may be NULL when size is 0). */
CT_API CT_MAY_BLOCK ct_status ct_store_set(ct_store *store, const char *key, const void *data,
                                           size_t size);
/* Waits (up to the store's timeout) for key and returns its value: *data a
 * NEW buffer of *size bytes (free with ct_free; not NULL, even for an empty
 * value). data and size: not NULL; both untouched on failure. Errors:
 * CT_ERR_INVALID_ARGUMENT (NULL), CT_ERR_TIMEOUT (the key never came; the
 * message names it), CT_ERR_IO. */
CT_API CT_MAY_BLOCK ct_status ct_store_get(void **data, size_t *size, ct_store *store,
                                           const char *key);
/* Adds delta to the integer under key (created as 0) and writes the new
 * value into *out (may be NULL). Errors: CT_ERR_INVALID_ARGUMENT (NULL, or
 * the key holds a value that is not a decimal integer: refused before
 * anything is sent), CT_ERR_IO, CT_ERR_TIMEOUT. */
CT_API CT_MAY_BLOCK ct_status ct_store_add(int64_t *out, ct_store *store, const char *key,
                                           int64_t delta);
/* Frees the handle; NULL ok. Process groups made from it keep what they
 * need. */
CT_API void ct_store_free(ct_store *store);

/* The default process group for this rank: what
 * torch.distributed.init_process_group(backend, store=store, rank=rank,
 * world_size=world_size, timeout=timeout_s) makes, including its start-up
 * barrier: it returns once all world_size ranks have joined, or fails after
 * timeout_s naming how many arrived. backend: "gloo" or "nccl" (NULL:
 * "gloo"). The group keeps the store alive. *out: free with
 * ct_process_group_free. Errors: CT_ERR_INVALID_ARGUMENT (NULL, rank outside
 * 0..world_size-1, timeout <= 0, unknown backend, a second default group over
 * the same store), CT_ERR_NOT_SUPPORTED (a
 * backend this build lacks, "nccl" without a CUDA device), CT_ERR_TIMEOUT,
 * CT_ERR_IO. Collective: every rank calls it. */
CT_API CT_MAY_BLOCK ct_status ct_process_group_new(ct_process_group **out, ct_store *store,
                                                   const char *backend, int32_t rank,
                                                   int32_t world_size, double timeout_s);
/* The same from torchrun's environment (init_method "env://"): MASTER_ADDR,
 * MASTER_PORT, RANK and WORLD_SIZE must be set; under torchrun's agent store
 * (TORCHELASTIC_USE_AGENT_STORE) it joins that store as torch does, else
 * rank 0 runs the store server. Errors: as ct_process_group_new, and
 * CT_ERR_INVALID_ARGUMENT naming a missing or malformed variable. */
CT_API CT_MAY_BLOCK ct_status ct_process_group_new_from_env(ct_process_group **out,
                                                            const char *backend, double timeout_s);
/* The same from an init_method URL, as torch.distributed.init_process_group
 * (backend, init_method=url, rank=rank, world_size=world_size) makes it,
 * with torch's store layout (every key under "default_pg/"), so PyTorch ranks
 * and ctorch ranks given the same URL meet: "tcp://host:port" (rank 0 runs
 * the store server), "file:///path" (a FileStore on a shared file) and
 * "env://" (MASTER_ADDR and MASTER_PORT; RANK and WORLD_SIZE when rank or
 * world_size is -1). Query parameters "?rank=R&world_size=N" are read as
 * torch reads them (they must agree with rank and world_size when both are
 * given; -1 takes them from the URL). A rendezvous that times out says what
 * to check (the same init_method on every rank, the port, GLOO_SOCKET_IFNAME).
 * Errors: as ct_process_group_new, and CT_ERR_INVALID_ARGUMENT naming what in
 * the URL is malformed or missing. Collective: every rank calls it. */
CT_API CT_MAY_BLOCK ct_status ct_process_group_new_from_url(ct_process_group **out,
                                                            const char *init_method,
                                                            const char *backend, int32_t rank,
                                                            int32_t world_size, double timeout_s);
/* A subgroup of the ranks given (n ranks of pg, each once, in any order;
 * the subgroup's rank i is the i-th smallest): torch.distributed.new_group.
 * Collective over ALL ranks of the default group pg came from, members or
 * not; on a rank that is not a member, *out is NULL and the call returns
 * CT_OK. timeout_s <= 0: pg's timeout. Errors: as ct_process_group_new. */
CT_API CT_MAY_BLOCK ct_status ct_process_group_new_subgroup(ct_process_group **out,
                                                            ct_process_group *pg,
                                                            const int32_t *ranks, size_t n,
                                                            double timeout_s);
/* This rank in the group, and the group's size; -1 for NULL. */
CT_API int32_t ct_process_group_rank(const ct_process_group *pg);
CT_API int32_t ct_process_group_size(const ct_process_group *pg);
/* Frees the handle; NULL ok. Work still in flight keeps what it needs and
 * finishes or fails; free the group on every rank once collectives are
 * done. Freeing the last handle waits for this rank's work in flight (at
 * most the group's timeout), whose threads may run tensor deleters: a
 * binding must not hold a lock here that its deleters take (Python: the
 * GIL). In a fork() child of the process that made the group, the handle is
 * released without destroying the group (its threads are not in the child,
 * and joining them would never return): the child leaks that memory. The
 * same holds for ct_store_free, ct_work_free and ct_ddp_free. */
CT_API CT_MAY_BLOCK void ct_process_group_free(ct_process_group *pg);

/* Collectives. work, their first parameter, is optional: each is blocking
 * when work is NULL: it returns when this
 * rank's part is done and the result is in the tensors. With work not NULL
 * it starts the operation and returns at once with *work (free with
 * ct_work_free): the tensors must not be read or written until ct_work_wait
 * returns CT_OK. Tensors must be dense and contiguous, on the backend's
 * device, with the same dtype and sizes on every rank; they are used in
 * place (no copies) and kept alive by the work. Errors:
 * CT_ERR_INVALID_ARGUMENT (NULL, wrong count, non-contiguous, rank out of
 * range, mismatched dtypes or sizes among this rank's tensors),
 * CT_ERR_NOT_SUPPORTED (a dtype or an op the backend lacks, such as bool,
 * complex or bfloat16 tensors on Gloo: refused before anything is sent; the
 * message says which),
 * CT_ERR_INVALID_ARGUMENT on every rank when the ranks passed different
 * kinds of collective, dtypes, numbers of elements, reduce ops or roots
 * (Gloo groups whose ranks are all ctorch's compare them before sending; the
 * message names what each rank passed; CTORCH_DIST_CHECK=0, set alike on
 * every rank, turns it off), CT_ERR_TIMEOUT, CT_ERR_IO, CT_ERR_TORCH (a
 * peer's mismatched tensor where the backend detects it: NCCL, or a group
 * with PyTorch ranks). On such a Gloo group the check and then the
 * collective run on a thread of the group's own, in call order, while the
 * caller goes on (an asynchronous call returns at once and overlaps the
 * caller's compute). CT_ERR_TIMEOUT comes at the group's timeout, counted
 * from the wait (or from the blocking call), with the ranks that stopped or
 * lag already named: that diagnosis watches the peers' heartbeats during
 * the last 1.7 s before the deadline (with a timeout of 1.7 s or less, and
 * for send and recv, it follows the timeout, by about 1.5 s). */
#define CT_REDUCE_SUM 0
#define CT_REDUCE_AVG 1 /* sum / size (gloo: floating dtypes; ctorch divides) */
#define CT_REDUCE_PRODUCT 2
#define CT_REDUCE_MIN 3
#define CT_REDUCE_MAX 4
#define CT_REDUCE_BAND 5 /* integer dtypes */
#define CT_REDUCE_BOR 6
#define CT_REDUCE_BXOR 7
/* tensor becomes the reduction of every rank's tensor. */
CT_API CT_MAY_BLOCK ct_status ct_process_group_all_reduce(ct_work **work, ct_process_group *pg,
                                                          ct_tensor *tensor, int32_t op);
/* tensor becomes root's tensor on every rank. */
CT_API CT_MAY_BLOCK ct_status ct_process_group_broadcast(ct_work **work, ct_process_group *pg,
                                                         ct_tensor *tensor, int32_t root);
/* outputs[r] becomes rank r's input (size outputs, each like input). */
CT_API CT_MAY_BLOCK ct_status ct_process_group_all_gather(ct_work **work, ct_process_group *pg,
                                                          ct_tensor *const *outputs,
                                                          const ct_tensor *input);
/* output becomes the reduction over ranks of their inputs[this rank] (size
 * inputs, each like output). Gloo has no reduce_scatter: ctorch sends
 * inputs[r] to rank r (all_to_all) and reduces what arrives. */
CT_API CT_MAY_BLOCK ct_status ct_process_group_reduce_scatter(ct_work **work, ct_process_group *pg,
                                                              ct_tensor *output,
                                                              const ct_tensor *const *inputs,
                                                              int32_t op);
/* outputs[r] becomes rank r's inputs[this rank] (size of each list). */
CT_API CT_MAY_BLOCK ct_status ct_process_group_all_to_all(ct_work **work, ct_process_group *pg,
                                                          ct_tensor *const *outputs,
                                                          const ct_tensor *const *inputs);
/* Returns (or completes) once every rank has reached it. */
CT_API CT_MAY_BLOCK ct_status ct_process_group_barrier(ct_work **work, ct_process_group *pg);
/* Point to point: tensor to rank dst, or from rank src (src -1: from any
 * rank; ct_work_source_rank tells which). tag: matches a send to a recv. On
 * a Gloo group whose ranks are all ctorch's (as for the collectives'
 * check), a send first sends its dtype and number of elements to dst, the
 * recv answers, and the data goes only when they agree: otherwise both
 * ranks get CT_ERR_INVALID_ARGUMENT naming both sides (Gloo would end the
 * receiving process), and nothing is sent. So a send completes once its
 * recv has been posted. That exchange uses the tags tag ^ 2^30 and
 * tag ^ 2^29 on the same pair of ranks (do not use those for other
 * messages at the same time); CTORCH_DIST_CHECK=0 turns it off. */
CT_API CT_MAY_BLOCK ct_status ct_process_group_send(ct_work **work, ct_process_group *pg,
                                                    const ct_tensor *tensor, int32_t dst,
                                                    int32_t tag);
CT_API CT_MAY_BLOCK ct_status ct_process_group_recv(ct_work **work, ct_process_group *pg,
                                                    ct_tensor *tensor, int32_t src, int32_t tag);

/* Waits for work: CT_OK once it succeeded (results are then in its
 * tensors), its error otherwise (as the blocking form would give; again on
 * every later wait). timeout_s <= 0: the group's timeout. A wait that runs
 * out returns CT_ERR_TIMEOUT and the work goes on. Any thread. */
CT_API CT_MAY_BLOCK ct_status ct_work_wait(ct_work *work, double timeout_s);
/* *out = 1 once the work has finished, successfully or not (ct_work_wait
 * then returns at once), else 0. Never blocks. */
CT_API ct_status ct_work_is_completed(int32_t *out, ct_work *work);
/* The rank a completed recv from any source came from. Errors:
 * CT_ERR_INVALID_ARGUMENT (not such a recv, or not completed). */
CT_API ct_status ct_work_source_rank(int32_t *out, ct_work *work);
/* Frees the handle; NULL ok. Work still running goes on (its tensors stay
 * alive until it ends); its error, if any, is dropped. */
CT_API CT_MAY_BLOCK void ct_work_free(ct_work *work);

/* Data-parallel training (torch.nn.parallel.DistributedDataParallel's
 * engine, c10d's Reducer): gradients of the parameters are bucketed and
 * all-reduced (averaged over the group) WHILE backward runs, so that after
 * backward returns every rank has the same averaged .grad.
 *
 * ct_ddp_new checks that every rank gives parameters of the same count,
 * dtypes and sizes (else CT_ERR_INVALID_ARGUMENT on every rank, naming the
 * first difference), copies rank 0's values into every rank's parameters (in
 * place) and buffers (may be NULL when n_buffers is 0), and builds the
 * buckets: bucket_mb megabytes each (<= 0: torch's 25), the first one 1 MB,
 * as DDP does. params: tensors that require grad, used in place. Collective
 * over pg. Every step, call ct_ddp_prepare_backward with the forward's
 * outputs before backward (DDP's forward does this), then backward, then the
 * optimizer step. flags: CT_DDP_FIND_UNUSED (parameters that get no gradient
 * in a step are allowed, as find_unused_parameters=True),
 * CT_DDP_GRAD_AS_BUCKET_VIEW. *out: free with ct_ddp_free (not during a
 * backward). One thread at a time per handle. */
#define CT_DDP_FIND_UNUSED 1
#define CT_DDP_GRAD_AS_BUCKET_VIEW 2
CT_API CT_MAY_BLOCK ct_status ct_ddp_new(ct_ddp **out, ct_process_group *pg,
                                         const ct_tensor *const *params, size_t n_params,
                                         const ct_tensor *const *buffers, size_t n_buffers,
                                         double bucket_mb, int32_t flags);
/* The same over a module's parameters (those that require grad) and
 * buffers, in the module's order. */
CT_API CT_MAY_BLOCK ct_status ct_ddp_new_module(ct_ddp **out, ct_process_group *pg,
                                                ct_module *module, double bucket_mb, int32_t flags);
/* Before each backward: outputs are the forward's outputs (tensors that
 * backward starts from, or from which the loss is computed; may be NULL when
 * n is 0 unless CT_DDP_FIND_UNUSED). Errors: CT_ERR_TORCH (the previous
 * step's reduction did not finish: a backward that did not reach every
 * parameter without CT_DDP_FIND_UNUSED; the message names the parameters). */
CT_API ct_status ct_ddp_prepare_backward(ct_ddp *ddp, const ct_tensor *const *outputs, size_t n);
CT_API CT_MAY_BLOCK void ct_ddp_free(ct_ddp *ddp);

#ifdef __cplusplus
}
#endif
#endif /* CTORCH_H */
