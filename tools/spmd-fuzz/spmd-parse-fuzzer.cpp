//===- spmd-parse-fuzzer.cpp - libFuzzer target: parse, verify, print ----===//
//
// Each input is MLIR source text. It goes through what every spmd tool does
// first: the scan for text upstream's parser crashes on
// (core/ParseHazards.h), then parsing with spmd-opt's dialect registry
// (every upstream dialect, spmd, the sharding-rule models) without
// verifying, the checks and verifiers of passes/InputCheck.h's verifyInput,
// and printing the verified module. A crash, an abort or an assertion is a
// finding; an error is the expected answer to most inputs.
//
// Built only with -DSPMD_FUZZERS=ON and clang (tools/spmd-fuzz/README.md):
//   build-fuzz/bin/spmd-parse-fuzzer -max_total_time=300 corpus/
//
//===----------------------------------------------------------------------===//

#include "core/ParseHazards.h"
#include "dialects/spmd/SPMDOps.h"
#include "passes/InputCheck.h"
#include "rules/ShardingRuleOpInterface.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/Parser/Parser.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/raw_ostream.h"

#include <cstddef>
#include <cstdint>

static mlir::DialectRegistry &registry() {
  static mlir::DialectRegistry *r = [] {
    auto *reg = new mlir::DialectRegistry();
    mlir::registerAllDialects(*reg);
    mlir::registerAllExtensions(*reg);
    reg->insert<spmd::SPMDDialect>();
    spmd::registerShardingRuleExternalModels(*reg);
    return reg;
  }();
  return *r;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  llvm::StringRef source(reinterpret_cast<const char *>(data), size);
  if (spmd::findParseHazard(std::string_view(source.data(), source.size())))
    return 0; // the tools stop here with an error
  mlir::MLIRContext context(registry(), mlir::MLIRContext::Threading::DISABLED);
  // Diagnostics are the expected outcome; printing them would only slow
  // the fuzzer down.
  mlir::ScopedDiagnosticHandler quiet(
      &context, [](mlir::Diagnostic &) { return mlir::success(); });
  llvm::SourceMgr sourceMgr;
  sourceMgr.AddNewSourceBuffer(
      llvm::MemoryBuffer::getMemBufferCopy(source, "input.mlir"),
      llvm::SMLoc());
  mlir::OwningOpRef<mlir::ModuleOp> module =
      mlir::parseSourceFile<mlir::ModuleOp>(
          sourceMgr, mlir::ParserConfig(&context, /*verifyAfterParse=*/false));
  if (!module || failed(spmd::verifyInput(*module)))
    return 0;
  std::string printed;
  llvm::raw_string_ostream os(printed);
  module->print(os);
  return 0;
}
