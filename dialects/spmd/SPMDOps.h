//===- SPMDOps.h - spmd operations ------------------------------*- C++ -*-===//

#ifndef SPMD_DIALECTS_SPMD_SPMDOPS_H
#define SPMD_DIALECTS_SPMD_SPMDOPS_H

#include "dialects/spmd/SPMDDialect.h"
#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#define GET_OP_CLASSES
#include "dialects/spmd/SPMDOps.h.inc"

#endif // SPMD_DIALECTS_SPMD_SPMDOPS_H
