/* Messages of the `ctorch` command: errors and usage errors to stderr. */
#include "cli.h"

#include <ctype.h>
#include <errno.h>
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
