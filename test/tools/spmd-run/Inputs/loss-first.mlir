// A step that returns its loss first (result 0) and the updated weight
// second: result i is not argument i's new value.
spmd.mesh @mesh ["dp"=2]
func.func @step(%w: tensor<8xf32> {spmd.layout = #spmd.layout<@mesh, [S(0)]>},
                %x: tensor<8xf32> {spmd.layout = #spmd.layout<@mesh, [S(0)]>})
    -> (tensor<f32> {spmd.layout = #spmd.layout<@mesh, [R]>},
        tensor<8xf32> {spmd.layout = #spmd.layout<@mesh, [S(0)]>}) {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<f32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<f32>) -> tensor<f32>
  %l = linalg.generic {indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> (i)>, affine_map<(i) -> ()>],
                       iterator_types = ["reduction"]}
      ins(%w, %x : tensor<8xf32>, tensor<8xf32>) outs(%z : tensor<f32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %p = arith.mulf %a, %b : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  } -> tensor<f32>
  %ew = tensor.empty() : tensor<8xf32>
  %w2 = linalg.sub ins(%w, %x : tensor<8xf32>, tensor<8xf32>) outs(%ew : tensor<8xf32>) -> tensor<8xf32>
  return %l, %w2 : tensor<f32>, tensor<8xf32>
}
