//===- CudaEmitterInternal.h - The CUDA emitter's shared parts -*- C++ -*-===//
//-*-===//
//
// The CUDA emitter (CudaEmitter.h) in files along its seams:
//   CudaIndexExpr.cpp       index expressions and views folded into them;
//   CudaTypes.cpp           C types and literals of MLIR types;
//   CudaScalarOps.cpp       a linalg region's arith/math ops as C;
//   CudaLinalgSchedule.cpp  a linalg op's loops over the grid (grid-stride,
//                           warp per row, float4);
//   CudaEmitter.cpp         the kernel signature and the public entry points.
// One KernelEmitter prints one kernel; its methods live in those files.
//
//===----------------------------------------------------------------------===//

#ifndef SPMD_TARGETS_CUDA_CUDAEMITTERINTERNAL_H
#define SPMD_TARGETS_CUDA_CUDAEMITTERINTERNAL_H

#include "targets/cuda/CudaEmitter.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/raw_ostream.h"

#include <optional>
#include <string>
#include <vector>

namespace llvm {
class SmallBitVector;
template <typename PtrType> class SmallPtrSetImpl;
} // namespace llvm

namespace spmd {
namespace cudagen {
namespace detail {

//===-- Index expressions with constant folding ---------------------------===//

struct IExpr {
  bool isConst = true;
  int64_t value = 0;
  std::string text;
  static IExpr constant(int64_t v) { return {true, v, ""}; }
  static IExpr symbol(std::string s) { return {false, 0, std::move(s)}; }
  std::string str() const {
    if (!isConst)
      return text;
    if (value == INT64_MIN)
      return "(-9223372036854775807LL - 1)";
    return value < 0 ? "(" + std::to_string(value) + "LL)"
                     : std::to_string(value) + "LL";
  }
  /// Printed as an operand of * or +.
  std::string operand() const {
    return isConst || llvm::all_of(
                          text,
                          [](char c) { return llvm::isAlnum(c) || c == '_'; })
               ? str()
               : "(" + text + ")";
  }
};

IExpr add(const IExpr &a, const IExpr &b);
IExpr mul(const IExpr &a, const IExpr &b);

/// A size as a product the launcher can evaluate: constant * factors.
struct Product {
  bool valid = true;
  int64_t constant = 1;
  std::vector<std::pair<unsigned, int>> factors;
};
Product mulProduct(const Product &a, const Product &b);

struct Size {
  IExpr expr;
  Product product;
};

/// A memref value as index arithmetic on a base pointer argument.
struct View {
  unsigned arg = 0;
  IExpr offset;
  mlir::SmallVector<Size> sizes;
  mlir::SmallVector<IExpr> strides;
};

//===-- Types -------------------------------------------------------------===//

/// The C type a value of `type` has in memory.
std::optional<std::string> storageType(mlir::Type type);
/// The C type a value of `type` is computed in.
std::string computeType(mlir::Type type);
std::string unsignedType(mlir::Type type);
bool is16BitFloat(mlir::Type type);
std::string floatLiteral(double v, mlir::Type type);
std::string intLiteral(const mlir::APInt &v, mlir::Type type);

//===-- The emitter of one kernel -----------------------------------------===//

/// How the vector forms read an op's operands, W iterations of loop `inner`
/// at a time (KernelEmitter::vectorAccess).
struct VectorAccess {
  enum Kind { Scalar, Contiguous, Invariant };
  unsigned inner = 0;
  int64_t width = 0;
  std::string condition;         // the run-time test the form is taken under
  mlir::SmallVector<Kind> kinds; // per operand
  mlir::SmallVector<std::string> elemTypes; // contiguous: storage type
  mlir::SmallVector<std::string> vectors;   // loaded: the Vec variable
  /// The spmdk::Vec type of contiguous operand `j`.
  std::string type(unsigned j) const;
};

class KernelEmitter {
public:
  KernelEmitter(mlir::func::FuncOp func, CudaKernel &result, bool rowReductions)
      : func(func), result(result), rowReductions(rowReductions) {}

  mlir::LogicalResult run();

private:
  mlir::func::FuncOp func;
  CudaKernel &result;
  bool rowReductions;
  std::string body;
  llvm::raw_string_ostream os{body};
  llvm::DenseMap<mlir::Value, View> views;
  llvm::DenseMap<mlir::Value, std::string> names; // scalars: C expressions
  int counter = 0;
  std::vector<bool> argWritten;

  mlir::InFlightDiagnostic fail(mlir::Operation *op,
                                const llvm::Twine &reason) {
    return op->emitOpError() << "cannot be printed as CUDA: " << reason;
  }

  std::string fresh(llvm::StringRef prefix) {
    return (prefix + llvm::Twine(counter++)).str();
  }

  mlir::FailureOr<IExpr> indexValue(mlir::Operation *user, mlir::Value v);
  mlir::FailureOr<Size> sizeValue(mlir::Operation *user,
                                  mlir::OpFoldResult ofr);
  mlir::LogicalResult buildView(mlir::Operation *op);
  mlir::LogicalResult emitLinalg(mlir::linalg::LinalgOp op);
  mlir::FailureOr<IExpr> access(mlir::linalg::LinalgOp op,
                                mlir::OpOperand &operand,
                                llvm::ArrayRef<std::string> loopVars);
  mlir::LogicalResult emitScalarOp(mlir::Operation *op,
                                   const std::string &indent);
  mlir::LogicalResult emitTiled(mlir::linalg::LinalgOp op,
                                llvm::ArrayRef<unsigned> parallel,
                                const llvm::SmallBitVector &unit,
                                mlir::Block *block);
  std::optional<VectorAccess>
  vectorAccess(mlir::linalg::LinalgOp op,
               llvm::ArrayRef<mlir::OpOperand *> operands, unsigned inner,
               const llvm::SmallBitVector &unit);
  mlir::LogicalResult
  emitVectorLoads(mlir::linalg::LinalgOp op,
                  llvm::ArrayRef<mlir::OpOperand *> operands, VectorAccess &va,
                  llvm::ArrayRef<std::string> baseVars,
                  const std::string &indent);
  void bindLane(mlir::linalg::LinalgOp op, const VectorAccess &va, int64_t lane,
                const std::string &indent);
  mlir::FailureOr<bool> emitRowVector(
      mlir::linalg::LinalgOp op, llvm::ArrayRef<unsigned> reduction,
      const llvm::SmallBitVector &unit,
      const llvm::SmallPtrSetImpl<mlir::Operation *> &skip,
      llvm::function_ref<mlir::LogicalResult(const std::string &)> combineAll);
  mlir::LogicalResult emitVectorized(mlir::linalg::LinalgOp op,
                                     llvm::ArrayRef<unsigned> parallel,
                                     const llvm::SmallBitVector &unit,
                                     mlir::Block *block);
  mlir::FailureOr<std::string> affine(mlir::Operation *op, mlir::AffineExpr e,
                                      llvm::ArrayRef<std::string> loopVars);
  std::string value(mlir::Value v) { return names.lookup(v); }
};

} // namespace detail
} // namespace cudagen
} // namespace spmd

#endif // SPMD_TARGETS_CUDA_CUDAEMITTERINTERNAL_H
