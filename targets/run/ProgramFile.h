//===- ProgramFile.h - A program file ready to run --------------*- C++ -*-===//
//
// A program file loaded for the runtime behind a header without MLIR: the
// program's MLIR context, module, schedule and JIT-compiled kernels in one
// object, and the ranks it runs on a backend (the CPU executor, or the GPU
// executor on a GPU or the emulated one). For code built apart from LLVM's
// flags: the Python module, which needs the exceptions and RTTI that
// Debian's LLVM is built without.
//
//===----------------------------------------------------------------------===//

#ifndef SPMD_TARGETS_RUN_PROGRAMFILE_H
#define SPMD_TARGETS_RUN_PROGRAMFILE_H

#include "runtime/Plan.h"
#include "runtime/Session.h"

#include <memory>
#include <string>

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
  /// The ranks on `backend`: cpu, cuda (a GPU per rank) or cuda-emu (the
  /// CUDA kernels and GPU executor emulated on the CPU); `comm` is the
  /// ranks' host communication (inproc or mpi). The GPU preparation is
  /// made once per backend. An empty maker and `error` on failure.
  virtual plan::RankMaker ranks(const std::string &backend,
                                const std::string &comm,
                                std::string &error) = 0;
};

} // namespace spmd

#endif // SPMD_TARGETS_RUN_PROGRAMFILE_H
