/* `ctorch info`: versions, library, CUDA and threads. */
#include "cli.h"

#include <dlfcn.h>
#include <getopt.h>
#include <string.h>

int cmd_info(int argc, char **argv) {
  static const struct option longopts[] = {
      {"json", no_argument, NULL, 'j'}, {"help", no_argument, NULL, 'h'}, {NULL, 0, NULL, 0}};
  Dl_info dl;
  const char *where = "?";
  int json = 0, c;
  int32_t ndev = ct_cuda_device_count();
  optind = 0;
  while ((c = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
    if (c == 'h') {
      printf(
          "Usage: %s info [--json]\n\n"
          "Prints the ctorch and LibTorch versions, the ABI version (library and header),\n"
          "whether CUDA is compiled in and available, the CUDA devices, the intra-op and\n"
          "inter-op thread counts, and the file the library was loaded from.\n",
          prog);
      return 0;
    }
    if (c == 'j')
      json = 1;
    else
      return option_error("info", c, argv);
  }
  if (optind < argc) return usage_error("info", "unknown argument '%s'", argv[optind]);
  memset(&dl, 0, sizeof dl);
  if (dladdr((void *)(uintptr_t)&ct_version, &dl) && dl.dli_fname) where = dl.dli_fname;
  if (ndev < 0) ndev = 0;
  if (json) {
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "ctorch", ct_version());
    cJSON_AddNumberToObject(o, "abi", ct_abi_version());
    cJSON_AddNumberToObject(o, "header_abi", CTORCH_ABI_VERSION);
    cJSON_AddStringToObject(o, "libtorch", ct_torch_version());
    cJSON_AddStringToObject(o, "library", where);
    cJSON_AddBoolToObject(o, "cuda_compiled", ct_cuda_is_compiled());
    cJSON_AddBoolToObject(o, "cuda_available", ct_cuda_is_available());
    cJSON_AddNumberToObject(o, "cuda_devices", ndev);
    cJSON_AddNumberToObject(o, "threads", ct_num_threads());
    cJSON_AddNumberToObject(o, "interop_threads", ct_num_interop_threads());
    return json_print(o);
  }
  printf("ctorch      %s (ABI %d; this program was built with %s, ABI %d)\n", ct_version(),
         (int)ct_abi_version(), CTORCH_VERSION_STRING, CTORCH_ABI_VERSION);
  printf("LibTorch    %s\n", ct_torch_version());
  printf("library     %s\n", where);
  printf("CUDA        %s, %s, %d device(s)\n",
         ct_cuda_is_compiled() ? "compiled in" : "not compiled in",
         ct_cuda_is_available() ? "available" : "not available", (int)ndev);
  printf("threads     %d intra-op, %d inter-op\n", (int)ct_num_threads(),
         (int)ct_num_interop_threads());
  return 0;
}
