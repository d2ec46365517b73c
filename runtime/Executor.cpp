//===- Executor.cpp - Runs a plan schedule for one rank -------------------===//

#include "runtime/Executor.h"
#include "runtime/Workers.h"

#include <cblas.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>

using namespace spmd;
using namespace spmd::plan;

static constexpr size_t kArenaAlignment = 64;

Executor::Executor(const Schedule &schedule, std::vector<KernelFn> kernels,
                   Collectives *comm)
    : schedule(schedule), kernels(std::move(kernels)), comm(comm) {
  size_t bytes = static_cast<size_t>(schedule.arenaBytes);
  bytes = (bytes + kArenaAlignment - 1) / kArenaAlignment * kArenaAlignment;
  arena = std::aligned_alloc(kArenaAlignment, bytes ? bytes : kArenaAlignment);
  if (rankThreads() > 1)
    workers = std::make_unique<Workers>(rankThreads());
}

Executor::~Executor() { std::free(arena); }

void *Executor::address(const BufferRef &ref,
                        const std::vector<void *> &args) const {
  if (ref.where == BufferRef::Where::Arg)
    return args[ref.index];
  if (ref.where == BufferRef::Where::Heap)
    return const_cast<char *>(dynamicArena.data()) + rank.heapOffset(ref.index);
  return static_cast<char *>(arena) + ref.index;
}

const void *Executor::result(size_t i, const std::vector<void *> &args) const {
  return address(schedule.resultRefs[i], args);
}

std::string Executor::run(const std::vector<void *> &args,
                          const std::vector<Shape> &shapes) {
  if (args.size() != schedule.args.size())
    return "schedule " + schedule.name + " takes " +
           std::to_string(schedule.args.size()) + " arguments, got " +
           std::to_string(args.size());
  // This rank's sizes, and the runtime-sized buffers that follow from them.
  if (std::string err = rank.bind(schedule, comm ? comm->device() : 0, shapes,
                                  static_cast<int64_t>(kArenaAlignment));
      !err.empty())
    return err;
  // A failed allocation is an error, not a null arena or an abort.
  if (!arena)
    return "cannot allocate the arena of " +
           std::to_string(schedule.arenaBytes) + " bytes";
  if (dynamicArena.size() < static_cast<size_t>(rank.heapBytes())) {
    if (std::string err =
            checkMemory(rank.heapBytes(), "the runtime-sized buffers");
        !err.empty())
      return err;
    dynamicArena.resize(static_cast<size_t>(rank.heapBytes()));
  }
  prepareKernelCalls(args);
  for (size_t i = 0; i < schedule.steps.size(); ++i) {
    const Step &step = schedule.steps[i];
    if (static_cast<int64_t>(i) == failStep) {
      failStep = -1;
      return "step " + std::to_string(i) + ": injected fault";
    }
    double start = trace ? traceClockUs() : 0;
    std::string err = runStep(i, args);
    if (trace && err.empty()) {
      TraceEvent event = describeStep(schedule, rank, i);
      event.startUs = start;
      event.durationUs = traceClockUs() - start;
      trace->push_back(std::move(event));
    }
    if (!err.empty())
      return "step " + std::to_string(i) + " (" + stepKindName(step.kind) +
             (step.kind == StepKind::Kernel
                  ? " " + schedule.kernels[step.kernel]
                  : std::string()) +
             "): " + err;
  }
  return "";
}

double spmd::plan::traceClockUs() {
  static const auto epoch = std::chrono::steady_clock::now();
  return std::chrono::duration<double, std::micro>(
             std::chrono::steady_clock::now() - epoch)
      .count();
}

