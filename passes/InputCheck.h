//===- InputCheck.h - IR that upstream passes crash on ----------*- C++ -*-===//
//
// Valid IR (it verifies) that an upstream pattern or fold dereferences out of
// bounds. MLIR 22's gpu dialect registers a memref.dim canonicalization
// (SimplifyDimOfAllocOp, with gpu.alloc's patterns: every canonicalizer of
// a context that loaded the gpu dialect runs it) that checks a constant
// dim index only against the rank, then reads the shape at the index as an
// unsigned: a negative index segfaults. Upstream calls an out-of-range
// constant index valid IR with undefined behaviour; spmd's tools reject it
// before any pass runs, with an error at the op.
//
// Every size, offset and byte count downstream (shard sizes, buffers, the
// run's memory check, copies) is int64: a tensor whose byte size overflows
// it is rejected here too, at the op with the type (a result, a function's
// argument or result, a block argument). Unevenly sharded, such a tensor
// became runtime-sized local buffers that spmd-plan-memory's static size
// check does not see.
//
// Upstream verifiers that crash on invalid IR are checked before them:
// the tools parse with verification off, run checkVerifierHazards, then
// verify (verifyInput). A reshape's reassociation index past 32 bits
// verifies (as a 32-bit affine dim) and is rejected after verification.
//
// core/ParseHazards.h covers what crashes the parser itself (a lexical scan
// of the custom syntax before parsing); this covers the parsed module, from
// custom or generic text or from bytecode alike (bytecode is never scanned).
//
//===----------------------------------------------------------------------===//

#ifndef SPMD_PASSES_INPUTCHECK_H
#define SPMD_PASSES_INPUTCHECK_H

#include "mlir/Pass/Pass.h"

#include <memory>

namespace spmd {

/// Reports an error at the first op under `root` (included) that an
/// upstream pass would crash on, and fails: a dim op (tensor.dim,
/// memref.dim: ShapedDimOpInterface) whose constant index is negative or
/// not below the rank of its ranked operand; a ranked tensor type whose
/// static dims times its element's bytes overflow int64; a reshape whose
/// reassociation index does not fit in 32 bits; a tensor.pad whose static low
/// or high list holds more dynamic markers (-2^63) than it has operands.
mlir::LogicalResult checkInputHazards(mlir::Operation *root);

/// Reports an error at the first op under `root` (included), parsed but not
/// verified, whose upstream verifier would crash, and fails: tensor.concat
/// with a negative dim (its verifier indexes the shapes with it),
/// tensor.from_elements whose result type has more elements than it has
/// operands (its verifier lists that many types: an abort past 2^32).
mlir::LogicalResult checkVerifierHazards(mlir::Operation *root);

/// What the tools run on a module parsed with verification off:
/// checkVerifierHazards, mlir::verify, then checkInputHazards.
mlir::LogicalResult verifyInput(mlir::Operation *root);

/// A pass (any op) that runs checkInputHazards and fails where it does:
/// spmd-opt runs it before the passes the command line names. With
/// `verifyFirst`, it runs verifyInput instead: spmd-opt parses with
/// verification off unless told --mlir-very-unsafe-disable-verifier-on-parsing.
std::unique_ptr<mlir::Pass> createSPMDCheckInputPass(bool verifyFirst = false);

} // namespace spmd

#endif // SPMD_PASSES_INPUTCHECK_H
