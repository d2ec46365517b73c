// RUN: spmd-opt %s --spmd-print-op-rules --verify-diagnostics -o /dev/null
// Rules of linalg structured ops (rules/LinalgRules.cpp): one factor per
// loop, results tied to their inits, partial alternatives from the payload's
// linearity. A trailing `}` of each rule is left out of the expectations
// (`}}` would end them).
func.func @matmul(%a: tensor<13x16xf32>, %b: tensor<16x32xf32>, %c: tensor<13x32xf32>) -> tensor<13x32xf32> {
  // expected-remark @below {{sharding rule: ([i, k], [k, j], [i, j]) -> ([i, j]) {i=13, j=32, k=16} reduction={k: sum} init={2->0} partial={(0, 2): sum|avg; (1, 2): sum|avg}}
  %0 = linalg.matmul ins(%a, %b : tensor<13x16xf32>, tensor<16x32xf32>) outs(%c : tensor<13x32xf32>) -> tensor<13x32xf32>
  return %0 : tensor<13x32xf32>
}
func.func @reductions(%x: tensor<8x16xf32>, %s: tensor<8xf32>) -> (tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) {
  // expected-remark @below {{sharding rule: ([i, j], [i]) -> ([i]) {i=8, j=16} reduction={j: sum} init={1->0} partial={(0, 1): sum|avg}}
  %sum = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i)>], iterator_types = ["parallel", "reduction"]}
      ins(%x : tensor<8x16xf32>) outs(%s : tensor<8xf32>) {
    ^bb0(%in: f32, %out: f32):
      %r = arith.addf %out, %in : f32
      linalg.yield %r : f32
  } -> tensor<8xf32>
  // expected-remark @below {{sharding rule: ([i, j], [i]) -> ([i]) {i=8, j=16} reduction={j: max} init={1->0} partial={(0, 1): max}}
  %max = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i)>], iterator_types = ["parallel", "reduction"]}
      ins(%x : tensor<8x16xf32>) outs(%s : tensor<8xf32>) {
    ^bb0(%in: f32, %out: f32):
      %r = arith.maximumf %in, %out : f32
      linalg.yield %r : f32
  } -> tensor<8xf32>
  // expected-remark @below {{sharding rule: ([i, j], [i]) -> ([i]) {i=8, j=16} need_replication={j} init={1->0}}
  %unknown = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i)>], iterator_types = ["parallel", "reduction"]}
      ins(%x : tensor<8x16xf32>) outs(%s : tensor<8xf32>) {
    ^bb0(%in: f32, %out: f32):
      %r = arith.mulf %out, %in : f32
      linalg.yield %r : f32
  } -> tensor<8xf32>
  return %sum, %max, %unknown : tensor<8xf32>, tensor<8xf32>, tensor<8xf32>
}
func.func @index(%x: tensor<8x16xf32>) -> tensor<8x16xf32> {
  // expected-remark @below {{sharding rule: ([i, j], [i, j]) -> ([i, j]) {i=8, j=16} init={1->0} partial={(0, 1): max|min}}
  %0 = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>], iterator_types = ["parallel", "parallel"]}
      ins(%x : tensor<8x16xf32>) outs(%x : tensor<8x16xf32>) {
    ^bb0(%in: f32, %out: f32):
      %j = linalg.index 1 : index
      %ji = arith.index_cast %j : index to i64
      %jf = arith.sitofp %ji : i64 to f32
      %r = arith.addf %in, %jf : f32
      linalg.yield %r : f32
  } -> tensor<8x16xf32>
  return %0 : tensor<8x16xf32>
}
func.func @conv(%x: tensor<20xf32>, %w: tensor<5xf32>, %y: tensor<16xf32>) -> tensor<16xf32> {
  // expected-remark @below {{sharding rule: ([-], [j], [i]) -> ([i]) {i=16, j=5} need_replication={i, j} init={2->0} partial={(0, 2): sum|avg; (1, 2): sum|avg}}
  %0 = linalg.conv_1d ins(%x, %w : tensor<20xf32>, tensor<5xf32>) outs(%y : tensor<16xf32>) -> tensor<16xf32>
  return %0 : tensor<16xf32>
}
func.func @structured(%x: tensor<4x8xf32>, %v: tensor<8xf32>, %t: tensor<8x4xf32>, %b: tensor<4x8xf32>, %a: tensor<4x8xf32>) -> (tensor<8x4xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>) {
  // expected-remark @below {{sharding rule: ([j, i], [i, j]) -> ([i, j]) {i=8, j=4} init={1->0} partial={(0, 1): sum|avg|max|min}}
  %0 = linalg.transpose ins(%x : tensor<4x8xf32>) outs(%t : tensor<8x4xf32>) permutation = [1, 0]
  // expected-remark @below {{sharding rule: ([j], [i, j]) -> ([i, j]) {i=4, j=8} init={1->0} partial={(0, 1): sum|avg|max|min}}
  %1 = linalg.broadcast ins(%v : tensor<8xf32>) outs(%b : tensor<4x8xf32>) dimensions = [0]
  // expected-remark @below {{sharding rule: ([i, j], [i, j], [i, j]) -> ([i, j]) {i=4, j=8} init={2->0} partial={(0, 2): max|min; (1, 2): max|min; (0, 1, 2): sum|avg}}
  %2 = linalg.add ins(%x, %a : tensor<4x8xf32>, tensor<4x8xf32>) outs(%b : tensor<4x8xf32>) -> tensor<4x8xf32>
  // expected-remark @below {{sharding rule: ([i, j], [i, j], [i, j]) -> ([i, j]) {i=4, j=8} init={2->0} partial={(0, 2): sum|avg; (1, 2): sum|avg}}
  %3 = linalg.mul ins(%x, %a : tensor<4x8xf32>, tensor<4x8xf32>) outs(%b : tensor<4x8xf32>) -> tensor<4x8xf32>
  return %0, %1, %2, %3 : tensor<8x4xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>
}
func.func @fills(%e: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>) {
  %zero = arith.constant 0.0 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %one = arith.constant 1.0 : f32
  // expected-remark @below {{sharding rule: (_, [i, j]) -> ([i, j]) {i=4, j=8} init={1->0} partial={(1): sum|avg}}
  %0 = linalg.fill ins(%zero : f32) outs(%e : tensor<4x8xf32>) -> tensor<4x8xf32>
  // expected-remark @below {{sharding rule: (_, [i, j]) -> ([i, j]) {i=4, j=8} init={1->0} partial={(1): max}}
  %1 = linalg.fill ins(%ninf : f32) outs(%e : tensor<4x8xf32>) -> tensor<4x8xf32>
  // expected-remark @below {{sharding rule: (_, [i, j]) -> ([i, j]) {i=4, j=8} init={1->0}}
  %2 = linalg.fill ins(%one : f32) outs(%e : tensor<4x8xf32>) -> tensor<4x8xf32>
  return %0, %1, %2 : tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>
}
