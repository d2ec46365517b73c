//===- ProgramFile.h - A program file ready for the CPU executor -*- C++
//-*-===//
//
// loadCpuProgram behind a header without MLIR: the program's MLIR context,
// module, schedule and JIT-compiled kernels in one object, for code built
// apart from LLVM's flags (the Python module, which needs exceptions and
// RTTI that Debian's LLVM is built without).
//
//===----------------------------------------------------------------------===//

#ifndef SPMD_TARGETS_CPU_PROGRAMFILE_H
#define SPMD_TARGETS_CPU_PROGRAMFILE_H

#include "runtime/Executor.h"
#include "runtime/Plan.h"

#include <memory>
#include <string>
#include <vector>

namespace spmd {

class ProgramFile {
public:
  /// `file`'s entry `entry` ("" when it has one), compiled to a plan with
  /// spmd-compile{partition=`partition`: auto, on or off} when it is none.
  /// Null and `error` (naming the file) on failure.
  static std::unique_ptr<ProgramFile> load(const std::string &file,
                                           const std::string &entry,
                                           const std::string &partition,
                                           std::string &error);
  virtual ~ProgramFile();
  virtual const plan::Schedule &schedule() const = 0;
  virtual std::vector<plan::KernelFn> kernels() const = 0;
};

} // namespace spmd

#endif // SPMD_TARGETS_CPU_PROGRAMFILE_H
