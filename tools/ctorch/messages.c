/* Messages of the `ctorch` command: errors and usage errors (getopt_long's too) to stderr. */
#include "cli.h"

#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

const char *prog = "ctorch";

/* ---- messages ---- */

int fail(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "%s: ", prog);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
  return EXIT_ERROR;
}

/* A failed library call: what we were doing, then the library's own message. */
int fail_ct(ct_status st, const char *what) {
  fprintf(stderr, "%s: %s: %s (status %d)\n", prog, what, ct_last_error(), (int)st);
  return EXIT_ERROR;
}

int usage_error(const char *cmd, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "%s %s: ", prog, cmd);
  vfprintf(stderr, fmt, ap);
  fprintf(stderr, "\nTry '%s %s --help'.\n", prog, cmd);
  va_end(ap);
  return EXIT_USAGE;
}

int is_help(const char *a) { return !strcmp(a, "-h") || !strcmp(a, "--help"); }

int option_error(const char *cmd, int c, char **argv) {
  const char *a = argv[optind - 1];
  char shortopt[3] = {'-', (char)optopt, 0};
  /* a short option (perhaps inside a cluster, -xq): optopt names it */
  if (strncmp(a, "--", 2) && optopt > 0 && optopt < 128) a = shortopt;
  if (c == ':') return usage_error(cmd, "%s needs a value", a);
  if (!strncmp(a, "--", 2) && strchr(a, '=') && optopt) /* --eval=1 */
    return usage_error(cmd, "%.*s takes no value", (int)(strchr(a, '=') - a), a);
  return usage_error(cmd, "unknown option '%s'", a);
}