TraceEvent spmd::plan::describeStep(const Schedule &schedule,
                                    const RankBuffers &rank, size_t index) {
  const Step &step = schedule.steps[index];
  TraceEvent event;
  event.step = static_cast<int64_t>(index);
  event.kind = step.kind;
  switch (step.kind) {
  case StepKind::Kernel:
    event.name = schedule.kernels[step.kernel];
    break;
  case StepKind::Gemm: {
    // C[m, n] = op(A)[m, k] op(B)[k, n], from this rank's shapes.
    event.name = "gemm";
    Shape a = rank.resolve(step.operands[0]),
          c = rank.resolve(step.operands[2]);
    if (a.size() == 2 && c.size() == 2)
      event.detail = "m=" + std::to_string(c[0]) +
                     " n=" + std::to_string(c[1]) +
                     " k=" + std::to_string(step.transposeA ? a[0] : a[1]);
    break;
  }
  case StepKind::Copy:
    event.name = "copy";
    break;
  default: {
    event.name = stepKindName(step.kind);
    std::string axes;
    for (int64_t a : step.axes)
      axes += (axes.empty() ? "" : ",") + schedule.mesh.axisNames[a];
    const BufferRef &in = step.operands[0];
    int64_t bytes = numElements(rank.resolve(in)) *
                    static_cast<int64_t>(dtypeSize(in.type));
    event.detail = "[" + axes + "] " + std::to_string(bytes) + " bytes";
  }
  }
  return event;
}

namespace {
/// A memref descriptor of any rank: {allocated, aligned, offset, sizes,
/// strides}, all 64-bit words.
std::vector<int64_t> descriptor(void *data, const Shape &shape) {
  size_t rank = shape.size();
  std::vector<int64_t> words(3 + 2 * rank, 0);
  auto ptr = reinterpret_cast<int64_t>(data);
  words[0] = words[1] = ptr;
  int64_t stride = 1;
  for (size_t d = rank; d-- > 0;) {
    words[3 + d] = shape[d];
    words[3 + rank + d] = stride;
    stride *= shape[d];
  }
  return words;
}

/// f16/bf16 blocks widened to f32 for BLAS.
std::vector<float> widen(const void *data, DType type, int64_t n) {
  std::vector<float> out(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i)
    out[i] = static_cast<float>(loadAsDouble(data, type, i));
  return out;
}
} // namespace

std::string plan::runGemm(const Step &step, const void *a, const void *b,
                          void *c, Workers *workers) {
  return runGemm(step, step.operands[0].shape, step.operands[1].shape,
                 step.operands[2].shape, a, b, c, workers);
}

