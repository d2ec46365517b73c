//===- ParseHazards.cpp - Source text upstream MLIR's parser crashes on ---===//

#include "core/ParseHazards.h"

#include <algorithm>
#include <cstdint>
#include <sys/stat.h>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace spmd {
namespace {

/// The ops whose custom parser stores an unchecked DenseI64ArrayAttr, and
/// the keyword that introduces it.
struct HazardousOp {
  std::string_view name;
  std::string_view keyword;
};
constexpr HazardousOp kHazardousOps[] = {
    {"linalg.transpose", "permutation"},
    {"linalg.broadcast", "dimensions"},
    {"linalg.reduce", "dimensions"},
};

bool isIdStart(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}
bool isDigit(char c) { return c >= '0' && c <= '9'; }
bool isIdChar(char c) {
  return isIdStart(c) || isDigit(c) || c == '$' || c == '.';
}
int hexValue(char c) {
  if (isDigit(c))
    return c - '0';
  if (c >= 'a' && c <= 'f')
    return c - 'a' + 10;
  if (c >= 'A' && c <= 'F')
    return c - 'A' + 10;
  return -1;
}

/// A cursor over the source with MLIR's lexical rules for what it skips.
class Scanner {
public:
  explicit Scanner(std::string_view s) : s(s) {}

  bool done() const { return i >= s.size(); }
  char peek(size_t ahead = 0) const {
    return i + ahead < s.size() ? s[i + ahead] : '\0';
  }
  size_t pos() const { return i; }
  void advance(size_t n = 1) { i = std::min(s.size(), i + n); }

  /// Skips whitespace and `//` comments (MLIR's only comments).
  void skipSpace() {
    while (!done()) {
      char c = peek();
      if (c == ' ' || c == '\t' || c == '\n' || c == '\r')
        advance();
      else if (c == '/' && peek(1) == '/')
        skipLine();
      else
        break;
    }
  }
  void skipLine() {
    while (!done() && peek() != '\n')
      advance();
  }
  /// At `"`: past the closing quote (escapes included).
  void skipString() {
    advance();
    while (!done() && peek() != '"')
      advance(peek() == '\\' ? 2 : 1);
    advance();
  }
  /// A bare identifier starting here (letters, digits, `_`, `$`, `.`).
  std::string_view identifier() {
    size_t start = i;
    while (!done() && isIdChar(peek()))
      advance();
    return s.substr(start, i - start);
  }
  /// Whether the word `w` starts here and is not the prefix of a longer
  /// identifier; if so, moves past it.
  bool word(std::string_view w) {
    if (s.substr(i, w.size()) != w || isIdChar(peek(w.size())))
      return false;
    advance(w.size());
    return true;
  }

  /// After an op name: moves past the first `keyword` outside (), [] and
  /// {}, before the op's text can have ended (an SSA name or block label
  /// outside them, or a closing brace of the enclosing region). False if
  /// there is none: the parser then fails cleanly on a missing keyword.
  bool findKeyword(std::string_view keyword) {
    int depth = 0;
    while (!done()) {
      char c = peek();
      if (c == '/' && peek(1) == '/') {
        skipLine();
      } else if (c == '"') {
        skipString();
      } else if (c == '(' || c == '[' || c == '{') {
        ++depth;
        advance();
      } else if (c == ')' || c == ']' || c == '}') {
        if (--depth < 0)
          return false;
        advance();
      } else if (depth == 0 && (c == '%' || c == '^')) {
        return false;
      } else if (isIdStart(c)) {
        if (identifier() == keyword && depth == 0)
          return true;
      } else {
        advance();
      }
    }
    return false;
  }

