// RUN: spmd-opt %s --spmd-auto-shard=report=%t.report -o /dev/null
// RUN: FileCheck %s < %t.report

// The report names optimizer state as such: an updated argument that does
// not reach the outputs (here %m: only its own update and %w's), with the
// parameter whose update it feeds, instead of a Linear's style. A second
// state-like argument feeding two parameters' updates names none.

spmd.mesh @mesh ["tp"=4]

// CHECK: spmd-auto-shard plan for @step on mesh @mesh [tp=4]
// CHECK-NEXT: arg0 tensor<8x64xf32> [R]  given, input
// CHECK-NEXT: arg1 tensor<64x256xf32> [{{[^]]*}}]  chosen, tp: {{Colwise|Rowwise|Replicate|FSDP}}
// CHECK-NEXT: arg2 tensor<64x256xf32> [{{[^]]*}}]  chosen, optimizer state of arg1{{(, as its parameter)?}}{{(, tp: S\([01]\))?$}}
// CHECK-NEXT: arg3 tensor<64x256xf32> [{{[^]]*}}]  chosen, input
// CHECK-NEXT: arg4 tensor<64x256xf32> [{{[^]]*}}]  chosen, tp: {{Colwise|Rowwise|Replicate|FSDP}}
// CHECK-NEXT: arg5 tensor<64x256xf32> [{{[^]]*}}]  chosen, optimizer state{{(, tp: S\([01]\))?$}}
func.func @step(%x: tensor<8x64xf32> {spmd.layout = #spmd.layout<@mesh, [R]>},
                %w: tensor<64x256xf32>, %m: tensor<64x256xf32>,
                %g: tensor<64x256xf32>, %v: tensor<64x256xf32>,
                %s: tensor<64x256xf32>)
    -> (tensor<8x256xf32>, tensor<64x256xf32> {spmd.updates = 1 : i64},
        tensor<64x256xf32> {spmd.updates = 2 : i64},
        tensor<64x256xf32> {spmd.updates = 4 : i64},
        tensor<64x256xf32> {spmd.updates = 5 : i64}) {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<8x256xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<8x256xf32>) -> tensor<8x256xf32>
  %wv = arith.addf %w, %v : tensor<64x256xf32>
  %y = linalg.matmul ins(%x, %wv : tensor<8x64xf32>, tensor<64x256xf32>) outs(%f : tensor<8x256xf32>) -> tensor<8x256xf32>
  %m2 = arith.addf %m, %g : tensor<64x256xf32>
  %w2 = arith.subf %w, %m2 : tensor<64x256xf32>
  %s2 = arith.addf %s, %g : tensor<64x256xf32>
  %w3 = arith.subf %w2, %s2 : tensor<64x256xf32>
  %v2 = arith.subf %v, %s2 : tensor<64x256xf32>
  return %y, %w3, %m2, %v2, %s2 : tensor<8x256xf32>, tensor<64x256xf32>, tensor<64x256xf32>, tensor<64x256xf32>, tensor<64x256xf32>
}
