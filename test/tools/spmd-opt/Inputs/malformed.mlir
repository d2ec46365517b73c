spmd.mesh @m ["x"=2
func.func @f(
