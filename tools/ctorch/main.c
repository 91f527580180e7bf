/* The `ctorch` command: look at, run, time and check model files without writing code.
 * Subcommands: info, inspect, run, bench, verify, help (see usage()). Files are TorchScript
 * archives (torch.jit.save), torch.save files (ct_pickle_*) or AOTInductor packages
 * (ct_package_*, LibTorch >= 2.6; older builds report CT_ERR_NOT_SUPPORTED). Exit codes: 0 success,
 * 1 an error (the library's message is printed), 2 bad usage. */
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
          "  inspect FILE              what a model file or torch.save checkpoint holds\n"
          "  run MODEL.pt INPUTS...    run a method once and show or save its outputs\n"
          "  bench MODEL.pt INPUTS...  latency percentiles and throughput\n"
          "  verify FILE...            check untrusted model files in a separate process\n"
          "  help COMMAND              describe a command (as COMMAND --help)\n\n"
          "Files: TorchScript archives (torch.jit.save), torch.save files (a state_dict, a\n"
          "checkpoint: inspect and verify) and AOTInductor packages (*.pt2, LibTorch >= 2.6).\n"
          "Options: --name=VALUE or --name VALUE; -- ends the options. '%s help COMMAND'\n"
          "describes each command. Exit status: 0 success, 1 error (the library's message\n"
          "is printed), 2 bad usage.\n",
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

static const struct {
  const char *name;
  int (*fn)(int argc, char **argv);
} commands[] = {{"info", cmd_info},
                {"inspect", cmd_inspect},
                {"run", cmd_run},
                {"bench", cmd_bench},
                {"verify", cmd_verify}};

/* Each command gets argv from its own name on (argv[0] for getopt_long). */
static int dispatch(int argc, char **argv) {
  const char *cmd;
  size_t i;
  if (argc < 2) {
    usage(stderr);
    return EXIT_USAGE;
  }
  cmd = argv[1];
  if (!strcmp(cmd, "help") && argc > 2) { /* ctorch help CMD: CMD --help */
    static char help_flag[] = "--help";
    char *help_argv[3];
    help_argv[0] = argv[2];
    help_argv[1] = help_flag;
    help_argv[2] = NULL;
    for (i = 0; i < sizeof commands / sizeof commands[0]; i++)
      if (!strcmp(argv[2], commands[i].name)) return commands[i].fn(2, help_argv);
    fprintf(stderr, "%s: unknown command '%s'\n", prog, argv[2]);
    usage(stderr);
    return EXIT_USAGE;
  }
  if (is_help(cmd) || !strcmp(cmd, "help")) {
    usage(stdout);
    return 0;
  }
  if (!strcmp(cmd, "--version")) {
    printf("ctorch %s (LibTorch %s)\n", ct_version(), ct_torch_version());
    return 0;
  }
  for (i = 0; i < sizeof commands / sizeof commands[0]; i++)
    if (!strcmp(cmd, commands[i].name)) return commands[i].fn(argc - 1, argv + 1);
  fprintf(stderr, "%s: unknown command '%s'\n", prog, cmd);
  usage(stderr);
  return EXIT_USAGE;
}

int main(int argc, char **argv) { return finish(json_error_report(dispatch(argc, argv))); }
