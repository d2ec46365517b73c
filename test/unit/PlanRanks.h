//===- PlanRanks.h - Plan-runtime tests over in-process ranks ---*- C++ -*-===//

#ifndef SPMD_TEST_UNIT_PLANRANKS_H
#define SPMD_TEST_UNIT_PLANRANKS_H

#include "runtime/CommCollectives.h"
#include "runtime/InProcessComm.h"

#include <functional>

namespace spmd::test {

/// Runs `fn(comm)` on every rank of `mesh` as threads (runtime/InProcessComm
/// through the executor's Collectives interface).
inline void runRanks(const Mesh &mesh,
                     const std::function<void(plan::CommCollectives &)> &fn) {
  InProcessWorld world(mesh);
  world.run([&](InProcessComm &rank) {
    plan::CommCollectives comm(rank);
    fn(comm);
  });
}

} // namespace spmd::test

#endif // SPMD_TEST_UNIT_PLANRANKS_H
