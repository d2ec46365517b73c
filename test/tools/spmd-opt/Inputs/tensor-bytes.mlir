// Tensors whose byte size overflows int64, wherever the type appears.

func.func @argument(%a: tensor<4611686018427387904x2xi8>) {
// expected-error @-1 {{'func.func' op argument #0 has type 'tensor<4611686018427387904x2xi8>', whose byte size overflows int64}}
  return
}

// -----

// expected-error @+1 {{'func.func' op function result #0 has type 'tensor<2305843009213693952xi32>', whose byte size overflows int64}}
func.func private @declaration() -> tensor<2305843009213693952xi32>

// -----

// Dynamic dims count as one element: the static ones overflow alone.
func.func @dynamic(%n: index) {
  // expected-error @+1 {{'tensor.empty' op result #0 has type 'tensor<?x4611686018427387904xindex>', whose byte size overflows int64}}
  %e = tensor.empty(%n) : tensor<?x4611686018427387904xindex>
  return
}

// -----

func.func @complex() {
  // expected-error @+1 {{'tensor.empty' op result #0 has type 'tensor<1152921504606846976xcomplex<f32>>', whose byte size overflows int64}}
  %e = tensor.empty() : tensor<1152921504606846976xcomplex<f32>>
  return
}

// -----

// expected-error @+1 {{'func.func' op region argument #0 has type 'tensor<4611686018427387904xi16>', whose byte size overflows int64}}
func.func @block() {
  return
^bb1(%t: tensor<4611686018427387904xi16>):
  return
}

// -----

// INT64_MAX bytes fit.
func.func @fits(%a: tensor<9223372036854775807xi8>) -> tensor<9223372036854775807xi8> {
  return %a : tensor<9223372036854775807xi8>
}
