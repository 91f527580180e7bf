/* `ctorch info`: versions, library, CUDA and threads. */
#include "cli.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <dlfcn.h>

int cmd_info(int argc, char **argv) {
  Dl_info dl;
  const char *where = "?";
  int json = 0, i;
  int32_t ndev = ct_cuda_device_count();
  for (i = 0; i < argc; i++) {
    if (is_help(argv[i])) {
      printf(
          "Usage: %s info [--json]\n\n"
          "Prints the ctorch and LibTorch versions, the ABI version (library and header),\n"
          "whether CUDA is compiled in and available, the CUDA devices, the intra-op and\n"
          "inter-op thread counts, and the file the library was loaded from.\n",
          prog);
      return 0;
    }
    if (!strcmp(argv[i], "--json"))
      json = 1;
    else
      return usage_error("info", "unknown argument '%s'", argv[i]);
  }
  memset(&dl, 0, sizeof dl);
  if (dladdr((void *)(uintptr_t)&ct_version, &dl) && dl.dli_fname) where = dl.dli_fname;
  if (ndev < 0) ndev = 0;
  if (json) {
    printf("{\"ctorch\": ");
    json_str(stdout, ct_version());
    printf(", \"abi\": %d, \"header_abi\": %d, \"libtorch\": ", (int)ct_abi_version(),
           CTORCH_ABI_VERSION);
    json_str(stdout, ct_torch_version());
    printf(", \"library\": ");
    json_str(stdout, where);
    printf(", \"cuda_compiled\": %s, \"cuda_available\": %s, \"cuda_devices\": %d",
           ct_cuda_is_compiled() ? "true" : "false", ct_cuda_is_available() ? "true" : "false",
           (int)ndev);
    printf(", \"threads\": %d, \"interop_threads\": %d}\n", (int)ct_get_num_threads(),
           (int)ct_get_num_interop_threads());
    return 0;
  }
  printf("ctorch      %s (ABI %d; this program was built with %s, ABI %d)\n", ct_version(),
         (int)ct_abi_version(), CTORCH_VERSION_STRING, CTORCH_ABI_VERSION);
  printf("LibTorch    %s\n", ct_torch_version());
  printf("library     %s\n", where);
  printf("CUDA        %s, %s, %d device(s)\n",
         ct_cuda_is_compiled() ? "compiled in" : "not compiled in",
         ct_cuda_is_available() ? "available" : "not available", (int)ndev);
  printf("threads     %d intra-op, %d inter-op\n", (int)ct_get_num_threads(),
         (int)ct_get_num_interop_threads());
  return 0;
}