  /// An element as DenseI64ArrayAttr's parser reads it: `true`, `false`,
  /// or an optional `-` and a decimal or `0x` hexadecimal integer that fits
  /// int64. Moves past it; false if it is not one.
  bool int64Element() {
    bool negative = false;
    if (peek() == '-') {
      negative = true;
      advance();
      skipSpace();
    } else if (word("true") || word("false")) {
      return true;
    }
    if (!isDigit(peek()))
      return false;
    int base = 10;
    if (peek() == '0' && peek(1) == 'x') {
      if (hexValue(peek(2)) < 0)
        return false; // `0x` alone: the parser reads 0 and then fails
      base = 16;
      advance(2);
    }
    // The magnitude may reach 2^63 for a negative value.
    const uint64_t limit = uint64_t(INT64_MAX) + (negative ? 1 : 0);
    uint64_t value = 0;
    bool overflow = false;
    while (!done()) {
      int digit = hexValue(peek());
      if (base == 10 && !isDigit(peek()))
        digit = -1;
      if (digit < 0)
        break;
      if (value > (limit - digit) / base)
        overflow = true;
      else
        value = value * base + digit;
      advance();
    }
    return !overflow;
  }

  /// At `-`: moves past `-` and an integer (decimal or `0x` hex); true
  /// if its value is exactly -2^63, MLIR's marker of a dynamic size or
  /// offset (ShapedType::kDynamic).
  bool dynamicMarker() {
    advance(); // '-'
    skipSpace();
    if (!isDigit(peek()))
      return false;
    int base = 10;
    if (peek() == '0' && peek(1) == 'x' && hexValue(peek(2)) >= 0) {
      base = 16;
      advance(2);
    }
    const uint64_t marker = uint64_t(1) << 63;
    uint64_t value = 0;
    bool over = false;
    while (!done()) {
      int digit =
          base == 10 ? (isDigit(peek()) ? peek() - '0' : -1) : hexValue(peek());
      if (digit < 0)
        break;
      if (value > (UINT64_MAX - digit) / base)
        over = true;
      else
        value = value * base + digit;
      advance();
    }
    return !over && value == marker && !isIdChar(peek());
  }

  /// After tensor.from_elements: the offset of its result type when that
  /// has more than `limit` elements (or their count overflows).
  std::optional<size_t> hugeFromElements(size_t limit) {
    int depth = 0;
    while (!done()) {
      char c = peek();
      if (c == '"') {
        skipString();
        continue;
      }
      if (c == '(' || c == '[' || c == '{' || c == '<')
        ++depth;
      else if (c == ')' || c == ']' || c == '}' || c == '>')
        --depth;
      else if (c == '\n' && depth <= 0)
        return std::nullopt; // the line ended without a type
      else if (c == ':' && depth == 0)
        break;
      advance();
    }
    if (done())
      return std::nullopt;
    advance();
    skipSpace();
    size_t at = pos();
    if (!word("tensor") || peek() != '<')
      return std::nullopt;
    advance();
    uint64_t elements = 1;
    while (isDigit(peek())) {
      uint64_t dim = 0;
      bool over = false;
      while (isDigit(peek())) {
        over |= dim > (UINT64_MAX - 9) / 10;
        dim = dim * 10 + (peek() - '0');
        advance();
      }
      if (over || (dim != 0 && elements > UINT64_MAX / dim))
        return at;
      elements *= dim;
      if (peek() != 'x')
        break;
      advance();
    }
    return elements > limit ? std::optional<size_t>(at) : std::nullopt;
  }

  /// At what follows a keyword: `= [e, e, ...]` with elements that parse
  /// as int64. Returns the offset where it goes wrong, or std::nullopt
  /// when the list is fine or there is no `=` (a clean parse error).
  std::optional<size_t> badList() {
    skipSpace();
    if (peek() != '=')
      return std::nullopt;
    advance();
    skipSpace();
    if (peek() != '[')
      return pos();
    advance();
    skipSpace();
    if (peek() == ']')
      return std::nullopt;
    while (true) {
      size_t at = pos();
      // `1.5`, `1e3`, `12abc`: not an integer token either.
      if (!int64Element() || isIdChar(peek()))
        return at;
      skipSpace();
      if (peek() == ']')
        return std::nullopt;
      if (peek() != ',')
        return pos();
      advance();
      skipSpace();
    }
  }

private:
  std::string_view s;
  size_t i = 0;
};

} // namespace

