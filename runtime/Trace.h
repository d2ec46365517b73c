//===- Trace.h - Timelines of executed steps --------------------*- C++ -*-===//
//
// What spmd-run --trace/--profile and the Python module write from the
// executors' TraceEvents: a Chrome trace (JSON trace events, opens in
// Perfetto: a track per rank, a span per step) and a profile summary (time
// by step kind, the costliest kernels).
//
//===----------------------------------------------------------------------===//

#ifndef SPMD_RUNTIME_TRACE_H
#define SPMD_RUNTIME_TRACE_H

#include "runtime/Executor.h"

#include <string>
#include <vector>

namespace spmd::plan {

/// A trace event's category: the step kind, every communication step
/// ("partial_from_replicated" and "shard" too) as "collective".
const char *traceCategory(StepKind kind);

/// Writes the Chrome trace of `ranks` (a track each; `events[d]` is rank
/// d's) to `path`; an error message or "".
std::string writeChromeTrace(const std::string &path,
                             const std::vector<std::vector<TraceEvent>> &events,
                             const std::vector<int64_t> &ranks);

/// The profile of one rank's `events` over `steps` steps: total time, time
/// by step kind, and the `topKernels` costliest kernels, a line each.
std::string profileSummary(const std::vector<TraceEvent> &events, int64_t steps,
                           int64_t rank, size_t topKernels = 5);

} // namespace spmd::plan

#endif // SPMD_RUNTIME_TRACE_H
