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

} // namespace

/// The float4 form of an elementwise kernel, taken at run time when the
/// innermost parallel loop's size is a multiple of 4 and every operand that
/// moves along it is f32, contiguous along it and 16-byte aligned at every
/// row: each thread handles 4 neighbouring elements with one vector load
/// per such operand and one vector store per output. Operands that do not
/// move along the innermost loop (broadcasts) are loaded once per thread.
/// Prints nothing when the kernel does not have that form.
LogicalResult KernelEmitter::emitVectorized(linalg::LinalgOp op,
                                            ArrayRef<unsigned> parallel,
                                            Block *block) {
  if (parallel.empty())
    return success();
  unsigned inner = parallel.back();
  enum Kind { Scalar, Contiguous, Invariant };
  SmallVector<Kind> kinds;
  SmallVector<std::string> conditions = {"n" + std::to_string(inner) +
                                         " % 4 == 0"};
  SmallVector<std::string> baseVars;
  for (unsigned d = 0; d < op.getNumLoops(); ++d)
    baseVars.push_back(d == inner ? "i" + std::to_string(d) + "b"
                                  : "i" + std::to_string(d));
  for (OpOperand &operand : op->getOpOperands()) {
    auto type = dyn_cast<MemRefType>(operand.get().getType());
    if (!type) {
      kinds.push_back(Scalar);
      continue;
    }
    const View &v = views[operand.get()];
    AffineMap map = op.getMatchingIndexingMap(&operand);
    IExpr stride = IExpr::constant(0);
    SmallVector<IExpr> otherStrides;
    for (unsigned j = 0; j < map.getNumResults(); ++j) {
      AffineExpr e = map.getResult(j);
      if (auto d = dyn_cast<AffineDimExpr>(e); d && d.getPosition() == inner)
        stride = add(stride, v.strides[j]);
      else if (e.isFunctionOfDim(inner))
        return success(); // d0 + d1 style: not vectorized
      else
        otherStrides.push_back(v.strides[j]);
    }
    if (stride.isConst && stride.value == 0) {
      if (op.isDpsInit(&operand))
        return success();
      kinds.push_back(Invariant);
      continue;
    }
    if (!stride.isConst || stride.value != 1 || !type.getElementType().isF32())
      return success();
    kinds.push_back(Contiguous);
    // Every row start 16-byte aligned: base + offset, and the strides of
    // the other dims, multiples of 4 elements.
    conditions.push_back("spmdk::aligned16(" + result.params[v.arg].name +
                         " + " + v.offset.operand() + ")");
    for (const IExpr &other : otherStrides) {
      if (other.isConst && other.value % 4 != 0)
        return success();
      if (!other.isConst)
        conditions.push_back(other.operand() + " % 4 == 0");
    }
  }
  SmallVector<std::string> unique;
  for (const std::string &c : conditions)
    if (!llvm::is_contained(unique, c))
      unique.push_back(c);
  std::string cond = llvm::join(unique, " && ");
  std::string n = "n" + std::to_string(inner);
  os << "  // float4 form: 4 neighbouring elements per thread.\n";
  os << "  if (" << cond << ") {\n";
  os << "    const long long nq = " << n << " / 4;\n";
  os << "    for (long long t = spmdk::globalThreadIndex(); t < total / 4; "
        "t += spmdk::globalThreadCount()) {\n";
  os << "      long long rest = t;\n";
  for (unsigned p = parallel.size(); p-- > 0;) {
    unsigned d = parallel[p];
    std::string var = "i" + std::to_string(d);
    std::string size = "n" + std::to_string(d);
    if (d == inner) {
      var += "b";
      size = "nq";
    }
    if (p == 0)
      os << "      const long long " << var << " = rest"
         << (d == inner ? " * 4" : "") << ";\n";
    else
      os << "      const long long " << var << " = (rest % " << size << ")"
         << (d == inner ? " * 4" : "") << ";\n      rest /= " << size << ";\n";
  }
  // Loads: one float4 per contiguous operand whose value is used (outputs
  // too when the body reads them), one scalar per invariant one.
  unsigned numInputs = op.getNumDpsInputs();
  SmallVector<std::string> vectors(op->getNumOperands());
  for (OpOperand &operand : op->getOpOperands()) {
    unsigned j = operand.getOperandNumber();
    BlockArgument arg = block->getArgument(j);
    if (kinds[j] == Scalar) {
      if (arg.use_empty())
        continue;
      Value value = operand.get();
      if (Operation *def = value.getDefiningOp()) {
        if (failed(emitScalarOp(def, "      ")))
          return failure();
        names[arg] = names.lookup(def->getResult(0));
      } else {
        names[arg] = names.lookup(value);
      }
      continue;
    }
    if (arg.use_empty())
      continue;
    const View &v = views[operand.get()];
    FailureOr<IExpr> off = access(op, operand, baseVars);
    if (failed(off))
      return failure();
    std::string ptr = result.params[v.arg].name;
    Type elem = cast<MemRefType>(operand.get().getType()).getElementType();
    if (kinds[j] == Contiguous) {
      vectors[j] = fresh("q");
      os << "      const float4 " << vectors[j]
         << " = *reinterpret_cast<const float4 *>(" << ptr << " + "
         << off->operand() << ");\n";
    } else {
      std::string name = fresh("x");
      std::string at = ptr + "[" + off->str() + "]";
      os << "      const " << computeType(elem) << " " << name << " = "
         << (is16BitFloat(elem) ? "spmdk::toF32(" + at + ")" : at) << ";\n";
      names[arg] = name;
    }
  }
  auto yield = cast<linalg::YieldOp>(block->getTerminator());
  SmallVector<std::string> outs;
  for (unsigned k = 0; k < op.getNumDpsInits(); ++k) {
    outs.push_back(fresh("o"));
    os << "      float4 " << outs.back() << ";\n";
  }
  bool usesInnerIndex = false;
  block->walk([&](linalg::IndexOp index) {
    usesInnerIndex |= index.getDim() == inner;
  });
  const char *lanes[] = {"x", "y", "z", "w"};
  for (int lane = 0; lane < 4; ++lane) {
    os << "      {\n";
    if (usesInnerIndex)
      os << "        const long long i" << inner << " = i" << inner << "b + "
         << lane << ";\n";
    for (unsigned j = 0; j < op->getNumOperands(); ++j)
      if (!vectors[j].empty())
        names[block->getArgument(j)] = vectors[j] + "." + lanes[lane];
    for (Operation &bodyOp : block->without_terminator())
      if (failed(emitScalarOp(&bodyOp, "        ")))
        return failure();
    for (unsigned k = 0; k < op.getNumDpsInits(); ++k)
      os << "        " << outs[k] << "." << lanes[lane] << " = "
         << value(yield.getOperand(k)) << ";\n";
    os << "      }\n";
  }
  for (OpOperand &init : op.getDpsInitsMutable()) {
    unsigned k = init.getOperandNumber() - numInputs;
    FailureOr<IExpr> off = access(op, init, baseVars);
    if (failed(off))
      return failure();
    os << "      *reinterpret_cast<float4 *>("
       << result.params[views[init.get()].arg].name << " + " << off->operand()
       << ") = " << outs[k] << ";\n";
  }
  os << "    }\n    return;\n  }\n";
  return success();
}

LogicalResult KernelEmitter::emitLinalg(linalg::LinalgOp op) {
  if (!op.hasPureBufferSemantics())
    return fail(op, "expected a linalg op on buffers");
  unsigned numLoops = op.getNumLoops();
  SmallVector<utils::IteratorType> iters = op.getIteratorTypesArray();
  SmallVector<std::string> loopVars;
  for (unsigned d = 0; d < numLoops; ++d)
    loopVars.push_back("i" + std::to_string(d));

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
    if (warpRows) {
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
  if (reduction.empty()) {
    if (failed(emitVectorized(op, parallel, block)))
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
  emitReductionLoops("    ", "lane", "32");
  if (failed(emitBody("      ", skip)))
    return failure();
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
  for (unsigned k = 0; k < numInits; ++k) {
    BlockArgument acc = block->getArgument(numInputs + k);
    if (failed(combine(combiners[k].op, acc, partials[k],
                       value(combiners[k].partial), "      ", partials[k])))
      return failure();
  }
  os << "    }\n";
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
  os << "  }\n";
  return success();
}

} // namespace detail
} // namespace cudagen
} // namespace spmd