/// The integer -2^63 in a list of static sizes, offsets or strides of a
/// dynamic index list (`%t[0, -9223372036854775808] [4, 4] [1, 1]`,
/// `low[...]`, `output_shape [...]`, `offset: [...]`): upstream's parser
/// stores it as is, where it means "dynamic" (ShapedType::kDynamic), so the
/// op claims a dynamic operand it does not have and printing or rewriting
/// it reads past its operands (a segfault). Such a list is a `[` that
/// follows a name, a `]` or a `:`; ArrayAttr and dense lists (after `=`,
/// `<`, `[` or `,`) keep the value, as do typed integers (`... : i64`).
static std::optional<size_t> findDynamicMarker(std::string_view source) {
  Scanner scan(source);
  std::vector<bool> indexList; // per open `[`: a dynamic index list?
  char last = '\0';            // the last non-space character
  while (!scan.done()) {
    char c = scan.peek();
    if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
      scan.advance();
      continue;
    }
    if (c == '/' && scan.peek(1) == '/') {
      scan.skipLine();
      continue;
    }
    if (c == '"') {
      scan.skipString();
      last = '"';
      continue;
    }
    if (c == '[') {
      indexList.push_back(isIdChar(last) || last == ']' || last == ':');
    } else if (c == ']') {
      if (!indexList.empty())
        indexList.pop_back();
    } else if (c == '-' && !indexList.empty() && indexList.back() &&
               (last == '[' || last == ',')) {
      size_t at = scan.pos();
      bool marker = scan.dynamicMarker();
      Scanner after = scan;
      after.skipSpace();
      if (marker && after.peek() != ':')
        return at;
      last = '0';
      continue;
    }
    last = c;
    scan.advance();
  }
  return std::nullopt;
}

namespace {

/// What an occurrence of an SSA name is, as far as the text tells for sure.
struct SSAOccurrence {
  enum Kind { Definition, Use } kind;
  unsigned results; // a definition: how many values (`%r:2 = ...`)
};

/// A dotted op name (`linalg.yield`), `return`, or a quoted generic-form
/// name followed by `(` at `p`; its end, or npos.
size_t opNameEnd(std::string_view s, size_t p) {
  if (p >= s.size())
    return std::string_view::npos;
  if (s[p] == '"') {
    size_t q = s.find('"', p + 1);
    if (q == std::string_view::npos ||
        s.substr(p + 1, q - p - 1).find('.') == std::string_view::npos)
      return std::string_view::npos;
    return q + 1 < s.size() && s[q + 1] == '(' ? q + 1 : std::string_view::npos;
  }
  if (!isIdStart(s[p]))
    return std::string_view::npos;
  size_t q = p;
  while (q < s.size() && isIdChar(s[q]))
    ++q;
  std::string_view name = s.substr(p, q - p);
  if (name != "return" && name.find('.') == std::string_view::npos)
    return std::string_view::npos;
  return q;
}

size_t skipBlanks(std::string_view s, size_t p, bool newlines) {
  while (p < s.size() && (s[p] == ' ' || s[p] == '\t' || s[p] == '\r' ||
                          (newlines && s[p] == '\n')))
    ++p;
  return p;
}

size_t ssaNameEnd(std::string_view s, size_t p) {
  ++p; // '%'
  while (p < s.size() && (isIdChar(s[p]) || s[p] == '-'))
    ++p;
  return p;
}

/// Op names whose regions are never IsolatedFromAbove: a definition in one
/// of them shares the SSA name scope of the region around the op.
bool openerSharesNames(std::string_view op) {
  if (!op.empty() && op.front() == '"')
    op.remove_prefix(1);
  for (std::string_view dialect :
       {"linalg.", "scf.", "tensor.", "affine.", "memref."})
    if (op.substr(0, dialect.size()) == dialect)
      return true;
  return false;
}

} // namespace

