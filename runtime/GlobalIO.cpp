//===- GlobalIO.cpp - A run's global inputs and results -------------------===//

#include "runtime/GlobalIO.h"

#include "runtime/Collectives.h"

#include <algorithm>
#include <cstring>
#include <random>
#include <set>

namespace spmd::plan {

namespace {
Layout layoutOf(const Mesh &mesh, const TensorInfo &info) {
  return info.layout ? *info.layout : Layout::replicated(mesh.rank());
}

NpyArray generate(const TensorInfo &info, const Shape &shape, uint64_t s) {
  NpyArray array;
  array.dtype = info.type == DType::BF16 ? DType::F32 : info.type;
  array.shape = shape;
  array.data.assign(numElements(shape) * dtypeSize(array.dtype), 0);
  std::mt19937_64 rng(s);
  std::uniform_real_distribution<double> real(-1.0, 1.0);
  std::uniform_int_distribution<int> integer(0, 9);
  for (int64_t i = 0; i < numElements(shape); ++i)
    storeFromDouble(array.data.data(), array.dtype, i,
                    isFloat(array.dtype) ? real(rng) : integer(rng));
  return array;
}

/// Reads DIR/arg<i>.npy and checks that it gives argument `i` its local
/// shape on every rank.
Status readInput(const Schedule &schedule, const std::string &inputDir,
                 size_t i, NpyArray &global) {
  const TensorInfo &arg = schedule.args[i];
  const Mesh &mesh = schedule.mesh;
  std::string path = inputDir + "/arg" + std::to_string(i) + ".npy";
  if (Status s = readNpy(path, global); !s.ok())
    return s;
  bool typeOk = global.dtype == arg.type ||
                (global.dtype == DType::F32 &&
                 (arg.type == DType::BF16 || arg.type == DType::F16));
  if (!typeOk)
    return Status::error(path + ": dtype " + dtypeName(global.dtype) +
                         " but argument " + std::to_string(i) + " of " +
                         schedule.name + " is " + dtypeName(arg.type));
  for (int64_t d = 0; d < mesh.numDevices(); ++d) {
    Layout layout = layoutOf(mesh, arg);
    bool fits = global.shape.size() == arg.localShape.size();
    if (fits) {
      Shape mine = localShape(mesh, layout, global.shape, mesh.coords(d));
      for (size_t k = 0; k < mine.size(); ++k)
        fits = fits && (arg.localShape[k] < 0 || arg.localShape[k] == mine[k]);
    }
    if (!fits)
      return Status::error(
          path + ": shape " + shapeStr(global.shape) +
          " does not give argument " + std::to_string(i) + " of " +
          schedule.name + " its local shape " + shapeStr(arg.localShape) +
          " on rank " + std::to_string(d) + " (layout " + layout.str() + ")");
  }
  return Status::success();
}

/// Whether `device` is the one representative among ranks holding the same
/// block: coordinate 0 on every replicated axis.
bool isRepresentative(const Mesh &mesh, const std::optional<Layout> &layout,
                      int64_t device) {
  std::vector<int64_t> coords = mesh.coords(device);
  for (size_t a = 0; a < coords.size(); ++a)
    if ((!layout || layout->placements[a].isReplicate()) && coords[a] != 0)
      return false;
  return true;
}

} // namespace

/// `info`'s global value from every rank's block of it (blocks[d],
/// shapes[d]); `what` names it in messages ("result 3").
Status assembleTensor(const Mesh &mesh, const TensorInfo &info,
                      const std::string &what,
                      const std::vector<const std::vector<char> *> &blocks,
                      const std::vector<Shape> &shapes, NpyArray &out) {
  int64_t numRanks = mesh.numDevices();
  Layout layout = layoutOf(mesh, info);
  // The global shape: a sharded dim sums the distinct chunks (devices at
  // coordinate 0 on every other axis), other dims are rank 0's.
  Shape global = shapes[0];
  for (size_t k = 0; k < global.size(); ++k) {
    std::vector<int64_t> axes = layout.shardAxes(static_cast<int64_t>(k));
    if (axes.empty())
      continue;
    global[k] = 0;
    for (int64_t d = 0; d < numRanks; ++d) {
      std::vector<int64_t> coords = mesh.coords(d);
      bool distinct = true;
      for (size_t a = 0; a < coords.size(); ++a)
        if (coords[a] != 0 &&
            std::find(axes.begin(), axes.end(), int64_t(a)) == axes.end())
          distinct = false;
      if (distinct)
        global[k] += shapes[d][k];
    }
  }
  out.dtype = info.type;
  out.shape = global;
  out.data.assign(numElements(global) * dtypeSize(info.type), 0);
  std::vector<ReduceKind> partialKinds;
  for (const Placement &p : layout.placements)
    if (p.isPartial())
      partialKinds.push_back(p.reduce);
  for (ReduceKind k : partialKinds)
    if (k != partialKinds[0])
      return Status::error(what + " is partial (" + layout.str() +
                           ") with different reductions; it cannot be "
                           "assembled");
  std::set<Shape> seenBoxes; // the first term of a partial box is copied
  int64_t partialCount = 1;
  for (size_t a = 0; a < layout.placements.size(); ++a)
    if (layout.placements[a].isPartial())
      partialCount *= mesh.axisSizes[a];
  for (int64_t d = 0; d < numRanks; ++d) {
    if (!isRepresentative(mesh, info.layout ? info.layout : layout, d))
      continue;
    std::vector<Range> ranges =
        localRanges(mesh, layout, global, mesh.coords(d));
    Shape offset, extent;
    for (const Range &r : ranges) {
      offset.push_back(r.offset);
      extent.push_back(r.size);
    }
    if (extent != shapes[d])
      return Status::error(what + ": rank " + std::to_string(d) + " holds " +
                           shapeStr(shapes[d]) + " but the layout gives " +
                           shapeStr(extent));
    const char *block = blocks[d]->data();
    if (partialKinds.empty() || seenBoxes.insert(offset).second) {
      copyBox(block, extent, Shape(offset.size(), 0), out.data.data(), global,
              offset, extent, dtypeSize(info.type));
      continue;
    }
    // Partial: reduce this rank's term into the box.
    std::vector<char> box(blocks[d]->size());
    copyBox(out.data.data(), global, offset, box.data(), extent,
            Shape(offset.size(), 0), extent, dtypeSize(info.type));
    reduceInto(box.data(), block, numElements(extent), info.type,
               partialKinds[0] == ReduceKind::Avg ? ReduceKind::Sum
                                                  : partialKinds[0]);
    copyBox(box.data(), extent, Shape(offset.size(), 0), out.data.data(),
            global, offset, extent, dtypeSize(info.type));
  }
  if (!partialKinds.empty() && partialKinds[0] == ReduceKind::Avg)
    scaleBy(out.data.data(), numElements(global), info.type,
            static_cast<double>(partialCount));
  return Status::success();
}

Shape globalShapeOf(const Mesh &mesh, const TensorInfo &info) {
  if (info.globalShape)
    return *info.globalShape;
  Shape global = info.localShape;
  if (!info.layout)
    return global;
  for (size_t a = 0; a < info.layout->placements.size(); ++a)
    if (info.layout->placements[a].isShard())
      global[info.layout->placements[a].dim] *= mesh.axisSizes[a];
  return global;
}

std::string describeTensor(const Mesh &mesh, const TensorInfo &info) {
  return std::string(dtypeName(info.type)) +
         shapeStr(globalShapeOf(mesh, info)) + " " + layoutOf(mesh, info).str();
}

std::vector<char> convert(const NpyArray &array, DType type) {
  int64_t n = numElements(array.shape);
  std::vector<char> out(n * dtypeSize(type));
  if (array.dtype == type) {
    std::memcpy(out.data(), array.data.data(), out.size());
    return out;
  }
  for (int64_t i = 0; i < n; ++i)
    storeFromDouble(out.data(), type, i,
                    loadAsDouble(array.data.data(), array.dtype, i));
  return out;
}

Status loadInputs(const Schedule &schedule, const std::string &inputDir,
                  uint64_t seed, std::vector<NpyArray> &globals) {
  globals.assign(schedule.args.size(), NpyArray());
  for (size_t i = 0; i < schedule.args.size(); ++i) {
    const TensorInfo &arg = schedule.args[i];
    if (!inputDir.empty()) {
      if (Status s = readInput(schedule, inputDir, i, globals[i]); !s.ok())
        return s;
      continue;
    }
    for (int64_t d : arg.localShape)
      if (d < 0 && !arg.globalShape)
        return Status::error(
            "argument " + std::to_string(i) + " of " + schedule.name +
            " has rank-dependent dims and no spmd.global_type; give its "
            "global value with --input-dir");
    globals[i] = generate(arg, globalShapeOf(schedule.mesh, arg), seed + i);
  }
  return Status::success();
}

std::vector<char> scatterTensor(const Mesh &mesh, const TensorInfo &info,
                                const void *global, const Shape &globalShape,
                                int64_t device, Shape &shape) {
  Layout layout = layoutOf(mesh, info);
  std::vector<int64_t> coords = mesh.coords(device);
  shape = localShape(mesh, layout, globalShape, coords);
  std::vector<char> block(numElements(shape) * dtypeSize(info.type), 0);
  // A partial input: for sum, group index 0 holds the value and the others
  // zero; for avg/max/min every member holds it.
  for (size_t a = 0; a < coords.size(); ++a)
    if (layout.placements[a].isPartial() &&
        layout.placements[a].reduce == ReduceKind::Sum && coords[a] != 0)
      return block;
  std::vector<Range> ranges = localRanges(mesh, layout, globalShape, coords);
  Shape offset;
  for (const Range &r : ranges)
    offset.push_back(r.offset);
  copyBox(global, globalShape, offset, block.data(), shape,
          Shape(offset.size(), 0), shape, dtypeSize(info.type));
  return block;
}

void scatterInputs(const Schedule &schedule,
                   const std::vector<NpyArray> &globals, RankBlocks &local,
                   RankShapes &localShapes) {
  const Mesh &mesh = schedule.mesh;
  local.assign(mesh.numDevices(), {});
  localShapes.assign(mesh.numDevices(), {});
  for (size_t i = 0; i < schedule.args.size(); ++i) {
    const TensorInfo &arg = schedule.args[i];
    std::vector<char> global = convert(globals[i], arg.type);
    for (int64_t d = 0; d < mesh.numDevices(); ++d) {
      Shape shape;
      local[d].push_back(
          scatterTensor(mesh, arg, global.data(), globals[i].shape, d, shape));
      localShapes[d].push_back(shape);
    }
  }
}

Status assembleResults(const Schedule &schedule, const RankBlocks &outputs,
                       const RankShapes &outShapes,
                       std::vector<NpyArray> &results) {
  results.assign(schedule.results.size(), NpyArray());
  for (size_t i = 0; i < schedule.results.size(); ++i) {
    std::vector<const std::vector<char> *> blocks;
    std::vector<Shape> shapes;
    for (int64_t d = 0; d < schedule.mesh.numDevices(); ++d) {
      blocks.push_back(&outputs[d][i]);
      shapes.push_back(outShapes[d][i]);
    }
    if (Status s = assembleTensor(schedule.mesh, schedule.results[i],
                                  "result " + std::to_string(i), blocks, shapes,
                                  results[i]);
        !s.ok())
      return s;
  }
  return Status::success();
}

Status writeResults(const std::string &outputDir,
                    const std::vector<NpyArray> &results) {
  for (size_t i = 0; i < results.size(); ++i) {
    std::string path = outputDir + "/result" + std::to_string(i) + ".npy";
    const NpyArray &array = results[i];
    Status s = Status::success();
    if (array.dtype != DType::BF16) {
      s = writeNpy(path, array.dtype, array.shape, array.data.data());
    } else {
      std::vector<char> wide = convert(array, DType::F32);
      s = writeNpy(path, DType::F32, array.shape, wide.data());
    }
    if (!s.ok())
      return s;
  }
  return Status::success();
}

} // namespace spmd::plan
