//===- Plan.cpp - Plan model ----------------------------------------------===//

#include "runtime/Plan.h"

#include <cmath>
#include <cstring>
#include <map>
#include <sstream>

using namespace spmd;
using namespace spmd::plan;

size_t plan::elemSize(ElemType type) {
  switch (type) {
  case ElemType::F32:
  case ElemType::I32:
    return 4;
  case ElemType::F64:
  case ElemType::I64:
    return 8;
  case ElemType::F16:
  case ElemType::BF16:
    return 2;
  case ElemType::I8:
    return 1;
  }
  return 0;
}

const char *plan::elemTypeName(ElemType type) {
  switch (type) {
  case ElemType::F32:
    return "f32";
  case ElemType::F64:
    return "f64";
  case ElemType::F16:
    return "f16";
  case ElemType::BF16:
    return "bf16";
  case ElemType::I32:
    return "i32";
  case ElemType::I64:
    return "i64";
  case ElemType::I8:
    return "i8";
  }
  return "?";
}

bool plan::isFloatType(ElemType type) {
  return type == ElemType::F32 || type == ElemType::F64 ||
         type == ElemType::F16 || type == ElemType::BF16;
}

static float halfToFloat(uint16_t h) {
  uint32_t sign = (h & 0x8000u) << 16, exp = (h >> 10) & 0x1f, mant = h & 0x3ff,
           bits;
  if (exp == 0) {
    if (mant == 0) {
      bits = sign;
    } else { // subnormal: normalize
      exp = 127 - 15 + 1;
      while (!(mant & 0x400)) {
        mant <<= 1;
        --exp;
      }
      mant &= 0x3ff;
      bits = sign | (exp << 23) | (mant << 13);
    }
  } else if (exp == 31) {
    bits = sign | 0x7f800000u | (mant << 13);
  } else {
    bits = sign | ((exp + 127 - 15) << 23) | (mant << 13);
  }
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

static uint16_t floatToHalf(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  uint32_t sign = (x >> 16) & 0x8000u;
  int32_t exp = static_cast<int32_t>((x >> 23) & 0xff) - 127 + 15;
  uint32_t mant = x & 0x7fffffu;
  if (((x >> 23) & 0xff) == 0xff) // inf/nan
    return static_cast<uint16_t>(sign | 0x7c00u | (mant ? 0x200u : 0));
  if (exp >= 31)
    return static_cast<uint16_t>(sign | 0x7c00u);
  if (exp <= 0) {
    if (exp < -10)
      return static_cast<uint16_t>(sign);
    mant |= 0x800000u;
    uint32_t shift = static_cast<uint32_t>(14 - exp);
    uint32_t half = mant >> shift, rem = mant & ((1u << shift) - 1),
             mid = 1u << (shift - 1);
    if (rem > mid || (rem == mid && (half & 1)))
      ++half;
    return static_cast<uint16_t>(sign | half);
  }
  uint32_t half = sign | (static_cast<uint32_t>(exp) << 10) | (mant >> 13);
  uint32_t rem = mant & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (half & 1)))
    ++half; // may carry into the exponent, which is right
  return static_cast<uint16_t>(half);
}

