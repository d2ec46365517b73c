// With `out`, the report goes to that file and stdout has only the IR.
// RUN: %python -c "import os, sys; os.path.exists(sys.argv[1]) and os.remove(sys.argv[1])" %t.json
// RUN: spmd-opt %s -spmd-comm-report=out=%t.json | FileCheck %s --check-prefix=IR
// RUN: FileCheck %s < %t.json
// RUN: %python -c "import json, sys; r = json.load(open(sys.argv[1])); sys.exit(r['functions'][0]['totals']['bytes'] != 768)" %t.json

spmd.mesh @tp4 ["tp"=4]

// IR-NOT: "functions"
// IR: func.func @mlp
// IR: spmd.all_reduce

// CHECK: "name": "mlp",
// CHECK: {"op":"all_reduce","mesh":"tp4","axes":["tp"],"group_size":4,"reduction":"sum","element_type":"f32","input_shape":[8,16],"result_shape":[8,16],"dynamic":false,"bytes":768}
func.func @mlp(%p: tensor<8x16xf32>) -> tensor<8x16xf32> {
  %y = spmd.all_reduce %p on @tp4 ["tp"] sum : tensor<8x16xf32>
  return %y : tensor<8x16xf32>
}