/// A use of an SSA name before any definition of it (a forward reference)
/// that the next definition of that name resolves from a region that does
/// not enclose the use. The program is invalid (a value defined in a region
/// is not visible outside it), but upstream's parser binds the use to that
/// definition first, and linalg.generic's parser parses its body into a
/// Region of its own that it frees when the body fails to parse (a
/// redefined block, ...): the earlier use is left in the freed value's use
/// list and destroying the function writes to it (heap corruption;
/// bench/fuzz/known history in bench/fuzz/README.md).
///
/// Lexical, so only what the text says for sure counts: definitions are
/// results at a line's start (`%a, %b:2 = dialect.op`) and the arguments of
/// a block label line (`^bb0(%a: f32):`); uses are the operands of an op
/// that fits its line and has no region (no `{`, `}` or `=` after its name,
/// and the next line starts another op, a label or a `}`). Any other
/// occurrence of a name (a function or loop argument, ...) may define it:
/// it makes the name visible in the braces around it and ends the search
/// for its forward references. Regions are `{...}` (attribute dictionaries
/// hold no SSA names), and a definition counts only inside regions of ops
/// that share their name scope (`openerSharesNames`).
static std::optional<ParseHazard>
findCrossRegionForwardRef(std::string_view s) {
  // Pass 1, by line: the sure definitions and uses, and each op's name.
  // By the offset of their `%`: found in source order, looked up in
  // source order (a cursor; maps and ordered sets here were a tenth of
  // spmd-opt's time on a 25,000-op input).
  std::vector<std::pair<size_t, SSAOccurrence>> sure;
  std::vector<std::pair<size_t, std::string_view>> ops;
  std::vector<size_t> starts; // first character of each line with code
  for (size_t p = 0; p < s.size();) {
    size_t q = skipBlanks(s, p, /*newlines=*/false);
    if (q < s.size() && s[q] != '\n' &&
        !(s[q] == '/' && q + 1 < s.size() && s[q + 1] == '/'))
      starts.push_back(q);
    size_t eol = s.find('\n', p);
    p = eol == std::string_view::npos ? s.size() : eol + 1;
  }
  auto startsStatement = [&](size_t p) {
    char c = s[p];
    return c == '%' || c == '^' || c == '}' ||
           opNameEnd(s, p) != std::string_view::npos;
  };
  for (size_t line = 0; line < starts.size(); ++line) {
    size_t p = starts[line];
    if (s[p] == '^') {
      // A block label: `^name(%a: t, ...)` and `:` (not a successor).
      size_t q = p + 1;
      while (q < s.size() && isIdChar(s[q]))
        ++q;
      if (q >= s.size() || s[q] != '(')
        continue;
      std::vector<size_t> args;
      int depth = 0;
      bool expectName = true;
      Scanner scan(s);
      scan.advance(q);
      while (!scan.done()) {
        char c = scan.peek();
        if (c == '"') {
          scan.skipString();
          continue;
        }
        if (c == '/' && scan.peek(1) == '/') {
          scan.skipLine();
          continue;
        }
        if (c == '-' && scan.peek(1) == '>') { // a function type's arrow
          scan.advance(2);
          expectName = false;
          continue;
        }
        if (c == '(' || c == '[' || c == '{' || c == '<')
          ++depth;
        else if (c == ')' || c == ']' || c == '}' || c == '>')
          --depth;
        if (depth == 0)
          break;
        if (depth == 1 && c == ',')
          expectName = true;
        else if (depth == 1 && c == '%' && expectName) {
          size_t at = scan.pos();
          size_t end = ssaNameEnd(s, at);
          size_t colon = skipBlanks(s, end, true);
          if (colon < s.size() && s[colon] == ':')
            args.push_back(at);
          expectName = false;
        } else if (c != ' ' && c != '\t' && c != '\n' && c != '\r' &&
                   c != '(') {
          expectName = false;
        }
        scan.advance();
      }
      if (scan.done())
        continue;
      scan.advance();
      scan.skipSpace();
      if (scan.peek() != ':')
        continue;
      for (size_t at : args)
        sure.push_back({at, {SSAOccurrence::Definition, 1}});
      continue;
    }
    // Results: `%a, %b:2 = `, then the op's name.
    std::vector<std::pair<size_t, unsigned>> results;
    size_t q = p;
    while (q < s.size() && s[q] == '%') {
      size_t at = q;
      q = ssaNameEnd(s, q);
      unsigned count = 1;
      if (q < s.size() && s[q] == ':') {
        size_t d = q + 1;
        unsigned n = 0;
        while (d < s.size() && isDigit(s[d]) && n < 1000000)
          n = n * 10 + (s[d++] - '0');
        if (d == q + 1)
          break;
        count = n;
        q = d;
      }
      results.emplace_back(at, count);
      q = skipBlanks(s, q, false);
      if (q < s.size() && s[q] == ',')
        q = skipBlanks(s, q + 1, false);
      else
        break;
    }
    if (!results.empty()) {
      if (q >= s.size() || s[q] != '=')
        continue;
      q = skipBlanks(s, q + 1, false);
    }
    size_t nameEnd = opNameEnd(s, q);
    if (nameEnd == std::string_view::npos)
      continue;
    for (auto [at, count] : results)
      sure.push_back({at, {SSAOccurrence::Definition, count}});
    ops.emplace_back(q, s.substr(q, nameEnd - q));
    // The operands count as uses only if the op fits this line and has no
    // region.
    std::vector<size_t> uses;
    int depth = 0;
    bool simple = true;
    for (size_t r = nameEnd; r < s.size() && s[r] != '\n' && simple; ++r) {
      char c = s[r];
      if (c == '/' && r + 1 < s.size() && s[r + 1] == '/')
        break;
      if (c == '"') {
        size_t close = r + 1;
        while (close < s.size() && s[close] != '"' && s[close] != '\n')
          close += s[close] == '\\' ? 2 : 1;
        r = close;
      } else if (c == '{' || c == '}' || c == '=') {
        simple = false;
      } else if (c == '(' || c == '[') {
        ++depth;
      } else if (c == ')' || c == ']') {
        simple = --depth >= 0;
      } else if (c == '%') {
        uses.push_back(r);
        r = ssaNameEnd(s, r) - 1;
      }
    }
    simple = simple && depth == 0 &&
             (line + 1 == starts.size() || startsStatement(starts[line + 1]));
    if (simple)
      for (size_t at : uses)
        sure.push_back({at, {SSAOccurrence::Use, 0}});
  }

  // Pass 1 visits lines in order and each line's occurrences in order.
  if (!std::is_sorted(
          sure.begin(), sure.end(),
          [](const auto &a, const auto &b) { return a.first < b.first; }))
    std::stable_sort(
        sure.begin(), sure.end(),
        [](const auto &a, const auto &b) { return a.first < b.first; });
  size_t nextSure = 0;

  // Pass 2: braces, visibility and forward references, in source order.
  struct Scope {
    std::string_view opener;
    std::unordered_set<std::string_view> names; // occurring in it so far
  };
  struct ForwardRef {
    std::vector<size_t> chain; // ids of the scopes around the use
    size_t offset;
    unsigned number; // `%a#1`
  };
  std::vector<Scope> scopes;      // every scope ever opened, by id
  std::vector<size_t> open = {0}; // ids, the outermost first
  scopes.push_back({});
  std::unordered_map<std::string_view, std::vector<ForwardRef>> pending;
  std::string_view op;
  size_t nextOp = 0;
  Scanner scan(s);
  while (!scan.done()) {
    size_t at = scan.pos();
    while (nextOp < ops.size() && ops[nextOp].first <= at)
      op = ops[nextOp++].second;
    char c = scan.peek();
    if (c == '/' && scan.peek(1) == '/') {
      scan.skipLine();
    } else if (c == '"') {
      scan.skipString();
    } else if (c == '{') {
      open.push_back(scopes.size());
      scopes.push_back({op, {}});
      scan.advance();
    } else if (c == '}') {
      if (open.size() > 1) {
        op = scopes[open.back()].opener;
        open.pop_back();
      }
      scan.advance();
    } else if (c == '%') {
      size_t end = ssaNameEnd(s, at);
      std::string_view name = s.substr(at + 1, end - at - 1);
      unsigned number = 0;
      if (end < s.size() && s[end] == '#')
        for (size_t d = end + 1; d < s.size() && isDigit(s[d]) && number < 1e6;
             ++d)
          number = number * 10 + (s[d] - '0');
      scan.advance(end - at);
      // The last of equal offsets, as a map's assignment would keep.
      while (nextSure < sure.size() &&
             (sure[nextSure].first < at ||
              (nextSure + 1 < sure.size() && sure[nextSure + 1].first == at)))
        ++nextSure;
      const SSAOccurrence *it =
          nextSure < sure.size() && sure[nextSure].first == at
              ? &sure[nextSure].second
              : nullptr;
      bool visible = std::any_of(open.begin(), open.end(), [&](size_t id) {
        return scopes[id].names.count(name) != 0;
      });
      if (it && it->kind == SSAOccurrence::Use) {
        if (!visible)
          pending[name].push_back({open, at, number});
      } else if (it) {
        for (const ForwardRef &ref : pending[name]) {
          if (ref.number >= it->results)
            continue;
          size_t common = 0;
          while (common < open.size() && common < ref.chain.size() &&
                 open[common] == ref.chain[common])
            ++common;
          if (common == open.size())
            continue; // the definition's region encloses the use
          bool shared = true;
          for (size_t k = common; k < open.size(); ++k)
            shared &= openerSharesNames(scopes[open[k]].opener);
          if (!shared)
            continue;
          size_t line = 1 + std::count(s.begin(), s.begin() + at, '\n');
          size_t column = at - (s.rfind('\n', at) + 1) + 1;
          return ParseHazard{
              ref.offset, "'%" + std::string(name) +
                              "' is used before its definition at line " +
                              std::to_string(line) + ":" +
                              std::to_string(column) +
                              ", in a region that does not enclose this use"};
        }
        pending.erase(name);
      } else {
        pending.erase(name);
      }
      scopes[open.back()].names.insert(name);
    } else {
      scan.advance();
    }
  }
  return std::nullopt;
}

