/* `ctorch verify`: a file checked in a child process (ct_module_verify / ct_pickle_verify),
 * its kind read from its contents. */
#include "cli.h"

#include <getopt.h>
#include <stdlib.h>
#include <string.h>

/* The result of one check: status (CT_OK, a library code, or -1: refused here) and the
 * message printed for it. */
typedef struct {
  int kind;
  ct_status st;
  char msg[2048];
} check;

static int refuse(check *c, const char *fmt, const char *path) {
  c->st = -1;
  snprintf(c->msg, sizeof c->msg, fmt, path);
  return fail("%s", c->msg);
}

/* Checks one file; 0 if it loads, else EXIT_ERROR with the library's message printed.
 * forced: KIND_MODULE or KIND_PICKLE (--module, --pickle), or 0: the kind the contents
 * say. One check per file: a file that crashes the check of its kind is never reported
 * as ok by another reader. */
static int verify_one(check *c, const char *path, int forced, int json) {
  int found = file_kind(path), kind = forced ? forced : found;
  c->kind = found == -1 ? -1 : kind; /* a file that cannot be read has no kind */
  c->st = CT_OK;
  c->msg[0] = 0;
  if (kind == KIND_PACKAGE || (!forced && kind == 0 && is_package(path))) {
    c->kind = KIND_PACKAGE;
    return refuse(c,
                  "%s: AOTInductor packages (.pt2) hold compiled native code that loading runs; "
                  "no check can make an untrusted one safe (use --module or --pickle to check "
                  "the file as another kind)",
                  path);
  }
  if (kind == 0)
    return refuse(c,
                  "%s: not a TorchScript archive, a torch.save file or an AOTInductor package "
                  "(use --module or --pickle to check it as one kind)",
                  path);
  if (kind == KIND_NPY)
    return refuse(c,
                  "%s: a NumPy .npy file (one array, no code): nothing to verify; 'ctorch "
                  "inspect' shows it",
                  path);
  if (kind == -1) kind = KIND_MODULE; /* unreadable or missing: the library says why */
  c->st = kind == KIND_MODULE ? ct_module_verify(path) : ct_pickle_verify(path);
  if (c->st != CT_OK) {
    snprintf(c->msg, sizeof c->msg, "%s", ct_last_error());
    return fail_ct(c->st, path);
  }
  if (!json)
    printf("%s: ok: %s\n", path,
           kind == KIND_MODULE ? "TorchScript archive (loaded and inspected in a separate process)"
                               : "torch.save file (loaded in a separate process)");
  return 0;
}

static cJSON *check_json(const char *path, const check *c) {
  cJSON *o = cJSON_CreateObject();
  if (!o) return NULL;
  cJSON_AddStringToObject(o, "file", path);
  cJSON_AddBoolToObject(o, "ok", c->st == CT_OK);
  if (c->kind > 0)
    cJSON_AddStringToObject(o, "kind",
                            c->kind == KIND_MODULE   ? "torchscript"
                            : c->kind == KIND_PICKLE ? "torch.save"
                            : c->kind == KIND_NPY    ? "npy"
                                                     : "aoti_package");
  else
    cJSON_AddNullToObject(o, "kind");
  if (c->st != CT_OK) {
    if (c->st > 0) cJSON_AddNumberToObject(o, "status", c->st);
    cJSON_AddStringToObject(o, "error", c->msg);
  }
  return o;
}

static int help(void) {
  printf(
      "Usage: %s verify [--module | --pickle] [--timeout S] [--json] FILE...\n\n"
      "Checks untrusted model files without risking this process: each FILE is loaded\n"
      "(and a module inspected: methods, attributes, parameters, children, its code\n"
      "printed again) in a short-lived child process (ct_module_verify,\n"
      "ct_pickle_verify). A file that loads is reported as ok; a load error, a crash\n"
      "of the child or a timeout is reported with the library's message. The file is\n"
      "not kept: load it again afterwards.\n\n"
      "By default the kind of each FILE is read from its contents (a zip archive's\n"
      "entry names, a pickle's first byte) and only that kind's check runs:\n"
      "a TorchScript archive (torch.jit.save) or a torch.save file (a state_dict, a\n"
      "checkpoint). AOTInductor packages (.pt2) are refused: loading one runs its\n"
      "compiled code. NumPy .npy files are refused too: no model ('inspect' shows them).\n\n"
      "  --module                  check as a TorchScript archive only\n"
      "  --pickle                  check as a torch.save file only\n"
      "  --timeout S               kill a check after S seconds (default 120;\n"
      "                            sets CTORCH_VERIFY_TIMEOUT)\n"
      "  --json                    print one JSON object: {\"ok\": all ok, \"files\": [{\"file\",\n"
      "                            \"ok\", \"kind\" (null for a file that cannot be read or\n"
      "                            is none of the kinds), and for a failure \"status\",\n"
      "                            \"error\"}]}\n\n"
      "Exit status: 0 every FILE is ok, 1 one or more failed, 2 bad usage.\n",
      prog);
  return 0;
}

int cmd_verify(int argc, char **argv) {
  static const struct option longopts[] = {
      {"module", no_argument, NULL, 'M'},        {"pickle", no_argument, NULL, 'P'},
      {"timeout", required_argument, NULL, 't'}, {"json", no_argument, NULL, 'j'},
      {"help", no_argument, NULL, 'h'},          {NULL, 0, NULL, 0}};
  int c, i, kind = 0, rc = 0, json = 0;
  long v;
  cJSON *root = NULL, *files = NULL;
  optind = 0;
  while ((c = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
    switch (c) {
      case 'h': return help();
      case 'M':
      case 'P':
        if (kind && kind != (c == 'M' ? KIND_MODULE : KIND_PICKLE))
          return usage_error("verify", "--module and --pickle exclude each other");
        kind = c == 'M' ? KIND_MODULE : KIND_PICKLE;
        break;
      case 't':
        if (!parse_long(optarg, 1, 86399, &v))
          return usage_error("verify", "bad timeout '%s'", optarg);
        setenv("CTORCH_VERIFY_TIMEOUT", optarg, 1);
        break;
      case 'j': json = 1; break;
      default: return option_error("verify", c, argv);
    }
  }
  if (optind >= argc) return usage_error("verify", "no file given");
  if (json &&
      (!(root = cJSON_CreateObject()) || !(files = cJSON_AddArrayToObject(root, "files")))) {
    cJSON_Delete(root);
    return fail("out of memory");
  }
  fflush(stdout); /* the checks fork: nothing buffered may be written twice */
  for (i = optind; i < argc; i++) {
    check ch;
    if (verify_one(&ch, argv[i], kind, json)) rc = EXIT_ERROR;
    if (json) cJSON_AddItemToArray(files, check_json(argv[i], &ch));
    fflush(stdout);
  }
  if (json) {
    cJSON_AddBoolToObject(root, "ok", rc == 0);
    if (json_print(root)) return EXIT_ERROR;
  }
  return rc;
}
