// RUN: spmd-opt %s --spmd-print-op-rules --verify-diagnostics -o /dev/null
// Rules of arith and math ops (rules/ArithRules.cpp): constants are
// replicated; elementwise ops share one factor per dim, with the partial
// alternatives of Linearity.h. A trailing `}` of each rule is left out of
// the expectations (`}}` would end them).
func.func @elementwise(%a: tensor<4x8xf32>, %b: tensor<4x8xf32>, %c: tensor<4x8xi1>) -> (tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf16>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>) {
  // expected-remark @below {{sharding rule: ([i, j], [i, j]) -> ([i, j]) {i=4, j=8} partial={(0): max|min; (1): max|min; (0, 1): sum|avg}}
  %add = arith.addf %a, %b : tensor<4x8xf32>
  // expected-remark @below {{sharding rule: ([i, j], [i, j]) -> ([i, j]) {i=4, j=8} partial={(0): max|min; (0, 1): sum|avg}}
  %sub = arith.subf %a, %b : tensor<4x8xf32>
  // expected-remark @below {{sharding rule: ([i, j], [i, j]) -> ([i, j]) {i=4, j=8} partial={(0): sum|avg; (1): sum|avg}}
  %mul = arith.mulf %a, %b : tensor<4x8xf32>
  // expected-remark @below {{sharding rule: ([i, j], [i, j]) -> ([i, j]) {i=4, j=8} partial={(0): sum|avg}}
  %div = arith.divf %a, %b : tensor<4x8xf32>
  // expected-remark @below {{sharding rule: ([i, j]) -> ([i, j]) {i=4, j=8} partial={(0): sum|avg}}
  %neg = arith.negf %a : tensor<4x8xf32>
  // expected-remark @below {{sharding rule: ([i, j]) -> ([i, j]) {i=4, j=8} partial={(0): sum|avg|max|min}}
  %tr = arith.truncf %a : tensor<4x8xf32> to tensor<4x8xf16>
  // expected-remark @below {{sharding rule: ([i, j], [i, j]) -> ([i, j]) {i=4, j=8} partial={(0): max; (1): max; (0, 1): max}}
  %max = arith.maximumf %a, %b : tensor<4x8xf32>
  // expected-remark @below {{sharding rule: ([i, j], [i, j], [i, j]) -> ([i, j]) {i=4, j=8}}
  %sel = arith.select %c, %a, %b : tensor<4x8xi1>, tensor<4x8xf32>
  // expected-remark @below {{sharding rule: ([i, j]) -> ([i, j]) {i=4, j=8}}
  %exp = math.exp %a : tensor<4x8xf32>
  return %add, %sub, %mul, %div, %neg, %tr, %max, %sel, %exp : tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf16>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>
}
func.func @constants() -> (tensor<4xf32>, tensor<2xf32>) {
  // expected-remark @below {{sharding rule: () -> ([-]) {}}
  %s = arith.constant dense<1.0> : tensor<4xf32>
  // expected-remark @below {{sharding rule: () -> ([-]) {}}
  %d = arith.constant dense<[1.0, 2.0]> : tensor<2xf32>
  return %s, %d : tensor<4xf32>, tensor<2xf32>
}
func.func @scalar_condition(%c: i1, %a: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<4xf32> {
  // expected-remark @below {{sharding rule: (_, [i], [i]) -> ([i]) {i=4}}
  %sel = arith.select %c, %a, %b : tensor<4xf32>
  return %sel : tensor<4xf32>
}