std::string plan::runGemm(const Step &step, const Shape &as, const Shape &bs,
                          const Shape &cs, const void *a, const void *b,
                          void *c, Workers *workers) {
  DType type = step.operands[2].type;
  size_t o = cs.size() - 2;
  int64_t batch = cs.size() == 3 ? cs[0] : 1;
  int64_t m = cs[o], n = cs[o + 1];
  int64_t k = step.transposeA ? as[o] : as[o + 1];
  int64_t lda = as[o + 1], ldb = bs[o + 1], ldc = n;
  int64_t aStride = as[o] * as[o + 1], bStride = bs[o] * bs[o + 1],
          cStride = m * n;
  CBLAS_TRANSPOSE ta = step.transposeA ? CblasTrans : CblasNoTrans;
  CBLAS_TRANSPOSE tb = step.transposeB ? CblasTrans : CblasNoTrans;
  if (m == 0 || n == 0)
    return "";
  if (k == 0) { // nothing to add; beta 0 still clears C
    if (step.beta == 0)
      std::memset(c, 0, static_cast<size_t>(batch * cStride) * dtypeSize(type));
    return "";
  }
  double beta = static_cast<double>(step.beta);
  // Pieces for the rank's threads: batch members, else column blocks of C
  // (or row blocks when C is tall), each one single-threaded BLAS call.
  // Below ~2 MFLOP a split costs more than it saves.
  int64_t parts = 1, pieceM = m, pieceN = n;
  bool splitBatch = false;
  int threads = workers ? workers->size() : 1;
  if (threads > 1 && 2 * batch * m * n * k >= (int64_t(1) << 21)) {
    if (batch >= threads) {
      splitBatch = true;
      parts = batch;
    } else if (n >= m && n >= 32) {
      pieceN = std::max<int64_t>(16, (n / threads + 15) / 16 * 16);
      parts = (n + pieceN - 1) / pieceN;
    } else if (m >= 16) {
      pieceM = std::max<int64_t>(8, (m / threads + 7) / 8 * 8);
      parts = (m + pieceM - 1) / pieceM;
    }
  }
  auto run = [&](auto gemm, auto *pa, auto *pb, auto *pc, auto one, auto bet) {
    auto piece = [&](int64_t p) {
      int64_t i0 = splitBatch ? p : 0, i1 = splitBatch ? p + 1 : batch;
      int64_t r0 = 0, c0 = 0, rows = m, cols = n;
      if (!splitBatch && pieceM < m) {
        r0 = p * pieceM;
        rows = std::min(pieceM, m - r0);
      } else if (!splitBatch && pieceN < n) {
        c0 = p * pieceN;
        cols = std::min(pieceN, n - c0);
      }
      // Row r0 of op(A) and column c0 of op(B), row-major.
      int64_t aOff = step.transposeA ? r0 : r0 * lda;
      int64_t bOff = step.transposeB ? c0 * ldb : c0;
      for (int64_t i = i0; i < i1; ++i)
        gemm(CblasRowMajor, ta, tb, rows, cols, k, one, pa + i * aStride + aOff,
             lda, pb + i * bStride + bOff, ldb, bet,
             pc + i * cStride + r0 * ldc + c0, ldc);
    };
    if (parts > 1)
      workers->run(parts, piece);
    else
      piece(0);
  };
  switch (type) {
  case DType::F32:
    run(cblas_sgemm, static_cast<const float *>(a),
        static_cast<const float *>(b), static_cast<float *>(c), 1.0f,
        static_cast<float>(beta));
    return "";
  case DType::F64:
    run(cblas_dgemm, static_cast<const double *>(a),
        static_cast<const double *>(b), static_cast<double *>(c), 1.0, beta);
    return "";
  case DType::F16:
  case DType::BF16: {
    // No 16-bit BLAS on the CPU: compute in f32, round once at the end.
    std::vector<float> fa = widen(a, type, batch * aStride);
    std::vector<float> fb = widen(b, type, batch * bStride);
    std::vector<float> fc = step.beta ? widen(c, type, batch * cStride)
                                      : std::vector<float>(batch * cStride);
    for (int64_t i = 0; i < batch; ++i)
      cblas_sgemm(CblasRowMajor, ta, tb, m, n, k, 1.0f, fa.data() + i * aStride,
                  lda, fb.data() + i * bStride, ldb, static_cast<float>(beta),
                  fc.data() + i * cStride, ldc);
    for (int64_t i = 0; i < batch * cStride; ++i)
      storeFromDouble(c, type, i, fc[i]);
    return "";
  }
  default:
    return std::string("GEMM on ") + dtypeName(type) + " is not supported";
  }
}

void Executor::prepareKernelCalls(const std::vector<void *> &args) {
  calls.resize(schedule.steps.size());
  for (size_t i = 0; i < schedule.steps.size(); ++i) {
    const Step &step = schedule.steps[i];
    if (step.kind != StepKind::Kernel)
      continue;
    KernelCall &call = calls[i];
    size_t n = step.operands.size();
    call.descriptors.resize(n);
    call.pointers.resize(n);
    call.packed.resize(n + step.scalars.size());
    for (size_t k = 0; k < n; ++k) {
      const BufferRef &ref = step.operands[k];
      call.descriptors[k] = descriptor(address(ref, args), rank.resolve(ref));
      call.pointers[k] = call.descriptors[k].data();
      call.packed[k] = &call.pointers[k];
    }
    // An index argument is passed by value: its packed slot points at it.
    for (size_t k = 0; k < step.scalars.size(); ++k)
      call.packed[n + k] =
          const_cast<int64_t *>(&rank.sizes()[step.scalars[k]]);
    if (isSplit(step.kernel)) {
      call.range[0] = 0;
      call.range[1] = schedule.kernelSplits[step.kernel].extent;
      call.packed.push_back(&call.range[0]);
      call.packed.push_back(&call.range[1]);
    }
  }
}

