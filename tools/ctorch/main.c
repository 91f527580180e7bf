/* The `ctorch` command: look at, run, time and check model files without writing code.
 * Subcommands: info, inspect, run, bench, verify (see usage()). Model files are TorchScript
 * archives (torch.jit.save) or, named *.pt2, AOTInductor packages (ct_package_*, LibTorch >=
 * 2.6; older builds report CT_ERR_NOT_SUPPORTED). Exit codes: 0 success, 1 an error (the
 * library's message is printed), 2 bad usage. */
#include "cli.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

static void usage(FILE *f) {
  fprintf(f,
          "Usage: %s COMMAND [ARGS]...\n\n"
          "Work with model files through libctorch.\n\n"
          "Commands:\n"
          "  info                      versions, CUDA and devices, threads, library location\n"
          "  inspect MODEL.pt          methods, parameters, buffers, submodules, extra files\n"
          "  run MODEL.pt INPUTS...    run a method once and show or save its outputs\n"
          "  bench MODEL.pt INPUTS...  latency percentiles and throughput\n"
          "  verify FILE...            check untrusted model files in a separate process\n\n"
          "MODEL.pt: a TorchScript archive; MODEL.pt2, an AOTInductor package (LibTorch >= 2.6).\n"
          "'%s COMMAND --help' describes each command. Exit status: 0 success, 1 error\n"
          "(the library's message is printed), 2 bad usage.\n",
          prog, prog);
}

/* Output that could not be written (a full disk, a closed pipe, /dev/full)
 * is an error: exit non-zero instead of claiming success. */
static int finish(int rc) {
  if (fflush(stdout) != 0 || ferror(stdout)) {
    fprintf(stderr, "%s: cannot write the output: %s\n", prog, strerror(errno ? errno : EIO));
    return rc ? rc : EXIT_ERROR;
  }
  return rc;
}

static int dispatch(int argc, char **argv) {
  const char *cmd;
  if (argc < 2) {
    usage(stderr);
    return EXIT_USAGE;
  }
  cmd = argv[1];
  if (is_help(cmd) || !strcmp(cmd, "help")) {
    usage(stdout);
    return 0;
  }
  if (!strcmp(cmd, "--version")) {
    printf("ctorch %s (LibTorch %s)\n", ct_version(), ct_torch_version());
    return 0;
  }
  if (!strcmp(cmd, "info")) return cmd_info(argc - 2, argv + 2);
  if (!strcmp(cmd, "inspect")) return cmd_inspect(argc - 2, argv + 2);
  if (!strcmp(cmd, "run")) return cmd_run(argc - 2, argv + 2);
  if (!strcmp(cmd, "bench")) return cmd_bench(argc - 2, argv + 2);
  if (!strcmp(cmd, "verify")) return cmd_verify(argc - 2, argv + 2);
  fprintf(stderr, "%s: unknown command '%s'\n", prog, cmd);
  usage(stderr);
  return EXIT_USAGE;
}

int main(int argc, char **argv) { return finish(dispatch(argc, argv)); }
