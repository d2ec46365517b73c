// test/dialects/spmd/roundtrip.mlir's @layouts, reduced: a local program
// (a collective) whose argument and result layouts name two meshes.
spmd.mesh @mesh ["dp"=2, "tp"=4]
spmd.mesh @line ["x"=3]
func.func @layouts(%x: tensor<13x16xf32> {spmd.layout = #spmd.layout<@mesh, [S(0), R]>})
    -> (tensor<13x16xf32> {spmd.layout = #spmd.layout<@mesh, [S(0), P(sum)]>},
        tensor<4xf32> {spmd.layout = #spmd.layout<@line, [P(max)]>}) {
  %r = spmd.all_reduce %x on @mesh ["tp"] sum : tensor<13x16xf32>
  %o = tensor.empty() : tensor<4xf32>
  return %r, %o : tensor<13x16xf32>, tensor<4xf32>
}