std::optional<ParseHazard> findParseHazard(std::string_view source) {
  if (source.substr(0, 4) == "ML\xEFR") // MLIR bytecode
    return std::nullopt;
  if (std::optional<size_t> at = findDynamicMarker(source))
    return ParseHazard{*at, "-9223372036854775808 is MLIR's marker of a "
                            "dynamic size or offset, not a static value"};
  if (std::optional<ParseHazard> hazard = findCrossRegionForwardRef(source))
    return hazard;
  Scanner scan(source);
  while (!scan.done()) {
    char c = scan.peek();
    if (c == '/' && scan.peek(1) == '/') {
      scan.skipLine();
    } else if (c == '"') {
      scan.skipString();
    } else if (c == '%' || c == '@' || c == '^' || c == '#' || c == '!') {
      // An SSA name, symbol, block label or alias: not an op name.
      scan.advance();
      scan.identifier();
    } else if (isIdStart(c)) {
      std::string_view name = scan.identifier();
      // tensor.from_elements' parser sizes its operand list by the result
      // type's element count before checking it: tensor<1000000000000xf32>
      // aborts ("SmallVector unable to grow") or runs out of memory. The
      // source cannot list more elements than it has characters.
      if (name == "tensor.from_elements") {
        Scanner at = scan;
        if (std::optional<size_t> bad = at.hugeFromElements(source.size()))
          return ParseHazard{*bad, "'tensor.from_elements' result type has "
                                   "more elements than the op lists"};
        continue;
      }
      // tensor.concat's negative dim and a reshape's reassociation index
      // past 32 bits crash upstream's verifier or the passes, not the
      // parser: passes/InputCheck.h rejects them in the parsed module,
      // which bytecode and the generic syntax reach too.
      for (const HazardousOp &op : kHazardousOps) {
        if (name != op.name)
          continue;
        Scanner at = scan;
        if (!at.findKeyword(op.keyword))
          break;
        if (std::optional<size_t> bad = at.badList())
          return ParseHazard{*bad, "'" + std::string(op.name) + "' " +
                                       std::string(op.keyword) +
                                       " is not a list of 64-bit integers"};
        break;
      }
    } else if (isDigit(c)) {
      // A number, or a dimension list such as 4x8xf32: not an op name.
      scan.advance();
      scan.identifier();
    } else {
      scan.advance();
    }
  }
  return std::nullopt;
}

std::string unreadableSourceFile(const std::string &path) {
  struct stat info;
  if (path == "-" || ::stat(path.c_str(), &info) != 0)
    return "";
  // /dev/null reads as empty, as for mlir-opt.
  struct stat null;
  if (S_ISCHR(info.st_mode) && ::stat("/dev/null", &null) == 0 &&
      info.st_rdev == null.st_rdev)
    return "";
  if (S_ISCHR(info.st_mode) || S_ISBLK(info.st_mode))
    return "is a device, not a program file";
  if (S_ISSOCK(info.st_mode))
    return "is a socket, not a program file";
  return "";
}

} // namespace spmd
