//===- ParseHazards.h - Source text upstream MLIR's parser crashes on -*- C++
//-*-===//
//
// MLIR 22's custom parsers of linalg.transpose (`permutation = [...]`),
// linalg.broadcast and linalg.reduce (`dimensions = [...]`) store the
// result of DenseI64ArrayAttr::parse without checking it: a list that does
// not parse (an integer past int64, a trailing comma, a float, ...) is
// reported and then dereferenced as a null attribute (a segfault). spmd's
// tools cannot replace a registered op's parser, so they scan the text
// first and reject such a list with an error naming the op and position.
//
// It also rejects a use of an SSA name before any definition that is then
// resolved by a definition in a region not enclosing the use (invalid IR):
// linalg.generic's parser frees such a region on a later error with the
// use still linked to it (a use-after-free).
//
// What crashes upstream's verifiers or passes on a parsed module (text, in
// either syntax, or bytecode) is passes/InputCheck.h's.
//
// A lexical scan, with no MLIR: it skips comments and strings, finds those
// ops' keywords outside any parentheses, brackets or braces and checks
// that what follows `=` is a list the parser accepts. It never rejects a
// list the parser accepts.
//
//===----------------------------------------------------------------------===//

#ifndef SPMD_CORE_PARSEHAZARDS_H
#define SPMD_CORE_PARSEHAZARDS_H

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace spmd {

struct ParseHazard {
  size_t offset; // into the source: where the list goes wrong
  std::string message;
};

/// The first place in MLIR source text `source` that upstream MLIR's parser
/// would crash on instead of reporting an error, if any. Bytecode (which
/// does not go through the custom parsers) has none.
std::optional<ParseHazard> findParseHazard(std::string_view source);

/// Why the source file `path` must not be read whole, if it must not: a
/// device (/dev/zero never ends; LLVM aborts when memory runs out) or a
/// socket. Regular files, /dev/null, pipes (a shell's `<(...)`, read as a
/// stream like stdin) and "-" (stdin) are read. Empty if it can be read, or if
/// it does not exist (opening it then says why).
std::string unreadableSourceFile(const std::string &path);

} // namespace spmd

#endif // SPMD_CORE_PARSEHAZARDS_H
