func.func @valid() -> (i64, tensor<2xi64>) {
  %c = arith.constant -9223372036854775808 : i64
  %d = arith.constant dense<[-9223372036854775808, 1]> : tensor<2xi64>
  %e = arith.constant {test.note = [-9223372036854775808 : i64]} -9223372036854775808 : i64
  return %c, %d : i64, tensor<2xi64>
}
