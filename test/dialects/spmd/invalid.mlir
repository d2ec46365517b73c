// RUN: spmd-opt %s -split-input-file -verify-diagnostics

// expected-error @+1 {{'spmd.mesh' op mesh @m axis name 'dp' is used twice}}
spmd.mesh @m ["dp"=2, "dp"=4]

// -----

// expected-error @+1 {{'spmd.mesh' op mesh @m axis 'tp' has non-positive size 0}}
spmd.mesh @m ["dp"=2, "tp"=0]

// -----

// expected-error @+1 {{'spmd.mesh' op mesh @m has no axes}}
spmd.mesh @m []

// -----

// expected-error @+1 {{'spmd.mesh' op mesh @m axis 0 has an empty name}}
spmd.mesh @m [""=2]

// -----

// expected-error @+1 {{expected string}}
spmd.mesh @m [dp=2]

// -----

spmd.mesh @m ["x"=2]
// expected-error @+1 {{unknown placement 'Q'; expected a placement: R, S(dim) or P(sum|avg|max|min)}}
func.func private @f(tensor<4xf32> {spmd.layout = #spmd.layout<@m, [Q]>})

// -----

spmd.mesh @m ["x"=2]
// expected-error @+1 {{S(dim) needs a non-negative dim, got -1}}
func.func private @f(tensor<4xf32> {spmd.layout = #spmd.layout<@m, [S(-1)]>})

// -----

spmd.mesh @m ["x"=2]
// expected-error @+1 {{unknown partial reduction 'prod'; expected sum, avg, max or min}}
func.func private @f(tensor<4xf32> {spmd.layout = #spmd.layout<@m, [P(prod)]>})

// -----

spmd.mesh @m ["x"=2]
// expected-error @+1 {{expected a placement}}
func.func private @f(tensor<4xf32> {spmd.layout = #spmd.layout<@m, [(0)]>})

// -----

spmd.mesh @m ["x"=2]
// expected-error @+1 {{layout needs one placement per mesh axis, got none}}
func.func private @f(tensor<4xf32> {spmd.layout = #spmd.layout<@m, []>})

// -----

spmd.mesh @m ["x"=2]
// expected-error @+1 {{invalid kind of attribute specified}}
func.func private @f(tensor<4xf32> {spmd.layout = #spmd.layout<"m", [R]>})

// -----

spmd.mesh @m ["x"=2, "y"=2]
// expected-error @+1 {{invalid layout #spmd.layout<@m, [S(0)]> on argument 0: layout has 1 placements but the mesh has 2 axes}}
func.func private @f(tensor<4xf32> {spmd.layout = #spmd.layout<@m, [S(0)]>})

// -----

spmd.mesh @m ["x"=2]
// expected-error @+1 {{invalid layout #spmd.layout<@m, [S(2)]> on argument 0: placement S(2) on mesh axis 'x' shards dim 2 of a rank-2 tensor}}
func.func private @f(tensor<4x4xf32> {spmd.layout = #spmd.layout<@m, [S(2)]>})

// -----

spmd.mesh @m ["x"=2]
// expected-error @+1 {{invalid layout #spmd.layout<@m, [S(1)]> on result 0: placement S(1) on mesh axis 'x' shards dim 1 of a rank-1 tensor}}
func.func private @f() -> (tensor<4xf32> {spmd.layout = #spmd.layout<@m, [S(1)]>})

// -----

// expected-error @+1 {{unknown mesh @nowhere}}
func.func private @f(tensor<4xf32> {spmd.layout = #spmd.layout<@nowhere, [R]>})

// -----

func.func private @g()
// expected-error @+1 {{symbol @g is not an spmd.mesh}}
func.func private @f(tensor<4xf32> {spmd.layout = #spmd.layout<@g, [R]>})

// -----

spmd.mesh @m ["x"=2]
// expected-error @+1 {{layout #spmd.layout<@m, [R]> on argument 0 needs a ranked tensor, but it has type 'f32'}}
func.func private @f(f32 {spmd.layout = #spmd.layout<@m, [R]>})

// -----

spmd.mesh @m ["x"=2]
// expected-error @+1 {{'spmd.layout' on argument 0 must be a #spmd.layout, got 1 : i64}}
func.func private @f(tensor<4xf32> {spmd.layout = 1})

// -----

spmd.mesh @m ["x"=2]
// expected-error @+1 {{unknown spmd attribute 'spmd.placement' on result 0; expected 'spmd.layout'}}
func.func private @f() -> (tensor<4xf32> {spmd.placement = #spmd.layout<@m, [R]>})

// -----

spmd.mesh @m ["x"=2]
func.func @f() {
  // expected-error @+1 {{'spmd.layout' has 2 layouts for 1 results}}
  %0 = tensor.empty() {spmd.layout = [#spmd.layout<@m, [R]>, #spmd.layout<@m, [R]>]} : tensor<4xf32>
  return
}

// -----

spmd.mesh @m ["x"=2]
func.func @f() {
  // expected-error @+1 {{'spmd.layout' must hold #spmd.layout attributes, got 3 : i64}}
  %0 = tensor.empty() {spmd.layout = [3]} : tensor<4xf32>
  return
}

// -----

spmd.mesh @m ["x"=2]
func.func @f() {
  // expected-error @+1 {{invalid layout #spmd.layout<@m, [S(1)]> on result 0: placement S(1) on mesh axis 'x' shards dim 1 of a rank-1 tensor}}
  %0 = tensor.empty() {spmd.layout = #spmd.layout<@m, [S(1)]>} : tensor<4xf32>
  return
}

// -----

spmd.mesh @m ["x"=2]
func.func @f() {
  // expected-error @+1 {{unknown spmd attribute 'spmd.whatever'}}
  %0 = tensor.empty() {spmd.whatever = 1} : tensor<4xf32>
  return
}

// -----

func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{unknown mesh @m}}
  %0 = spmd.constrain %x to #spmd.layout<@m, [R]> : tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

spmd.mesh @m ["x"=2]
func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{invalid layout #spmd.layout<@m, [S(3)]> on the constrained value: placement S(3) on mesh axis 'x' shards dim 3 of a rank-1 tensor}}
  %0 = spmd.constrain %x to #spmd.layout<@m, [S(3)]> : tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

spmd.mesh @m ["x"=2]
func.func @f(%x: tensor<4xf32>) {
  // expected-error @+1 {{expected a #spmd.layout, got "R"}}
  %0 = spmd.constrain %x to "R" : tensor<4xf32>
  return
}

// -----

spmd.mesh @m ["x"=2]
// expected-note @+1 {{prior use here}}
func.func @f(%x: tensor<4xf32>) {
  // expected-error @+1 {{use of value '%x' expects different type than prior uses: 'tensor<8xf32>' vs 'tensor<4xf32>'}}
  %0 = spmd.constrain %x to #spmd.layout<@m, [R]> : tensor<8xf32>
  return
}

// -----

func.func @f(%x: tensor<4xf32>) {
  // expected-error @+1 {{'spmd.all_reduce' op names unknown mesh @m}}
  %0 = spmd.all_reduce %x on @m ["x"] sum : tensor<4xf32>
  return
}

// -----

func.func private @m()
func.func @f(%x: tensor<4xf32>) {
  // expected-error @+1 {{'spmd.all_reduce' op symbol @m is not an spmd.mesh}}
  %0 = spmd.all_reduce %x on @m ["x"] sum : tensor<4xf32>
  return
}

// -----

spmd.mesh @m ["x"=2]
func.func @f(%x: tensor<4xf32>) {
  // expected-error @+1 {{'spmd.all_reduce' op mesh @m has no axis named 'y'}}
  %0 = spmd.all_reduce %x on @m ["y"] sum : tensor<4xf32>
  return
}

// -----

spmd.mesh @m ["x"=2]
func.func @f(%x: tensor<4xf32>) {
  // expected-error @+1 {{'spmd.all_gather' op lists mesh axis 'x' twice}}
  %0 = spmd.all_gather %x on @m ["x", "x"] dim 0 : tensor<4xf32> -> tensor<16xf32>
  return
}

// -----

spmd.mesh @m ["x"=2]
func.func @f(%x: tensor<4xf32>) {
  // expected-error @+1 {{'spmd.all_reduce' op needs at least one mesh axis}}
  %0 = spmd.all_reduce %x on @m [] sum : tensor<4xf32>
  return
}

// -----

spmd.mesh @m ["x"=2]
func.func @f(%x: tensor<4xf32>) {
  // expected-error @+1 {{expected string or keyword containing one of the following enum values for attribute 'kind' [sum, avg, max, min]}}
  %0 = spmd.all_reduce %x on @m ["x"] prod : tensor<4xf32>
  return
}

// -----

spmd.mesh @m ["x"=2]
func.func @f(%x: tensor<4xf32>) {
  // expected-error @+1 {{'spmd.all_gather' op gathers 2 pieces of size 4 along dim 0 into 4; expected 8}}
  %0 = spmd.all_gather %x on @m ["x"] dim 0 : tensor<4xf32> -> tensor<4xf32>
  return
}

// -----

spmd.mesh @m ["x"=2, "y"=3]
func.func @f(%x: tensor<4x5xf32>) {
  // expected-error @+1 {{'spmd.all_gather' op dim 1 changes from 5 to 6}}
  %0 = spmd.all_gather %x on @m ["x", "y"] dim 0 : tensor<4x5xf32> -> tensor<24x6xf32>
  return
}

// -----

spmd.mesh @m ["x"=2]
func.func @f(%x: tensor<4xf32>) {
  // expected-error @+1 {{'spmd.all_gather' op changes the element type from 'f32' to 'f16'}}
  %0 = spmd.all_gather %x on @m ["x"] dim 0 : tensor<4xf32> -> tensor<8xf16>
  return
}

// -----

spmd.mesh @m ["x"=2]
func.func @f(%x: tensor<4xf32>) {
  // expected-error @+1 {{'spmd.all_gather' op changes the rank from 1 to 2}}
  %0 = spmd.all_gather %x on @m ["x"] dim 0 : tensor<4xf32> -> tensor<8x1xf32>
  return
}

// -----

spmd.mesh @m ["x"=2]
func.func @f(%x: tensor<4xf32>) {
  // expected-error @+1 {{'spmd.all_gather' op dim 1 is out of range for a rank-1 tensor}}
  %0 = spmd.all_gather %x on @m ["x"] dim 1 : tensor<4xf32> -> tensor<4xf32>
  return
}

// -----

spmd.mesh @m ["x"=4]
func.func @f(%x: tensor<13xf32>) {
  // expected-error @+1 {{'spmd.reduce_scatter' op splits dim 0 of size 13 into 4 uneven chunks, so the result dim must be dynamic ('?')}}
  %0 = spmd.reduce_scatter %x on @m ["x"] dim 0 sum : tensor<13xf32> -> tensor<4xf32>
  return
}

// -----

spmd.mesh @m ["x"=4]
func.func @f(%x: tensor<16xf32>) {
  // expected-error @+1 {{'spmd.reduce_scatter' op splits dim 0 of size 16 into 4 chunks of 4, not 8}}
  %0 = spmd.reduce_scatter %x on @m ["x"] dim 0 sum : tensor<16xf32> -> tensor<8xf32>
  return
}

// -----

spmd.mesh @m ["x"=4]
func.func @f(%x: tensor<16xf32>) {
  // expected-error @+1 {{'spmd.shard' op splits dim 0 of size 16 into 4 chunks of 4, not 16}}
  %0 = spmd.shard %x on @m ["x"] dim 0 : tensor<16xf32> -> tensor<16xf32>
  return
}

// -----

spmd.mesh @m ["x"=4]
func.func @f(%x: tensor<3xf32>) {
  // expected-error @+1 {{'spmd.shard' op splits dim 0 of size 3 into 4 uneven chunks, so the result dim must be dynamic ('?')}}
  %0 = spmd.shard %x on @m ["x"] dim 0 : tensor<3xf32> -> tensor<1xf32>
  return
}

// -----

spmd.mesh @m ["x"=4]
func.func @f(%x: tensor<8x8xf32>) {
  // expected-error @+1 {{'spmd.all_to_all' op splits and concatenates the same dim 0; that is no layout change}}
  %0 = spmd.all_to_all %x on @m ["x"] split 0 concat 0 : tensor<8x8xf32> -> tensor<8x8xf32>
  return
}

// -----

spmd.mesh @m ["x"=4]
func.func @f(%x: tensor<8x8xf32>) {
  // expected-error @+1 {{'spmd.all_to_all' op gathers 4 pieces of size 8 along dim 1 into 8; expected 32}}
  %0 = spmd.all_to_all %x on @m ["x"] split 0 concat 1 : tensor<8x8xf32> -> tensor<2x8xf32>
  return
}

// -----

spmd.mesh @m ["x"=4]
func.func @f(%x: tensor<8x8xf32>) {
  // expected-error @+1 {{'spmd.all_to_all' op dim 2 is out of range for a rank-2 tensor}}
  %0 = spmd.all_to_all %x on @m ["x"] split 2 concat 1 : tensor<8x8xf32> -> tensor<8x8xf32>
  return
}

// -----

spmd.mesh @m ["x"=4]
func.func @f(%x: tensor<8xf32>) {
  // expected-error @+1 {{'spmd.all_reduce' op failed to verify that all of {input, result} have same type}}
  %0 = "spmd.all_reduce"(%x) {mesh = @m, mesh_axes = ["x"], kind = 0 : i32} : (tensor<8xf32>) -> tensor<4xf32>
  return
}

// -----

spmd.mesh @m ["x"=4]
func.func @f(%x: memref<8xf32>) {
  // expected-error @+1 {{'spmd.all_reduce' op operand #0 must be ranked tensor of any type values, but got 'memref<8xf32>'}}
  %0 = "spmd.all_reduce"(%x) {mesh = @m, mesh_axes = ["x"], kind = 0 : i32} : (memref<8xf32>) -> memref<8xf32>
  return
}