bool Executor::isSplit(int64_t kernel) const {
  return static_cast<size_t>(kernel) < schedule.kernelSplits.size() &&
         schedule.kernelSplits[kernel].extent > 0;
}

void Executor::runKernel(const Step &step, KernelCall &call) {
  KernelFn fn = kernels[step.kernel];
  // Pieces of the outermost loop for the rank's threads, a few per thread
  // so a thread that starts late takes fewer; small kernels run whole
  // (waking the helpers costs microseconds).
  constexpr int64_t kMinIterations = 1 << 15;
  int64_t pieces = 1;
  if (workers && isSplit(step.kernel)) {
    const Schedule::KernelSplit &split = schedule.kernelSplits[step.kernel];
    if (split.iterations >= kMinIterations)
      pieces = std::min<int64_t>({split.extent, 4 * int64_t(workers->size()),
                                  split.iterations / (kMinIterations / 4)});
  }
  if (pieces <= 1) {
    fn(call.packed.data());
    return;
  }
  int64_t extent = call.range[1];
  workers->run(pieces, [&](int64_t p) {
    int64_t range[2] = {extent * p / pieces, extent * (p + 1) / pieces};
    std::vector<void *> packed(call.packed);
    packed[packed.size() - 2] = &range[0];
    packed[packed.size() - 1] = &range[1];
    fn(packed.data());
  });
}

std::string Executor::runStep(size_t index, const std::vector<void *> &args) {
  const Step &step = schedule.steps[index];
  if (step.kind == StepKind::Kernel) {
    runKernel(step, calls[index]);
    return "";
  }
  const std::vector<BufferRef> &ops = step.operands;
  std::vector<Shape> shapes;
  for (const BufferRef &ref : ops)
    shapes.push_back(rank.resolve(ref));
  switch (step.kind) {
  case StepKind::Gemm:
    return runGemm(step, shapes[0], shapes[1], shapes[2], address(ops[0], args),
                   address(ops[1], args), address(ops[2], args), workers.get());
  case StepKind::Copy:
    if (shapes[0] != shapes[1])
      return "copies " + shapeStr(shapes[0]) + " into " + shapeStr(shapes[1]);
    if (address(ops[0], args) != address(ops[1], args))
      std::memmove(address(ops[1], args), address(ops[0], args),
                   static_cast<size_t>(numElements(shapes[0])) *
                       dtypeSize(ops[0].type));
    return "";
  case StepKind::Shard: {
    // Local: this member's torch.chunk along dim; no communication.
    const Mesh &mesh = schedule.mesh;
    int64_t device = comm ? comm->device() : 0;
    int64_t k = mesh.groupSize(step.axes);
    int64_t index = mesh.groupIndex(device, step.axes);
    Range r = chunkRange(shapes[0][step.dim0], k, index);
    Shape from(shapes[0].size(), 0), box = shapes[0];
    from[step.dim0] = r.offset;
    box[step.dim0] = r.size;
    if (box != shapes[1])
      return "chunk " + shapeStr(box) + " does not fit output " +
             shapeStr(shapes[1]);
    copyBox(address(ops[0], args), shapes[0], from, address(ops[1], args),
            shapes[1], Shape(box.size(), 0), box, dtypeSize(ops[0].type));
    return "";
  }
  case StepKind::PartialFromReplicated: {
    // Local: a sum's term is the value on group index 0 and zero elsewhere;
    // avg/max/min terms are the value itself.
    int64_t device = comm ? comm->device() : 0;
    size_t bytes =
        static_cast<size_t>(numElements(shapes[0])) * dtypeSize(ops[0].type);
    void *out = address(ops[1], args);
    if (step.reduce == ReduceKind::Sum &&
        schedule.mesh.groupIndex(device, step.axes) != 0)
      std::memset(out, 0, bytes);
    else if (out != address(ops[0], args))
      std::memmove(out, address(ops[0], args), bytes);
    return "";
  }
  default:
    break;
  }
  if (!comm)
    return "a collective needs a communicator";
  return runCollective(*comm, step, address(ops[0], args), shapes[0],
                       address(ops[1], args), shapes[1]);
}
