// Limits on TorchScript source checked before LibTorch parses it
// (ct_module_define, ct_script_compile). LibTorch's parser and compiler
// recurse once per bracket level, per operator, call, attribute, subscript
// and conditional of an expression, and per nested block, and overflow the
// stack on deep sources. See docs/conventions.md ("Building modules").
#include "checks.h"

#include <cctype>
#include <cstring>

namespace ct {

namespace {

bool is_word_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

// Keywords that make an expression one level deeper: boolean operators,
// comparisons by keyword, conditional expressions, comprehensions.
bool is_expression_keyword(const char *p, size_t n) {
  static const char *const kKeywords[] = {"and", "or", "not", "in", "is", "if", "else", "for"};
  for (const char *k : kKeywords)
    if (std::strlen(k) == n && std::strncmp(p, k, n) == 0) return true;
  return false;
}

// Width of a line's indentation (tabs to the next multiple of 8, as Python),
// or -1 for a line with nothing but blanks and a comment.
int indentation(const char *p) {
  int w = 0;
  for (;; ++p) {
    if (*p == ' ')
      ++w;
    else if (*p == '\t')
      w = (w / 8 + 1) * 8;
    else if (*p == '\f' || *p == '\r')
      continue;
    else
      break;
  }
  return *p == '\0' || *p == '\n' || *p == '#' ? -1 : w;
}

}  // namespace

ct_status check_source_nesting(const char *func, const char *src) noexcept {
  int depth = 0, ops = 0, line = 1, stmt_line = 1;
  int blocks[kMaxSourceNesting + 1] = {0};  // indentation widths of the open blocks
  int nblocks = 0;
  char quote = 0;
  auto too_many_ops = [&] {
    return set_error(CT_ERR_INVALID_ARGUMENT,
                     "%s: the statement starting on line %d has more than %d operators (calls, "
                     "attributes, subscripts and conditionals count); split it",
                     func, stmt_line, kMaxStatementOperators);
  };
  // A new logical line starts at p: its indentation opens or closes blocks.
  auto new_line = [&](const char *p) {
    int w = indentation(p);
    if (w < 0) return CT_OK;
    while (nblocks > 0 && blocks[nblocks - 1] > w) --nblocks;
    if (w > (nblocks ? blocks[nblocks - 1] : 0)) {
      if (nblocks == kMaxSourceNesting)
        return set_error(CT_ERR_INVALID_ARGUMENT, "%s: blocks nest more than %d deep (line %d)",
                         func, kMaxSourceNesting, line);
      blocks[nblocks++] = w;
    }
    return CT_OK;
  };
  if (ct_status s = new_line(src)) return s;
  for (const char *p = src; *p; ++p) {
    char c = *p;
    if (c == '\n') ++line;
    if (quote) {
      if (c == '\\' && p[1])
        ++p;
      else if (c == quote)
        quote = 0;
      continue;
    }
    switch (c) {
      case '"':
      case '\'': quote = c; break;
      case '#':
        while (p[1] && p[1] != '\n') ++p;
        break;
      case '(':
      case '[':
      case '{':
        if (++depth > kMaxSourceNesting)
          return set_error(CT_ERR_INVALID_ARGUMENT, "%s: brackets nest more than %d deep (line %d)",
                           func, kMaxSourceNesting, line);
        // A call or subscript is one more level for the compiler, too.
        if (++ops > kMaxStatementOperators) return too_many_ops();
        break;
      case ')':
      case ']':
      case '}':
        if (depth > 0) --depth;
        break;
      case '\n':
      case ';':
        if (depth == 0 && !(c == '\n' && p > src && p[-1] == '\\')) {
          ops = 0;
          stmt_line = line;
          if (c == '\n')
            if (ct_status s = new_line(p + 1)) return s;
        }
        break;
      case '.':
        // An attribute (x.relu), not a number (1.5).
        if (std::isalpha(static_cast<unsigned char>(p[1])) || p[1] == '_')
          if (++ops > kMaxStatementOperators) return too_many_ops();
        break;
      case '+':
      case '-':
      case '*':
      case '/':
      case '%':
      case '&':
      case '|':
      case '^':
      case '~':
      case '<':
      case '>':
      case '=':
      case '!':
      case '@':
        if (++ops > kMaxStatementOperators) return too_many_ops();
        break;
      default:
        if (is_word_char(c) && (p == src || !is_word_char(p[-1]))) {
          size_t n = 1;
          while (is_word_char(p[n])) ++n;
          if (is_expression_keyword(p, n) && ++ops > kMaxStatementOperators) return too_many_ops();
          p += n - 1;
        }
    }
  }
  return CT_OK;
}

}  // namespace ct
