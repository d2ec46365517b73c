// RUN: spmd-opt %s --spmd-auto-shard=report=%t.report | FileCheck %s
// RUN: FileCheck %s --check-prefix=REPORT < %t.report

// A matmul pinned by the user to rows (its only candidate, Shard(M)) needs
// its accumulator in rows too: the search reads the pinned op's needs from
// that candidate (it read them from "replicated", and filled the
// accumulator replicated).

// CHECK: linalg.fill {spmd.layout = #spmd.layout<@mesh, [S(0)]>}
// REPORT: communication 0.000 ms (0 B per rank), peak memory 10.0 KiB per device

spmd.mesh @mesh ["x"=4]

func.func @pinned(%x: tensor<64x32xf32> {spmd.layout = #spmd.layout<@mesh, [S(0)]>},
                  %w: tensor<32x32xf32> {spmd.layout = #spmd.layout<@mesh, [R]>})
    -> (tensor<64x32xf32> {spmd.layout = #spmd.layout<@mesh, [S(0)]>}) {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<64x32xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<64x32xf32>) -> tensor<64x32xf32>
  %y = linalg.matmul {spmd.layout = #spmd.layout<@mesh, [S(0)]>}
         ins(%x, %w : tensor<64x32xf32>, tensor<32x32xf32>)
         outs(%f : tensor<64x32xf32>) -> tensor<64x32xf32>
  return %y : tensor<64x32xf32>
}
