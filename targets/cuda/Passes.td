//===- Passes.td - spmd CUDA target passes -----------------*- tablegen -*-===//
//
// The passes of the CUDA target: kernels printed as CUDA C++ (and compiled with
// NVRTC).
// Registered through registerCudaPasses() in targets/cuda/Passes.h;
// one pass per .cpp file in this folder.
//
//===----------------------------------------------------------------------===//

#ifndef SPMD_TARGETS_CUDA_PASSES_TD
#define SPMD_TARGETS_CUDA_PASSES_TD

include "mlir/Pass/PassBase.td"

def SPMDEmitCuda : Pass<"spmd-emit-cuda", "mlir::ModuleOp"> {
  let summary = "Print the kernels of a plan as CUDA C++ (and compile them "
                "with NVRTC)";
  let description = [{
    Prints every `spmd.plan_kernel` function of a plan as an `extern "C"
    __global__` CUDA C++ function over runtime/cuda/kernels/spmd_kernels.cuh
    (targets/cuda/CudaEmitter.h: parameters, launch rule), all in one translation
    unit, and records the launch rule on each kernel (`spmd_cuda.launch`,
    `spmd_cuda.work`). `output=` writes the translation unit to a file ("-":
    stdout). `embed=true` compiles it with NVRTC for `archs` (cubins + PTX)
    and stores runtime/cuda/CudaModule.h's serializeModule bytes in the module
    attribute `spmd_cuda.module`. A kernel that cannot be printed is an
    error naming the op and the reason.
  }];
  let options = [
    Option<"output", "output", "std::string", "\"\"",
           "File to write the CUDA C++ translation unit to (- for stdout)">,
    Option<"embed", "embed", "bool", "false",
           "Compile with NVRTC and embed the images in the plan">,
    ListOption<"archs", "archs", "int", "SM versions for embed (default 80,90)">,
    Option<"rowReductions", "row-reductions", "bool", "true",
           "One warp per row for reductions over the innermost loop">
  ];
}

#endif // SPMD_TARGETS_CUDA_PASSES_TD
