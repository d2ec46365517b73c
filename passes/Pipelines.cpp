//===- Pipelines.cpp - named spmd pass pipelines --------------------------===//

#include "passes/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassOptions.h"
#include "mlir/Pass/PassRegistry.h"

using namespace mlir;

namespace {
struct PartitionPipelineOptions
    : public PassPipelineOptions<PartitionPipelineOptions> {
  Option<bool> explain{*this, "explain",
                       llvm::cl::desc("explain every inserted reshard and "
                                      "collective with a remark"),
                       llvm::cl::init(false)};
  Option<bool> bucket{*this, "bucket",
                      llvm::cl::desc("bucket small all_reduces, "
                                     "reduce_scatters and all_gathers into "
                                     "few large ones"),
                      llvm::cl::init(true)};
  Option<int64_t> bucketCapBytes{
      *this, "bucket-cap-bytes",
      llvm::cl::desc("byte cap of one bucket (0: no cap)"),
      llvm::cl::init(25 * 1024 * 1024)};
  Option<int64_t> firstBucketCapBytes{
      *this, "first-bucket-cap-bytes",
      llvm::cl::desc("byte cap of the first bucket of each kind (0: "
                     "bucket-cap-bytes)"),
      llvm::cl::init(1024 * 1024)};
  Option<int64_t> gatherReduceBytes{
      *this, "gather-reduce-bytes",
      llvm::cl::desc("a sum all_reduce rides in an all_gather when that "
                     "costs at most this many more bytes per rank (0: never)"),
      llvm::cl::init(64 * 1024)};
};
} // namespace

/// Global annotated program -> local program with optimized collectives.
static void
buildPartitionPipelineWith(OpPassManager &pm,
                           const PartitionPipelineOptions &options) {
  pm.addPass(spmd::createSPMDExpandRandom());
  pm.addNestedPass<func::FuncOp>(spmd::createSPMDDeferScales());
  pm.addNestedPass<func::FuncOp>(spmd::createSPMDFoldReshapes());
  spmd::SPMDPropagateOptions propagate;
  propagate.explain = options.explain;
  pm.addPass(spmd::createSPMDPropagate(propagate));
  pm.addNestedPass<func::FuncOp>(spmd::createSPMDHoistGathers());
  spmd::SPMDPartitionOptions partition;
  partition.explain = options.explain;
  pm.addPass(spmd::createSPMDPartition(partition));
  pm.addNestedPass<func::FuncOp>(spmd::createSPMDDedupCollectives());
  if (options.bucket) {
    spmd::SPMDBucketCollectivesOptions bucket;
    bucket.capBytes = options.bucketCapBytes;
    bucket.firstCapBytes = options.firstBucketCapBytes;
    bucket.gatherReduceBytes = options.gatherReduceBytes;
    pm.addNestedPass<func::FuncOp>(spmd::createSPMDBucketCollectives(bucket));
  }
}

void spmd::buildPartitionPipeline(OpPassManager &pm, bool bucket) {
  PartitionPipelineOptions options;
  options.bucket = bucket;
  buildPartitionPipelineWith(pm, options);
}

void spmd::registerSPMDPipelines() {
  PassPipelineRegistration<PartitionPipelineOptions>(
      "spmd-partition-pipeline",
      "propagate layouts, partition into the local program, deduplicate and "
      "bucket its collectives",
      buildPartitionPipelineWith);
}