static float bf16ToFloat(uint16_t b) {
  uint32_t bits = static_cast<uint32_t>(b) << 16;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

static uint16_t floatToBF16(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  if (std::isnan(f))
    return static_cast<uint16_t>((x >> 16) | 0x40);
  x += 0x7fffu + ((x >> 16) & 1);
  return static_cast<uint16_t>(x >> 16);
}

double plan::loadElement(const void *data, ElemType type, int64_t i) {
  switch (type) {
  case ElemType::F32:
    return static_cast<const float *>(data)[i];
  case ElemType::F64:
    return static_cast<const double *>(data)[i];
  case ElemType::F16:
    return halfToFloat(static_cast<const uint16_t *>(data)[i]);
  case ElemType::BF16:
    return bf16ToFloat(static_cast<const uint16_t *>(data)[i]);
  case ElemType::I32:
    return static_cast<const int32_t *>(data)[i];
  case ElemType::I64:
    return static_cast<double>(static_cast<const int64_t *>(data)[i]);
  case ElemType::I8:
    return static_cast<const int8_t *>(data)[i];
  }
  return 0;
}

void plan::storeElement(void *data, ElemType type, int64_t i, double v) {
  switch (type) {
  case ElemType::F32:
    static_cast<float *>(data)[i] = static_cast<float>(v);
    return;
  case ElemType::F64:
    static_cast<double *>(data)[i] = v;
    return;
  case ElemType::F16:
    static_cast<uint16_t *>(data)[i] = floatToHalf(static_cast<float>(v));
    return;
  case ElemType::BF16:
    static_cast<uint16_t *>(data)[i] = floatToBF16(static_cast<float>(v));
    return;
  case ElemType::I32:
    static_cast<int32_t *>(data)[i] = static_cast<int32_t>(v);
    return;
  case ElemType::I64:
    static_cast<int64_t *>(data)[i] = static_cast<int64_t>(v);
    return;
  case ElemType::I8:
    static_cast<int8_t *>(data)[i] = static_cast<int8_t>(v);
    return;
  }
}

int64_t plan::numElements(const Shape &shape) {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

std::string plan::shapeStr(const Shape &shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i)
    s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

const char *plan::stepKindName(StepKind kind) {
  switch (kind) {
  case StepKind::Kernel:
    return "kernel";
  case StepKind::Gemm:
    return "gemm";
  case StepKind::Copy:
    return "copy";
  case StepKind::AllGather:
    return "all_gather";
  case StepKind::AllReduce:
    return "all_reduce";
  case StepKind::ReduceScatter:
    return "reduce_scatter";
  case StepKind::AllToAll:
    return "all_to_all";
  case StepKind::Shard:
    return "shard";
  case StepKind::PartialFromReplicated:
    return "partial_from_replicated";
  }
  return "?";
}

bool BufferRef::isStatic() const {
  for (int64_t d : shape)
    if (d < 0)
      return false;
  return true;
}

static std::string refStr(const BufferRef &ref) {
  std::string s =
      ref.where == BufferRef::Where::Arg    ? "arg" + std::to_string(ref.index)
      : ref.where == BufferRef::Where::Heap ? "heap" + std::to_string(ref.index)
                                            : "@" + std::to_string(ref.index);
  std::string shape = "[";
  for (size_t i = 0; i < ref.shape.size(); ++i)
    shape +=
        (i ? ", " : "") +
        (ref.shape[i] < 0 ? std::string("?") : std::to_string(ref.shape[i]));
  return s + ":" + elemTypeName(ref.type) + shape + "]";
}

std::string Schedule::validate() const {
  auto check = [&](const BufferRef &ref, const std::string &what) {
    if (ref.where == BufferRef::Where::Arg) {
      if (ref.index < 0 || ref.index >= static_cast<int64_t>(args.size()))
        return what + " names argument " + std::to_string(ref.index) + " of " +
               std::to_string(args.size());
      const TensorInfo &arg = args[ref.index];
      // The argument's own type, or a static view (reshape) of a static one.
      bool view = ref.isStatic() &&
                  numElements(ref.shape) == numElements(arg.localShape);
      for (int64_t d : arg.localShape)
        view = view && d >= 0;
      if (arg.type != ref.type || (arg.localShape != ref.shape && !view))
        return what + " uses argument " + std::to_string(ref.index) + " as " +
               refStr(ref);
      return std::string();
    }
    if (ref.where == BufferRef::Where::Heap) {
      size_t dynamic = 0;
      for (int64_t d : ref.shape)
        dynamic += d < 0;
      if (ref.index < 0 || ref.index >= numHeapBuffers ||
          ref.sizeSlots.size() != dynamic)
        return what + " has a malformed dynamic buffer " + refStr(ref);
      for (int64_t slot : ref.sizeSlots)
        if (slot < 0 || slot >= static_cast<int64_t>(sizes.size()))
          return what + " buffer " + refStr(ref) + " names unknown size " +
                 std::to_string(slot);
      return std::string();
    }
    if (!ref.isStatic())
      return what + " arena buffer " + refStr(ref) + " has a dynamic shape";
    if (ref.index < 0 || ref.index + ref.bytes() > arenaBytes)
      return what + " buffer " + refStr(ref) + " lies outside the arena of " +
             std::to_string(arenaBytes) + " bytes";
    return std::string();
  };
  for (size_t i = 0; i < steps.size(); ++i) {
    const Step &step = steps[i];
    std::string what =
        "step " + std::to_string(i) + " (" + stepKindName(step.kind) + ")";
    for (const BufferRef &ref : step.operands)
      if (std::string err = check(ref, what); !err.empty())
        return err;
    if (step.kind == StepKind::Kernel &&
        (step.kernel < 0 ||
         step.kernel >= static_cast<int64_t>(kernels.size())))
      return what + " calls unknown kernel " + std::to_string(step.kernel);
    size_t want = step.kind == StepKind::Kernel ? step.operands.size()
                  : step.kind == StepKind::Gemm ? 3
                                                : 2;
    if (step.operands.size() != want)
      return what + " has " + std::to_string(step.operands.size()) +
             " operands, expected " + std::to_string(want);
    for (int64_t axis : step.axes)
      if (axis < 0 || axis >= mesh.rank())
        return what + " names mesh axis " + std::to_string(axis);
    if (!step.scalars.empty() && step.kind != StepKind::Kernel)
      return what + " has scalar arguments";
    for (int64_t slot : step.scalars)
      if (slot < 0 || slot >= static_cast<int64_t>(sizes.size()))
        return what + " reads unknown scalar " + std::to_string(slot);
  }
  for (const SizeSource &size : sizes) {
    if (size.kind != SizeSource::Kind::ArgDim) {
      for (int64_t axis : size.axes)
        if (axis < 0 || axis >= mesh.rank())
          return "a dynamic size names mesh axis " + std::to_string(axis);
      if (size.globalSize < 0)
        return "a dynamic size has a negative global size";
      continue;
    }
    if (size.arg < 0 || size.arg >= static_cast<int64_t>(args.size()) ||
        size.dim < 0 ||
        size.dim >= static_cast<int64_t>(args[size.arg].localShape.size()))
      return "a dynamic size names dim " + std::to_string(size.dim) +
             " of argument " + std::to_string(size.arg);
  }
  if (resultRefs.size() != results.size())
    return "schedule has " + std::to_string(resultRefs.size()) +
           " result buffers for " + std::to_string(results.size()) + " results";
  for (size_t i = 0; i < resultRefs.size(); ++i)
    if (std::string err = check(resultRefs[i], "result " + std::to_string(i));
        !err.empty())
      return err;
  return "";
}

std::string Schedule::str() const {
  std::ostringstream os;
  os << "schedule " << name << " arena " << arenaBytes << " bytes, "
     << steps.size() << " steps\n";
  for (const Step &step : steps) {
    os << "  " << stepKindName(step.kind);
    if (step.kind == StepKind::Kernel)
      os << " " << kernels[step.kernel];
    for (const BufferRef &ref : step.operands)
      os << " " << refStr(ref);
    for (int64_t slot : step.scalars)
      os << " %s" << slot;
    os << "\n";
  }
  // The collective sequence is the same on every rank: counts and input
  // bytes per kind and mesh axes ("?" when rank-dependent).
  std::map<std::string, std::pair<int64_t, int64_t>> totals;
  for (const Step &step : steps) {
    if (step.kind == StepKind::Kernel || step.kind == StepKind::Gemm ||
        step.kind == StepKind::Copy || step.kind == StepKind::Shard ||
        step.kind == StepKind::PartialFromReplicated)
      continue;
    std::string key = std::string(stepKindName(step.kind)) + " on [";
    for (size_t i = 0; i < step.axes.size(); ++i)
      key += (i ? ", " : "") + mesh.axisNames[step.axes[i]];
    key += "]";
    auto &[count, bytes] = totals[key];
    ++count;
    const BufferRef &in = step.operands[0];
    if (bytes >= 0)
      bytes = in.isStatic() && in.where != BufferRef::Where::Heap
                  ? bytes + in.bytes()
                  : -1;
  }
  for (const auto &[key, total] : totals)
    os << "collectives: " << total.first << " x " << key << ", "
       << (total.second < 0 ? std::string("?") : std::to_string(total.second))
       << " input bytes\n";
  return os.str();
}
