// RUN: spmd-opt %s --spmd-fuse-elementwise | FileCheck %s
// RUN: spmd-opt %s --spmd-compile -o %t.plan
// RUN: %python %spmd_src/bench/cuda/plan_traffic.py %t.plan --top 9 | FileCheck %s --check-prefix=TRAFFIC

// A softmax as the frontend writes it: scale, row max, exp of the
// difference, row sum, divide. The scaled scores and the exponentials each
// have two readers (a row reduction and the next elementwise op); each
// reader gets its own copy of the cheap producer, which fuses, so the
// scores are read three times and only the probabilities written (five
// passes through memory before). A producer that reads two operands at
// its own size (a + b) is not recomputed: its readers would then read
// twice the bytes of its result.

// Compiled, the softmax's kernels (two fills, max, sum, divide) move
// 132,864 bytes: the 32 KiB scores read three times, the probabilities
// written once (263,168 bytes through the five passes before).
// TRAFFIC: 9 kernel launches, 297472 bytes
// TRAFFIC-DAG: softmax_kernel_1: 1 launches, 33024 bytes
// TRAFFIC-DAG: softmax_kernel_3: 1 launches, 33280 bytes
// TRAFFIC-DAG: softmax_kernel_4: 1 launches, 66048 bytes

#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>

// CHECK-LABEL: func.func @softmax(
// CHECK-SAME: %[[X:.*]]: tensor<64x128xf32>
// CHECK: %[[MAX:.*]] = linalg.generic {{.*}} iterator_types = ["parallel", "reduction"]} ins(%[[X]] : tensor<64x128xf32>)
// CHECK: arith.mulf
// CHECK: arith.maximumf
// CHECK: %[[SUM:.*]] = linalg.generic {{.*}} iterator_types = ["parallel", "reduction"]} ins(%[[X]], %[[MAX]] : tensor<64x128xf32>, tensor<64xf32>)
// CHECK: math.exp
// CHECK: linalg.generic {{.*}} iterator_types = ["parallel", "parallel"]} ins(%[[X]], %[[MAX]], %[[SUM]] : tensor<64x128xf32>, tensor<64xf32>, tensor<64xf32>)
// CHECK: math.exp
// CHECK: arith.divf
// CHECK-NOT: linalg.generic
// CHECK: return
func.func @softmax(%x: tensor<64x128xf32>) -> tensor<64x128xf32> {
  %scale = arith.constant 0.125 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<64x128xf32>
  %s = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x : tensor<64x128xf32>) outs(%e : tensor<64x128xf32>) {
  ^bb0(%a: f32, %o: f32):
    %r = arith.mulf %a, %scale : f32
    linalg.yield %r : f32
  } -> tensor<64x128xf32>
  %er = tensor.empty() : tensor<64xf32>
  %minit = linalg.fill ins(%ninf : f32) outs(%er : tensor<64xf32>) -> tensor<64xf32>
  %m = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]}
      ins(%s : tensor<64x128xf32>) outs(%minit : tensor<64xf32>) {
  ^bb0(%a: f32, %o: f32):
    %r = arith.maximumf %a, %o : f32
    linalg.yield %r : f32
  } -> tensor<64xf32>
  %e2 = tensor.empty() : tensor<64x128xf32>
  %x2 = linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel"]}
      ins(%s, %m : tensor<64x128xf32>, tensor<64xf32>) outs(%e2 : tensor<64x128xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %d = arith.subf %a, %b : f32
    %r = math.exp %d : f32
    linalg.yield %r : f32
  } -> tensor<64x128xf32>
  %sinit = linalg.fill ins(%zero : f32) outs(%er : tensor<64xf32>) -> tensor<64xf32>
  %sum = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]}
      ins(%x2 : tensor<64x128xf32>) outs(%sinit : tensor<64xf32>) {
  ^bb0(%a: f32, %o: f32):
    %r = arith.addf %a, %o : f32
    linalg.yield %r : f32
  } -> tensor<64xf32>
  %e3 = tensor.empty() : tensor<64x128xf32>
  %p = linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x2, %sum : tensor<64x128xf32>, tensor<64xf32>) outs(%e3 : tensor<64x128xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %r = arith.divf %a, %b : f32
    linalg.yield %r : f32
  } -> tensor<64x128xf32>
  return %p : tensor<64x128xf32>
}

// CHECK-LABEL: func.func @two_inputs(
// CHECK: %[[ADD:.*]] = linalg.generic {{.*}} iterator_types = ["parallel", "parallel"]}
// CHECK: arith.addf
// CHECK: linalg.generic {{.*}} ins(%[[ADD]] :
// CHECK: linalg.generic {{.*}} ins(%[[ADD]] :
func.func @two_inputs(%a: tensor<64x128xf32>, %b: tensor<64x128xf32>) -> (tensor<64xf32>, tensor<64xf32>) {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<64x128xf32>
  %s = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%a, %b : tensor<64x128xf32>, tensor<64x128xf32>) outs(%e : tensor<64x128xf32>) {
  ^bb0(%x: f32, %y: f32, %o: f32):
    %r = arith.addf %x, %y : f32
    linalg.yield %r : f32
  } -> tensor<64x128xf32>
  %er = tensor.empty() : tensor<64xf32>
  %init = linalg.fill ins(%zero : f32) outs(%er : tensor<64xf32>) -> tensor<64xf32>
  %r1 = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]}
      ins(%s : tensor<64x128xf32>) outs(%init : tensor<64xf32>) {
  ^bb0(%x: f32, %o: f32):
    %r = arith.addf %x, %o : f32
    linalg.yield %r : f32
  } -> tensor<64xf32>
  %r2 = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]}
      ins(%s : tensor<64x128xf32>) outs(%init : tensor<64xf32>) {
  ^bb0(%x: f32, %o: f32):
    %r = arith.maximumf %x, %o : f32
    linalg.yield %r : f32
  } -> tensor<64xf32>
  return %r1, %r2 : tensor<64xf32>, tensor<64xf32>
}
