// RUN: spmd-opt %s --split-input-file --verify-diagnostics

func.func @unknown(%seed: tensor<i64>, %step: tensor<i64>) -> tensor<4xf32> {
  // expected-error @+1 {{'spmd.random' op unknown distribution 'gamma' (uniform, normal or bernoulli)}}
  %r = spmd.random "gamma"(1.0, 1.0) seed %seed step %step : tensor<4xf32>
  return %r : tensor<4xf32>
}

// -----

func.func @bad_p(%seed: tensor<i64>, %step: tensor<i64>) -> tensor<4xf32> {
  // expected-error @+1 {{'spmd.random' op bernoulli needs a probability in [0, 1], got 1.5}}
  %r = spmd.random "bernoulli"(1.5, 0.0) seed %seed step %step : tensor<4xf32>
  return %r : tensor<4xf32>
}

// -----

func.func @int_uniform(%seed: tensor<i64>, %step: tensor<i64>) -> tensor<4xi32> {
  // expected-error @+1 {{'spmd.random' op uniform needs a float result, got 'i32'}}
  %r = spmd.random "uniform"(0.0, 1.0) seed %seed step %step : tensor<4xi32>
  return %r : tensor<4xi32>
}

// -----

func.func @bad_bounds(%seed: tensor<i64>, %step: tensor<i64>) -> tensor<4xf32> {
  // expected-error @+1 {{'spmd.random' op uniform needs finite bounds with a <= b, got [2.000000e+00, 1.000000e+00)}}
  %r = spmd.random "uniform"(2.0, 1.0) seed %seed step %step : tensor<4xf32>
  return %r : tensor<4xf32>
}

// -----

func.func @bad_std(%seed: tensor<i64>, %step: tensor<i64>) -> tensor<4xf32> {
  // expected-error @+1 {{'spmd.random' op normal needs a finite mean and a standard deviation >= 0}}
  %r = spmd.random "normal"(0.0, -1.0) seed %seed step %step : tensor<4xf32>
  return %r : tensor<4xf32>
}

// -----

func.func @seed_type(%seed: tensor<i32>, %step: tensor<i64>) -> tensor<4xf32> {
  // (the generic form: the custom one types the seed tensor<i64> itself)
  // expected-error @+1 {{operand #0 must be 0D tensor of 64-bit signless integer values}}
  %r = "spmd.random"(%seed, %step) <{distribution = "uniform", a = 0.0 : f64, b = 1.0 : f64}> : (tensor<i32>, tensor<i64>) -> tensor<4xf32>
  return %r : tensor<4xf32>
}

// -----

func.func @dynamic(%seed: tensor<i64>, %step: tensor<i64>) -> tensor<?xf32> {
  // expected-error @+1 {{result #0 must be statically shaped tensor of any type values}}
  %r = spmd.random "uniform"(0.0, 1.0) seed %seed step %step : tensor<?xf32>
  return %r : tensor<?xf32>
}
