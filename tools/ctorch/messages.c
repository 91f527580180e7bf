/* Messages of the `ctorch` command: errors and usage errors (getopt_long's too) to stderr;
 * under --json the first one is also kept for the JSON error object on stdout. */
#include "cli.h"

#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

const char *prog = "ctorch";

/* ---- the JSON error object (json_errors) ---- */

static struct {
  int on, kept;
  const char *file;
  char msg[4096];
  int status; /* the library's status, 0 for the command's own errors */
} jerr;

void json_errors(const char *file) {
  jerr.on = 1;
  jerr.file = file;
}

static void keep(int status, const char *fmt, va_list ap) {
  if (!jerr.on || jerr.kept) return;
  jerr.kept = 1;
  jerr.status = status;
  vsnprintf(jerr.msg, sizeof jerr.msg, fmt, ap);
}

static void keep_f(int status, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  keep(status, fmt, ap);
  va_end(ap);
}

char *json_error_text(const char *msg, int status) {
  cJSON *o = cJSON_CreateObject();
  char *s;
  if (!o) return NULL;
  if (jerr.file)
    cJSON_AddStringToObject(o, "file", jerr.file);
  else
    cJSON_AddNullToObject(o, "file");
  cJSON_AddStringToObject(o, "error", msg);
  if (status > 0) cJSON_AddNumberToObject(o, "status", status);
  s = cJSON_PrintUnformatted(o);
  cJSON_Delete(o);
  return s;
}

int json_error_report(int rc) {
  char *s;
  if (!jerr.on || !rc) return rc;
  s = json_error_text(jerr.kept ? jerr.msg : "failed", jerr.status);
  if (s) puts(s);
  cJSON_free(s);
  return rc;
}

int json_errors_on(void) { return jerr.on; }

/* ---- messages ---- */

int fail(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "%s: ", prog);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
  va_start(ap, fmt);
  keep(0, fmt, ap);
  va_end(ap);
  return EXIT_ERROR;
}

/* A failed library call: what we were doing, then the library's own message. */
int fail_ct(ct_status st, const char *what) {
  fprintf(stderr, "%s: %s: %s (status %d)\n", prog, what, ct_last_error(), (int)st);
  keep_f((int)st, "%s: %s", what, ct_last_error());
  return EXIT_ERROR;
}

int usage_error(const char *cmd, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "%s %s: ", prog, cmd);
  vfprintf(stderr, fmt, ap);
  fprintf(stderr, "\nTry '%s %s --help'.\n", prog, cmd);
  va_end(ap);
  va_start(ap, fmt);
  keep(0, fmt, ap);
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
