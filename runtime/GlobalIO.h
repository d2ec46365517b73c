//===- GlobalIO.h - A run's global inputs and results -----------*- C++ -*-===//
//
// The global side of running a plan on ranks: the global inputs (read from
// .npy files or generated from a seed), every rank's local block of them by
// the arguments' layouts, and the global results assembled from the ranks'
// blocks by the results' layouts (partial ones reduced). Errors are
// messages for the user.
//
//===----------------------------------------------------------------------===//

#ifndef SPMD_RUNTIME_GLOBALIO_H
#define SPMD_RUNTIME_GLOBALIO_H

#include "runtime/Npy.h"
#include "runtime/Plan.h"

#include <cstdint>
#include <string>
#include <vector>

namespace spmd::plan {

/// Every rank's blocks: `[rank][tensor]`, with their shapes.
using RankBlocks = std::vector<std::vector<std::vector<char>>>;
using RankShapes = std::vector<std::vector<Shape>>;

/// The global shape of a tensor: spmd.global_type's when the plan has it,
/// else from the local shape assuming even shards (the layout's shard counts
/// divide the dims).
Shape globalShapeOf(const Mesh &mesh, const TensorInfo &info);

/// "f32[8, 4] <layout>": a tensor's type, global shape and layout.
std::string describeTensor(const Mesh &mesh, const TensorInfo &info);

/// Converts an array to `type` (inputs may come as f32 for f16/bf16 args).
std::vector<char> convert(const NpyArray &array, DType type);

/// The global inputs of `schedule`: DIR/arg<i>.npy when `inputDir` is given
/// (checked against every rank's local shape), else generated from
/// `seed + i` (bf16 as f32).
Status loadInputs(const Schedule &schedule, const std::string &inputDir,
                  uint64_t seed, std::vector<NpyArray> &globals);

/// Every rank's local inputs: its box of the global value; a partial sum
/// input is held by group index 0 and zero elsewhere.
void scatterInputs(const Schedule &schedule,
                   const std::vector<NpyArray> &globals, RankBlocks &local,
                   RankShapes &localShapes);

/// Device `device`'s block of a tensor (`info`: its type and layout) whose
/// global value is `global` (row-major, `info.type`) of `globalShape`; the
/// block's shape in `shape`.
std::vector<char> scatterTensor(const Mesh &mesh, const TensorInfo &info,
                                const void *global, const Shape &globalShape,
                                int64_t device, Shape &shape);

/// A tensor's global value from every rank's block of it (`blocks[d]` of
/// `shapes[d]`, partial terms reduced); `what` names it in messages.
Status assembleTensor(const Mesh &mesh, const TensorInfo &info,
                      const std::string &what,
                      const std::vector<const std::vector<char> *> &blocks,
                      const std::vector<Shape> &shapes, NpyArray &out);

/// The global results from every rank's blocks of them.
Status assembleResults(const Schedule &schedule, const RankBlocks &outputs,
                       const RankShapes &outShapes,
                       std::vector<NpyArray> &results);

/// Writes DIR/result<i>.npy; bf16 (which NumPy lacks) widened to f32.
Status writeResults(const std::string &outputDir,
                    const std::vector<NpyArray> &results);

} // namespace spmd::plan

#endif // SPMD_RUNTIME_GLOBALIO_H
