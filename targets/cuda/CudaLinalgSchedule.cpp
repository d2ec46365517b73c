//===- CudaLinalgSchedule.cpp - CUDA emitter: a linalg op's loops ---------===//
//
// The linalg op's parallel loops spread over the grid (flattened, innermost
// loop fastest), its reduction loops serial per thread or, for a reduction
// over the innermost loop with a recognized combiner, over the lanes of a
// warp (the launch kind); the float4 form of elementwise kernels.
//
//===----------------------------------------------------------------------===//

#include "targets/cuda/CudaEmitterInternal.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "llvm/ADT/SmallBitVector.h"

#include <cmath>

using namespace mlir;

namespace spmd {
namespace cudagen {
namespace detail {

namespace {

/// Reductions into at most this many outputs, each of at least
/// kLongReduction elements, get a warp per output (see warpRows).
constexpr int64_t kFewOutputs = 16384;
constexpr int64_t kLongReduction = 256;
/// Neighbouring outputs per block in the column form (see columnTile).
constexpr int64_t kColumns = 8;

/// A reduction's combiner op (acc = op(partial, acc)) and its partial.
struct Combiner {
  Operation *op = nullptr;
  Value partial; // the value combined into the accumulator
};

/// The identity of a combiner op on `type` as a C literal, or "" if `op` is not
/// an associative and commutative combiner this emitter knows.
std::string combinerIdentity(Operation *op, Type type) {
  bool isFloat = isa<FloatType>(type);
  std::string ct = computeType(type);
  if (isa<arith::AddFOp>(op))
    return floatLiteral(0.0, type);
  if (isa<arith::MulFOp>(op))
    return floatLiteral(1.0, type);
  if (isa<arith::MaximumFOp, arith::MaxNumFOp>(op))
    return floatLiteral(-INFINITY, type);
  if (isa<arith::MinimumFOp, arith::MinNumFOp>(op))
    return floatLiteral(INFINITY, type);
  if (isFloat || !type.isIntOrIndex())
    return "";
  unsigned bits = type.isIndex() ? 64 : type.getIntOrFloatBitWidth();
  if (isa<arith::AddIOp, arith::OrIOp, arith::XOrIOp, arith::MaxUIOp>(op))
    return intLiteral(APInt(bits, 0), type);
  if (isa<arith::MulIOp>(op))
    return intLiteral(APInt(bits, 1), type);
  if (isa<arith::AndIOp, arith::MinUIOp>(op))
    return intLiteral(APInt::getAllOnes(bits), type);
  if (isa<arith::MaxSIOp>(op))
    return intLiteral(APInt::getSignedMinValue(bits), type);
  if (isa<arith::MinSIOp>(op))
    return intLiteral(APInt::getSignedMaxValue(bits), type);
  return "";
}

/// The loop variables i0, i1, ... of `numLoops` loops; loop `base`'s named
/// i<base>b (the first of a vector form's W iterations).
SmallVector<std::string> loopVarNames(unsigned numLoops,
                                      std::optional<unsigned> base = {}) {
  SmallVector<std::string> vars;
  for (unsigned d = 0; d < numLoops; ++d)
    vars.push_back("i" + std::to_string(d) + (d == base ? "b" : ""));
  return vars;
}

} // namespace

/// How W neighbouring iterations of loop `inner` read `operands`: each one
/// is a scalar (not a buffer), contiguous along the loop (one W-element
/// load, spmdk::Vec: 16 bytes for 4 f32 or 8 bf16) or invariant along it (a
/// broadcast, one element). Nothing when an operand has another form
/// (elements wider than 4 bytes, a stride other than 0 or 1, the loop fused
/// into an index expression); `condition` is the run-time test that the
/// loop's size is a multiple of W and every contiguous operand aligned to W
/// elements at every row (loops of one iteration left out).
std::optional<VectorAccess>
KernelEmitter::vectorAccess(linalg::LinalgOp op, ArrayRef<OpOperand *> operands,
                            unsigned inner, const llvm::SmallBitVector &unit) {
  VectorAccess va;
  va.inner = inner;
  unsigned n = op->getNumOperands();
  va.kinds.assign(n, VectorAccess::Scalar);
  va.elemTypes.assign(n, "");
  va.vectors.assign(n, "");
  SmallVector<int64_t> elemBytes(n, 0);
  SmallVector<SmallVector<IExpr>> rowStrides(n);
  int64_t widest = 0;
  for (OpOperand *operand : operands) {
    unsigned j = operand->getOperandNumber();
    auto type = dyn_cast<MemRefType>(operand->get().getType());
    if (!type)
      continue;
    const View &v = views[operand->get()];
    AffineMap map = op.getMatchingIndexingMap(operand);
    IExpr stride = IExpr::constant(0);
    for (unsigned r = 0; r < map.getNumResults(); ++r) {
      AffineExpr e = map.getResult(r);
      auto d = dyn_cast<AffineDimExpr>(e);
      if (d && d.getPosition() == inner)
        stride = add(stride, v.strides[r]);
      else if (e.isFunctionOfDim(inner))
        return std::nullopt; // d0 + d1 style
      else if (!d || !unit.test(d.getPosition()))
        rowStrides[j].push_back(v.strides[r]);
    }
    if (stride.isConst && stride.value == 0) {
      va.kinds[j] = VectorAccess::Invariant;
      continue;
    }
    Type elem = type.getElementType();
    std::optional<std::string> storage = storageType(elem);
    unsigned bits = elem.isIntOrFloat() ? elem.getIntOrFloatBitWidth() : 64;
    if (!stride.isConst || stride.value != 1 || !storage || bits > 32)
      return std::nullopt;
    va.kinds[j] = VectorAccess::Contiguous;
    va.elemTypes[j] = *storage;
    elemBytes[j] = bits <= 8 ? 1 : bits / 8;
    widest = std::max(widest, elemBytes[j]);
  }
  if (widest == 0)
    return std::nullopt;
  // 16-byte accesses for the widest type, at least 4 and at most 8 lanes.
  va.width = std::clamp<int64_t>(16 / widest, 4, 8);
  std::string w = std::to_string(va.width);
  SmallVector<std::string> conditions = {"n" + std::to_string(inner) + " % " +
                                         w + " == 0"};
  for (OpOperand *operand : operands) {
    unsigned j = operand->getOperandNumber();
    if (va.kinds[j] != VectorAccess::Contiguous)
      continue;
    const View &v = views[operand->get()];
    conditions.push_back(
        "spmdk::alignedTo<" + std::to_string(va.width * elemBytes[j]) + ">(" +
        result.params[v.arg].name + " + " + v.offset.operand() + ")");
    for (const IExpr &other : rowStrides[j]) {
      if (other.isConst && other.value % va.width != 0)
        return std::nullopt;
      if (!other.isConst)
        conditions.push_back(other.operand() + " % " + w + " == 0");
    }
  }
  SmallVector<std::string> unique;
  for (const std::string &c : conditions)
    if (!llvm::is_contained(unique, c))
      unique.push_back(c);
  va.condition = llvm::join(unique, " && ");
  return va;
}

std::string VectorAccess::type(unsigned j) const {
  return "spmdk::Vec<" + elemTypes[j] + ", " + std::to_string(width) + ">";
}

/// The loads of W iterations at `baseVars` (the inner loop's variable at
/// the first of them): a vector per contiguous operand, an element per
/// invariant one, the value of a scalar one; unused operands are skipped.
LogicalResult KernelEmitter::emitVectorLoads(linalg::LinalgOp op,
                                             ArrayRef<OpOperand *> operands,
                                             VectorAccess &va,
                                             ArrayRef<std::string> baseVars,
                                             const std::string &indent) {
  Block *block = op.getBlock();
  for (OpOperand *operand : operands) {
    unsigned j = operand->getOperandNumber();
    BlockArgument arg = block->getArgument(j);
    if (arg.use_empty())
      continue;
    if (va.kinds[j] == VectorAccess::Scalar) {
      Value value = operand->get();
      if (Operation *def = value.getDefiningOp()) {
        if (failed(emitScalarOp(def, indent)))
          return failure();
        names[arg] = names.lookup(def->getResult(0));
      } else {
        names[arg] = names.lookup(value);
      }
      continue;
    }
    FailureOr<IExpr> off = access(op, *operand, baseVars);
    if (failed(off))
      return failure();
    std::string ptr = result.params[views[operand->get()].arg].name;
    Type elem = cast<MemRefType>(operand->get().getType()).getElementType();
    if (va.kinds[j] == VectorAccess::Contiguous) {
      va.vectors[j] = fresh("q");
      os << indent << "const " << va.type(j) << " " << va.vectors[j]
         << " = *reinterpret_cast<const " << va.type(j) << " *>(" << ptr
         << " + " << off->operand() << ");\n";
    } else {
      std::string name = fresh("x");
      std::string at = ptr + "[" + off->str() + "]";
      os << indent << "const " << computeType(elem) << " " << name << " = "
         << (is16BitFloat(elem) ? "spmdk::toF32(" + at + ")" : at) << ";\n";
      names[arg] = name;
    }
  }
  return success();
}

/// Opens lane `lane` of W: the inner loop's index where the body reads it,
/// and each loaded vector's element as its block argument's value.
void KernelEmitter::bindLane(linalg::LinalgOp op, const VectorAccess &va,
                             int64_t lane, const std::string &indent) {
  Block *block = op.getBlock();
  std::string at = ".v[" + std::to_string(lane) + "]";
  bool usesInnerIndex = false;
  block->walk([&](linalg::IndexOp index) {
    usesInnerIndex |= index.getDim() == va.inner;
  });
  if (usesInnerIndex)
    os << indent << "const long long i" << va.inner << " = i" << va.inner
       << "b + " << lane << ";\n";
  for (unsigned j = 0; j < op->getNumOperands(); ++j) {
    BlockArgument arg = block->getArgument(j);
    if (va.vectors[j].empty())
      continue;
    std::string name = fresh("x");
    os << indent << "const " << computeType(arg.getType()) << " " << name
       << " = "
       << (is16BitFloat(arg.getType())
               ? "spmdk::toF32(" + va.vectors[j] + at + ")"
               : va.vectors[j] + at)
       << ";\n";
    names[arg] = name;
  }
}

/// The vector form of an elementwise kernel (see vectorAccess), along the
/// innermost parallel loop of more than one iteration: each thread handles
/// W neighbouring elements, one store per output. Loops of one iteration
/// index 0. Prints nothing when the kernel does not have that form or an
/// output is broadcast along the loop.
LogicalResult KernelEmitter::emitVectorized(linalg::LinalgOp op,
                                            ArrayRef<unsigned> parallel,
                                            const llvm::SmallBitVector &unit,
                                            Block *block) {
  SmallVector<unsigned> moving;
  for (unsigned d : parallel)
    if (!unit.test(d))
      moving.push_back(d);
  if (moving.empty())
    return success();
  unsigned inner = moving.back();
  SmallVector<OpOperand *> operands;
  for (OpOperand &operand : op->getOpOperands())
    operands.push_back(&operand);
  std::optional<VectorAccess> va = vectorAccess(op, operands, inner, unit);
  if (!va)
    return success();
  for (OpOperand &init : op.getDpsInitsMutable())
    if (va->kinds[init.getOperandNumber()] != VectorAccess::Contiguous)
      return success();
  SmallVector<std::string> baseVars = loopVarNames(op.getNumLoops(), inner);
  std::string w = std::to_string(va->width);
  std::string n = "n" + std::to_string(inner);
  os << "  // vector form: " << w << " neighbouring elements per thread.\n";
  os << "  if (" << va->condition << ") {\n";
  os << "    const long long nq = " << n << " / " << w << ";\n";
  os << "    for (long long t = spmdk::globalThreadIndex(); t < total / " << w
     << "; t += spmdk::globalThreadCount()) {\n";
  os << "      long long rest = t;\n";
  for (unsigned d : parallel)
    if (unit.test(d))
      os << "      const long long i" << d << " = 0;\n";
  for (unsigned p = moving.size(); p-- > 0;) {
    unsigned d = moving[p];
    std::string var = "i" + std::to_string(d);
    std::string size = "n" + std::to_string(d);
    std::string scale = d == inner ? " * " + w : "";
    if (d == inner) {
      var += "b";
      size = "nq";
    }
    if (p == 0)
      os << "      const long long " << var << " = rest" << scale << ";\n";
    else
      os << "      const long long " << var << " = (rest % " << size << ")"
         << scale << ";\n      rest /= " << size << ";\n";
  }
  // Outputs too are loaded when the body reads them.
  if (failed(emitVectorLoads(op, operands, *va, baseVars, "      ")))
    return failure();
  unsigned numInputs = op.getNumDpsInputs();
  auto yield = cast<linalg::YieldOp>(block->getTerminator());
  SmallVector<std::string> outs;
  for (OpOperand &init : op.getDpsInitsMutable()) {
    outs.push_back(fresh("o"));
    os << "      " << va->type(init.getOperandNumber()) << " " << outs.back()
       << ";\n";
  }
  for (int64_t lane = 0; lane < va->width; ++lane) {
    std::string at = ".v[" + std::to_string(lane) + "]";
    os << "      {\n";
    bindLane(op, *va, lane, "        ");
    for (Operation &bodyOp : block->without_terminator())
      if (failed(emitScalarOp(&bodyOp, "        ")))
        return failure();
    for (OpOperand &init : op.getDpsInitsMutable()) {
      unsigned k = init.getOperandNumber() - numInputs;
      Type elem = cast<MemRefType>(init.get().getType()).getElementType();
      std::string v = value(yield.getOperand(k));
      os << "        " << outs[k] << at << " = "
         << (is16BitFloat(elem)
                 ? "spmdk::fromF32<" + va->elemTypes[init.getOperandNumber()] +
                       ">(" + v + ")"
                 : v)
         << ";\n";
    }
    os << "      }\n";
  }
  for (OpOperand &init : op.getDpsInitsMutable()) {
    unsigned k = init.getOperandNumber() - numInputs;
    FailureOr<IExpr> off = access(op, init, baseVars);
    if (failed(off))
      return failure();
    os << "      *reinterpret_cast<" << va->type(init.getOperandNumber())
       << " *>(" << result.params[views[init.get()].arg].name << " + "
       << off->operand() << ") = " << outs[k] << ";\n";
  }
  os << "    }\n    return;\n  }\n";
  return success();
}

/// The tile form of a transposing elementwise kernel: one input read
/// contiguously along loop B, the output written contiguously along loop A
/// (the innermost loop that moves). Element by element, one of the two walks
/// memory with a large stride (a warp touches 32 sectors per access); here
/// a block moves 32 x 32 tiles through shared memory, reading rows of B and
/// writing rows of A, the body applied on the way out. Taken at run time
/// when both loops' sizes are multiples of 32; prints nothing when the
/// kernel does not have that form.
LogicalResult KernelEmitter::emitTiled(linalg::LinalgOp op,
                                       ArrayRef<unsigned> parallel,
                                       const llvm::SmallBitVector &unit,
                                       Block *block) {
  if (op.getNumDpsInits() != 1)
    return success();
  OpOperand *input = nullptr;
  for (OpOperand *in : op.getDpsInputOperands()) {
    if (!isa<MemRefType>(in->get().getType()))
      continue;
    if (input)
      return success(); // one buffer input only
    input = in;
  }
  OpOperand &init = op.getDpsInitsMutable()[0];
  if (!input || !block->getArgument(init.getOperandNumber()).use_empty())
    return success();
  // Each loop's stride in an operand, or nullopt when a result is not a
  // plain loop.
  auto strideOf = [&](OpOperand &operand, unsigned d) -> std::optional<IExpr> {
    AffineMap map = op.getMatchingIndexingMap(&operand);
    const View &v = views[operand.get()];
    IExpr stride = IExpr::constant(0);
    for (unsigned j = 0; j < map.getNumResults(); ++j) {
      auto e = dyn_cast<AffineDimExpr>(map.getResult(j));
      if (!e)
        return std::nullopt;
      if (e.getPosition() == d)
        stride = add(stride, v.strides[j]);
    }
    return stride;
  };
  auto isOne = [](const std::optional<IExpr> &e) {
    return e && e->isConst && e->value == 1;
  };
  SmallVector<unsigned> moving;
  for (unsigned d : parallel)
    if (!unit.test(d))
      moving.push_back(d);
  if (moving.size() < 2)
    return success();
  unsigned a = moving.back();
  std::optional<unsigned> b;
  for (unsigned d : moving)
    if (d != a && isOne(strideOf(*input, d)))
      b = d;
  if (!b || !isOne(strideOf(init, a)) || !strideOf(*input, a) ||
      isOne(strideOf(*input, a)) || !strideOf(init, *b))
    return success();
  std::string na = "n" + std::to_string(a), nb = "n" + std::to_string(*b);
  std::string ia = "i" + std::to_string(a), ib = "i" + std::to_string(*b);
  Type inElem = cast<MemRefType>(input->get().getType()).getElementType();
  std::string ct = computeType(inElem);
  os << "  // tile form: 32 x 32 tiles through shared memory, read along d"
     << *b << ", written along d" << a << ".\n";
  result.barriers = true;
  os << "  if (" << na << " % 32 == 0 && " << nb << " % 32 == 0) {\n";
  os << "    SPMD_SHARED(" << ct << ", tile, 32 * 33);\n";
  os << "    const int tx = threadIdx.x % 32, ty = threadIdx.x / 32;\n";
  os << "    const int rows = blockDim.x / 32;\n";
  os << "    for (long long g = blockIdx.x; g < total / 1024; g += gridDim.x) "
        "{\n";
  os << "      long long rest = g;\n";
  for (unsigned d : parallel)
    if (unit.test(d))
      os << "      const long long i" << d << " = 0;\n";
  for (unsigned p = moving.size(); p-- > 0;) {
    unsigned d = moving[p];
    bool tiled = d == a || d == *b;
    std::string var = "i" + std::to_string(d) + (tiled ? "t" : "");
    std::string size =
        "n" + std::to_string(d) + (tiled ? std::string(" / 32") : "");
    if (p == 0)
      os << "      const long long " << var << " = rest;\n";
    else
      os << "      const long long " << var << " = rest % (" << size
         << ");\n      rest /= " << size << ";\n";
  }
  const View &in = views[input->get()];
  SmallVector<std::string> vars = loopVarNames(op.getNumLoops());
  FailureOr<IExpr> inOff = access(op, *input, vars);
  if (failed(inOff))
    return failure();
  std::string at = result.params[in.arg].name + "[" + inOff->str() + "]";
  os << "      for (int k = ty; k < 32; k += rows) {\n";
  os << "        const long long " << ia << " = " << ia << "t * 32 + k;\n";
  os << "        const long long " << ib << " = " << ib << "t * 32 + tx;\n";
  os << "        tile[k * 33 + tx] = "
     << (is16BitFloat(inElem) ? "spmdk::toF32(" + at + ")" : at) << ";\n";
  os << "      }\n";
  os << "      __syncthreads();\n";
  os << "      for (int k = ty; k < 32; k += rows) {\n";
  os << "        const long long " << ia << " = " << ia << "t * 32 + tx;\n";
  os << "        const long long " << ib << " = " << ib << "t * 32 + k;\n";
  std::string x = fresh("x");
  os << "        const " << ct << " " << x << " = tile[tx * 33 + k];\n";
  names[block->getArgument(input->getOperandNumber())] = x;
  for (OpOperand *other : op.getDpsInputOperands()) {
    BlockArgument arg = block->getArgument(other->getOperandNumber());
    if (other == input || arg.use_empty())
      continue;
    Value v = other->get();
    if (Operation *def = v.getDefiningOp()) {
      if (failed(emitScalarOp(def, "        ")))
        return failure();
      names[arg] = names.lookup(def->getResult(0));
    } else {
      names[arg] = names.lookup(v);
    }
  }
  for (Operation &bodyOp : block->without_terminator())
    if (failed(emitScalarOp(&bodyOp, "        ")))
      return failure();
  auto yield = cast<linalg::YieldOp>(block->getTerminator());
  Type outElem = cast<MemRefType>(init.get().getType()).getElementType();
  FailureOr<IExpr> outOff = access(op, init, vars);
  if (failed(outOff))
    return failure();
  std::string v = value(yield.getOperand(0));
  os << "        " << result.params[views[init.get()].arg].name << "["
     << outOff->str() << "] = "
     << (is16BitFloat(outElem)
             ? "spmdk::fromF32<" + *storageType(outElem) + ">(" + v + ")"
             : v)
     << ";\n";
  os << "      }\n";
  os << "      __syncthreads();\n"; // the tile is rewritten by the next one
  os << "    }\n    return;\n  }\n";
  return success();
}

/// The vector form of a warp-per-row reduction's loop (see vectorAccess):
/// when the row (the innermost loop of more than one iteration) is a
/// reduction loop, each lane reads W neighbouring elements of the row per
/// iteration (one element per lane leaves too few bytes in flight: a bf16
/// row max ran at a quarter of the copy bandwidth). Prints `if (cond) {
/// loop } else {` and returns true, the caller closing it after the scalar
/// loop; prints nothing and returns false when the op does not have that
/// form.
FailureOr<bool> KernelEmitter::emitRowVector(
    linalg::LinalgOp op, ArrayRef<unsigned> reduction,
    const llvm::SmallBitVector &unit,
    const llvm::SmallPtrSetImpl<Operation *> &skip,
    llvm::function_ref<LogicalResult(const std::string &)> combineAll) {
  std::optional<unsigned> row;
  for (unsigned d = op.getNumLoops(); d-- > 0 && !row;)
    if (!unit.test(d))
      row = d;
  if (!row || !llvm::is_contained(reduction, *row))
    return false;
  unsigned inner = *row;
  SmallVector<OpOperand *> inputs = op.getDpsInputOperands();
  std::optional<VectorAccess> va = vectorAccess(op, inputs, inner, unit);
  if (!va)
    return false;
  SmallVector<std::string> baseVars = loopVarNames(op.getNumLoops(), inner);
  std::string w = std::to_string(va->width);
  IExpr rtotal = IExpr::constant(1);
  for (unsigned d : reduction)
    rtotal = mul(rtotal, IExpr::symbol("n" + std::to_string(d)));
  os << "    // vector form: " << w << " neighbouring elements per lane.\n";
  os << "    if (" << va->condition << ") {\n";
  os << "    for (long long r = lane * " << w << "; r < " << rtotal.str()
     << "; r += 32 * " << w << ") {\n";
  os << "      long long rrest = r;\n";
  for (unsigned p = reduction.size(); p-- > 0;) {
    unsigned d = reduction[p];
    if (p == 0)
      os << "      const long long " << baseVars[d] << " = rrest;\n";
    else
      os << "      const long long " << baseVars[d] << " = rrest % n" << d
         << ";\n      rrest /= n" << d << ";\n";
  }
  if (failed(emitVectorLoads(op, inputs, *va, baseVars, "      ")))
    return failure();
  Block *block = op.getBlock();
  for (int64_t lane = 0; lane < va->width; ++lane) {
    os << "      {\n";
    bindLane(op, *va, lane, "        ");
    for (Operation &bodyOp : block->without_terminator())
      if (!skip.contains(&bodyOp) && failed(emitScalarOp(&bodyOp, "        ")))
        return failure();
    if (failed(combineAll("        ")))
      return failure();
    os << "      }\n";
  }
  os << "    }\n    } else {\n";
  return true;
}

LogicalResult KernelEmitter::emitLinalg(linalg::LinalgOp op) {
  if (!op.hasPureBufferSemantics())
    return fail(op, "expected a linalg op on buffers");
  unsigned numLoops = op.getNumLoops();
  SmallVector<utils::IteratorType> iters = op.getIteratorTypesArray();
  SmallVector<std::string> loopVars = loopVarNames(numLoops);

  // Loop sizes from the operands' shapes.
  SmallVector<std::optional<Size>> loopSizes(numLoops);
  for (OpOperand &operand : op->getOpOperands()) {
    if (!isa<MemRefType>(operand.get().getType()))
      continue;
    if (!views.count(operand.get()))
      return fail(op, "an operand is not a kernel argument or a view of one");
    AffineMap map = op.getMatchingIndexingMap(&operand);
    const View &v = views[operand.get()];
    for (unsigned k = 0; k < map.getNumResults(); ++k)
      if (auto d = dyn_cast<AffineDimExpr>(map.getResult(k)))
        if (!loopSizes[d.getPosition()])
          loopSizes[d.getPosition()] = v.sizes[k];
  }
  for (unsigned d = 0; d < numLoops; ++d)
    if (!loopSizes[d])
      return fail(op, "the size of loop d" + Twine(d) +
                          " is not the size of an operand dim");

  SmallVector<unsigned> parallel, reduction;
  for (unsigned d = 0; d < numLoops; ++d)
    (iters[d] == utils::IteratorType::parallel ? parallel : reduction)
        .push_back(d);

  // Every output element belongs to one parallel iteration: each output map
  // is a permutation of the parallel loops.
  for (OpOperand &init : op.getDpsInitsMutable()) {
    AffineMap map = op.getMatchingIndexingMap(&init);
    llvm::SmallBitVector seen(numLoops);
    for (AffineExpr e : map.getResults()) {
      auto d = dyn_cast<AffineDimExpr>(e);
      if (!d || iters[d.getPosition()] != utils::IteratorType::parallel ||
          seen.test(d.getPosition()))
        return fail(op, "an output indexing map is not a permutation of the "
                        "parallel loops");
      seen.set(d.getPosition());
    }
    if (seen.count() != parallel.size())
      return fail(op, "a parallel loop does not index every output (threads "
                      "would race on one element)");
  }

  // Reads and writes of one buffer must touch the same element per
  // iteration (an elementwise in-place update); anything else would race.
  SmallVector<std::optional<IExpr>> offsets;
  for (OpOperand &operand : op->getOpOperands()) {
    if (!isa<MemRefType>(operand.get().getType())) {
      offsets.push_back(std::nullopt);
      continue;
    }
    FailureOr<IExpr> off = access(op, operand, loopVars);
    if (failed(off))
      return failure();
    offsets.push_back(*off);
  }
  for (OpOperand &init : op.getDpsInitsMutable()) {
    unsigned k = init.getOperandNumber();
    for (OpOperand &other : op->getOpOperands()) {
      unsigned j = other.getOperandNumber();
      if (j == k || !offsets[j] ||
          views[other.get()].arg != views[init.get()].arg)
        continue;
      if (!reduction.empty() || offsets[j]->str() != offsets[k]->str())
        return fail(op, "it reads and writes overlapping views of argument " +
                            Twine(views[init.get()].arg) +
                            " at different elements");
    }
    argWritten[views[init.get()].arg] = true;
  }

  // The combiners of a warp-per-row reduction: each output's yielded value
  // is combine(partial, acc) with the accumulator used nowhere else.
  Block *block = op.getBlock();
  auto yield = cast<linalg::YieldOp>(block->getTerminator());
  unsigned numInputs = op.getNumDpsInputs();
  SmallVector<Combiner> combiners;
  // A warp per output for reductions along rows (the innermost loop), and
  // for long reductions into few outputs whatever the layout (a bias or
  // norm weight's gradient sums 8192 rows into 2048 columns: a thread per
  // output would leave most of the GPU idle; the lanes' reads are strided,
  // but neighbouring warps read neighbouring columns of the same rows).
  auto staticExtent = [&](ArrayRef<unsigned> dims) -> std::optional<int64_t> {
    int64_t n = 1;
    for (unsigned d : dims) {
      const Product &p = loopSizes[d]->product;
      if (!p.valid || !p.factors.empty())
        return std::nullopt;
      n *= p.constant;
    }
    return n;
  };
  bool fewLongReductions = false;
  if (!reduction.empty()) {
    std::optional<int64_t> outputs = staticExtent(parallel);
    std::optional<int64_t> length = staticExtent(reduction);
    fewLongReductions = outputs && length && *outputs <= kFewOutputs &&
                        *length >= kLongReduction;
  }
  bool warpRows = rowReductions && !reduction.empty() &&
                  (iters[numLoops - 1] == utils::IteratorType::reduction ||
                   fewLongReductions);
  for (unsigned k = 0; warpRows && k < op.getNumDpsInits(); ++k) {
    BlockArgument acc = block->getArgument(numInputs + k);
    Operation *def = yield.getOperand(k).getDefiningOp();
    if (!def || def->getBlock() != block || def->getNumOperands() != 2 ||
        !acc.hasOneUse() || combinerIdentity(def, acc.getType()).empty()) {
      warpRows = false;
      break;
    }
    Value partial;
    if (def->getOperand(0) == acc)
      partial = def->getOperand(1);
    else if (def->getOperand(1) == acc)
      partial = def->getOperand(0);
    if (!partial || partial == acc || !def->getResult(0).hasOneUse()) {
      warpRows = false;
      break;
    }
    combiners.push_back({def, partial});
  }

  // Column form: a reduction into few outputs whose innermost loop is
  // parallel (a bias or norm weight's gradient: the column sums of rows x
  // cols) reads neighbouring outputs' elements together. A warp per output
  // would read one column, each lane a different row (32 sectors for 32
  // elements); instead a block takes kColumns neighbouring outputs, one per
  // thread column, and its blockDim / kColumns rows of threads split the
  // reduction, combined through shared memory.
  bool columnTile = warpRows && fewLongReductions &&
                    iters[numLoops - 1] == utils::IteratorType::parallel;

  // Loop sizes and the parallel work.
  os << "  // " << op->getName() << ": " << parallel.size() << " parallel, "
     << reduction.size() << " reduction loop(s)\n";
  for (unsigned d = 0; d < numLoops; ++d)
    os << "  const long long n" << d << " = " << loopSizes[d]->expr.str()
       << ";\n";
  Product work;
  IExpr total = IExpr::constant(1);
  for (unsigned d : parallel) {
    total = mul(total, IExpr::symbol("n" + std::to_string(d)));
    work = mulProduct(work, loopSizes[d]->product);
  }
  if (!work.valid)
    return fail(op, "the parallel work is not a product of argument dims");
  result.workConstant = work.constant;
  result.workFactors = work.factors;
  result.launch =
      warpRows ? CudaLaunchKind::WarpPerRow : CudaLaunchKind::GridStride;
  os << "  const long long total = " << total.str() << ";\n";
  auto emitHeader = [&]() {
    if (columnTile) {
      os << "  // column form: " << kColumns
         << " neighbouring outputs per block, its rows of threads split the "
            "reduction.\n";
      os << "  const int col = threadIdx.x % " << kColumns << ";\n";
      os << "  const int phase = threadIdx.x / " << kColumns << ";\n";
      os << "  const int phases = blockDim.x / " << kColumns << ";\n";
      for (unsigned k = 0; k < op.getNumDpsInits(); ++k)
        os << "  SPMD_SHARED("
           << computeType(block->getArgument(numInputs + k).getType())
           << ", red" << k << ", 1024);\n";
      os << "  for (long long g = blockIdx.x; g * " << kColumns
         << " < total; g += gridDim.x) {\n";
      os << "    const bool live = g * " << kColumns << " + col < total;\n";
      // A thread past the last output reduces output 0 and stores nothing.
      os << "    const long long t = live ? g * " << kColumns
         << " + col : 0;\n";
    } else if (warpRows) {
      os << "  const int lane = threadIdx.x & 31;\n";
      os << "  for (long long t = spmdk::globalThreadIndex() >> 5; t < total; "
            "t += spmdk::globalThreadCount() >> 5) {\n";
    } else {
      os << "  for (long long t = spmdk::globalThreadIndex(); t < total; "
            "t += spmdk::globalThreadCount()) {\n";
    }
    // Parallel indices, innermost fastest.
    if (!parallel.empty()) {
      os << "    long long rest = t;\n";
      for (unsigned p = parallel.size(); p-- > 0;) {
        unsigned d = parallel[p];
        if (p == 0)
          os << "    const long long i" << d << " = rest;\n";
        else
          os << "    const long long i" << d << " = rest % n" << d
             << ";\n    rest /= n" << d << ";\n";
      }
    }
  };

  auto emitLoads = [&](const std::string &indent) -> LogicalResult {
    for (OpOperand *input : op.getDpsInputOperands()) {
      BlockArgument arg = block->getArgument(input->getOperandNumber());
      if (arg.use_empty())
        continue;
      if (!isa<MemRefType>(input->get().getType())) {
        FailureOr<std::string> s = [&]() -> FailureOr<std::string> {
          Value v = input->get();
          if (Operation *def = v.getDefiningOp()) {
            if (failed(emitScalarOp(def, indent)))
              return failure();
            return value(def->getResult(0));
          }
          if (names.count(v))
            return names.lookup(v);
          fail(op, "a scalar input is neither a constant nor an argument");
          return failure();
        }();
        if (failed(s))
          return failure();
        names[arg] = *s;
        continue;
      }
      const View &v = views[input->get()];
      std::string name = fresh("x");
      Type elem = cast<MemRefType>(input->get().getType()).getElementType();
      std::string ptr = result.params[v.arg].name;
      std::string load =
          is16BitFloat(elem)
              ? "spmdk::toF32(" + ptr + "[" +
                    offsets[input->getOperandNumber()]->str() + "])"
              : ptr + "[" + offsets[input->getOperandNumber()]->str() + "]";
      os << indent << "const " << computeType(elem) << " " << name << " = "
         << load << ";\n";
      names[arg] = name;
    }
    return success();
  };
  auto emitBody =
      [&](const std::string &indent,
          const llvm::SmallPtrSetImpl<Operation *> &skip) -> LogicalResult {
    if (failed(emitLoads(indent)))
      return failure();
    for (Operation &inner : block->without_terminator()) {
      if (skip.contains(&inner))
        continue;
      if (failed(emitScalarOp(&inner, indent)))
        return failure();
    }
    return success();
  };
  auto storeOf = [&](unsigned k, const std::string &v) {
    OpOperand &init = op.getDpsInitsMutable()[k];
    Type elem = cast<MemRefType>(init.get().getType()).getElementType();
    std::string ptr = result.params[views[init.get()].arg].name;
    std::string off = offsets[init.getOperandNumber()]->str();
    if (is16BitFloat(elem))
      return ptr + "[" + off + "] = spmdk::fromF32<" + *storageType(elem) +
             ">(" + v + ");";
    return ptr + "[" + off + "] = " + v + ";";
  };
  auto initLoad = [&](unsigned k) {
    OpOperand &init = op.getDpsInitsMutable()[k];
    Type elem = cast<MemRefType>(init.get().getType()).getElementType();
    std::string ptr = result.params[views[init.get()].arg].name;
    std::string at = ptr + "[" + offsets[init.getOperandNumber()]->str() + "]";
    return is16BitFloat(elem) ? "spmdk::toF32(" + at + ")" : at;
  };
  auto emitReductionLoops = [&](const std::string &indent,
                                const std::string &start,
                                const std::string &step) {
    // Flattened reduction space, innermost fastest.
    IExpr rtotal = IExpr::constant(1);
    for (unsigned d : reduction)
      rtotal = mul(rtotal, IExpr::symbol("n" + std::to_string(d)));
    os << indent << "for (long long r = " << start << "; r < " << rtotal.str()
       << "; r += " << step << ") {\n";
    os << indent << "  long long rrest = r;\n";
    for (unsigned p = reduction.size(); p-- > 0;) {
      unsigned d = reduction[p];
      if (p == 0)
        os << indent << "  const long long i" << d << " = rrest;\n";
      else
        os << indent << "  const long long i" << d << " = rrest % n" << d
           << ";\n"
           << indent << "  rrest /= n" << d << ";\n";
    }
  };

  unsigned numInits = op.getNumDpsInits();
  llvm::SmallBitVector unit(numLoops); // loops of one iteration
  for (unsigned d = 0; d < numLoops; ++d)
    unit[d] = staticExtent({d}) == std::optional<int64_t>(1);
  if (reduction.empty()) {
    if (failed(emitTiled(op, parallel, unit, block)) ||
        failed(emitVectorized(op, parallel, unit, block)))
      return failure();
    emitHeader();
    for (unsigned k = 0; k < numInits; ++k) {
      BlockArgument acc = block->getArgument(numInputs + k);
      if (acc.use_empty())
        continue;
      std::string name = fresh("y");
      os << "    const " << computeType(acc.getType()) << " " << name << " = "
         << initLoad(k) << ";\n";
      names[acc] = name;
    }
    llvm::SmallPtrSet<Operation *, 1> none;
    if (failed(emitBody("    ", none)))
      return failure();
    for (unsigned k = 0; k < numInits; ++k)
      os << "    " << storeOf(k, value(yield.getOperand(k))) << "\n";
    os << "  }\n";
    return success();
  }

  emitHeader();
  if (!warpRows) {
    // Serial reduction per thread, starting from the output's value.
    SmallVector<std::string> accs;
    for (unsigned k = 0; k < numInits; ++k) {
      BlockArgument acc = block->getArgument(numInputs + k);
      std::string name = fresh("acc");
      os << "    " << computeType(acc.getType()) << " " << name << " = "
         << initLoad(k) << ";\n";
      names[acc] = name;
      accs.push_back(name);
    }
    emitReductionLoops("    ", "0", "1");
    llvm::SmallPtrSet<Operation *, 1> none;
    if (failed(emitBody("      ", none)))
      return failure();
    for (unsigned k = 0; k < numInits; ++k)
      os << "      " << accs[k] << " = " << value(yield.getOperand(k)) << ";\n";
    os << "    }\n";
    for (unsigned k = 0; k < numInits; ++k)
      os << "    " << storeOf(k, accs[k]) << "\n";
    os << "  }\n";
    return success();
  }

  // Warp per row: lanes stride over the reduction space, each combining its
  // partial from the identity; shuffles combine the lanes; lane 0 combines
  // the result into the output's value.
  SmallVector<std::string> partials;
  llvm::SmallPtrSet<Operation *, 4> skip;
  for (unsigned k = 0; k < numInits; ++k) {
    BlockArgument acc = block->getArgument(numInputs + k);
    std::string name = fresh("part");
    os << "    " << computeType(acc.getType()) << " " << name << " = "
       << combinerIdentity(combiners[k].op, acc.getType()) << ";\n";
    partials.push_back(name);
    skip.insert(combiners[k].op);
  }
  // Combining the partial with this lane's accumulator: the same op with
  // the accumulator operand replaced.
  auto combine = [&](Operation *c, Value acc, const std::string &accName,
                     const std::string &other, const std::string &indent,
                     const std::string &target) -> LogicalResult {
    std::string saved = names.lookup(acc);
    Value partial =
        c->getOperand(0) == acc ? c->getOperand(1) : c->getOperand(0);
    std::string savedPartial = names.lookup(partial);
    names[acc] = accName;
    names[partial] = other;
    if (failed(emitScalarOp(c, indent)))
      return failure();
    os << indent << target << " = " << value(c->getResult(0)) << ";\n";
    names[acc] = saved;
    names[partial] = savedPartial;
    return success();
  };
  auto combineAll = [&](const std::string &indent) -> LogicalResult {
    for (unsigned k = 0; k < numInits; ++k) {
      BlockArgument acc = block->getArgument(numInputs + k);
      if (failed(combine(combiners[k].op, acc, partials[k],
                         value(combiners[k].partial), indent, partials[k])))
        return failure();
    }
    return success();
  };
  FailureOr<bool> rowVector =
      columnTile ? FailureOr<bool>(false)
                 : emitRowVector(op, reduction, unit, skip, combineAll);
  if (failed(rowVector))
    return failure();
  if (columnTile)
    os << "    #pragma unroll 4\n"; // loads of several rows in flight
  emitReductionLoops("    ", columnTile ? "phase" : "lane",
                     columnTile ? "phases" : "32");
  if (failed(emitBody("      ", skip)) || failed(combineAll("      ")))
    return failure();
  if (*rowVector)
    os << "    }\n";
  os << "    }\n";
  if (columnTile) {
    for (unsigned k = 0; k < numInits; ++k)
      os << "    red" << k << "[threadIdx.x] = " << partials[k] << ";\n";
    os << "    __syncthreads();\n";
    os << "    if (phase == 0 && live) {\n";
    os << "      for (int p = 1; p < phases; ++p) {\n";
    for (unsigned k = 0; k < numInits; ++k) {
      BlockArgument acc = block->getArgument(numInputs + k);
      std::string other = fresh("row");
      os << "        const " << computeType(acc.getType()) << " " << other
         << " = red" << k << "[p * " << kColumns << " + col];\n";
      if (failed(combine(combiners[k].op, acc, partials[k], other, "        ",
                         partials[k])))
        return failure();
    }
    os << "      }\n";
  } else {
    os << "    for (int o = 16; o > 0; o >>= 1) {\n";
    for (unsigned k = 0; k < numInits; ++k) {
      BlockArgument acc = block->getArgument(numInputs + k);
      std::string other = fresh("lane");
      os << "      const " << computeType(acc.getType()) << " " << other
         << " = spmdgShflXor(" << partials[k] << ", o);\n";
      if (failed(combine(combiners[k].op, acc, partials[k], other, "      ",
                         partials[k])))
        return failure();
    }
    os << "    }\n";
    os << "    if (lane == 0) {\n";
  }
  for (unsigned k = 0; k < numInits; ++k) {
    BlockArgument acc = block->getArgument(numInputs + k);
    std::string init = fresh("y");
    os << "      const " << computeType(acc.getType()) << " " << init << " = "
       << initLoad(k) << ";\n";
    std::string out = fresh("out");
    os << "      " << computeType(acc.getType()) << " " << out << ";\n";
    if (failed(combine(combiners[k].op, acc, init, partials[k], "      ", out)))
      return failure();
    os << "      " << storeOf(k, out) << "\n";
  }
  os << "    }\n";
  if (columnTile)
    os << "    __syncthreads();\n"; // red is rewritten by the next group
  os << "  }\n";
  return success();
}

} // namespace detail
} // namespace cudagen
} // namespace spmd
