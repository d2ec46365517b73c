"""Writes hand-partitioned local programs of the MLP in mlp_train.mlir
(global x 4x16, w1 16x32, w2 32x8, t 4x8), standing in for spmd-partition's
output until it lands.

  gen_local.py train DP TP   one SGD step on a dp x tp mesh: x, t S(0) on dp;
                             w1 S(1), w2 S(0) on tp (Megatron); one
                             all_reduce over tp (forward) and two over dp
                             (gradients), each only where the axis is > 1.
                             Uneven shards (dp not dividing 4, tp not
                             dividing 32) give dynamic local dims, sizes
                             taken from the arguments (tensor.dim).
  gen_local.py train DP TP B D H O   the same at other global sizes.
  gen_local.py seqpar TP [B] sequence-parallel forward on tp: all_gather of
                             x, reduce_scatter of y, then all_to_all of y to
                             S(1) and shards of the gathered x to S(1) and
                             S(0). B rows of x (default 4; uneven over tp
                             gives dynamic dims sized from mesh coordinates).
"""
import sys

B, D, H, O = 4, 16, 32, 8

MAPS = """#id = affine_map<(d0, d1) -> (d0, d1)>
#mk = affine_map<(d0, d1, d2) -> (d0, d2)>
#kn = affine_map<(d0, d1, d2) -> (d2, d1)>
#mn = affine_map<(d0, d1, d2) -> (d0, d1)>
#km = affine_map<(d0, d1, d2) -> (d2, d0)>
#nk = affine_map<(d0, d1, d2) -> (d1, d2)>
"""


def t(*dims):
    return "tensor<" + "x".join(str(d) for d in dims) + "xf32>"


def lay(*p):
    return "{spmd.layout = #spmd.layout<@mesh, [" + ", ".join(p) + "]>}"


def matmul(res, a, b, ta, tb, out, maps=None):
    m = f"indexing_maps = [{maps}] " if maps else ""
    return (f"  %{res}_init = linalg.fill ins(%zero : f32) outs(%e_{res} : {out}) -> {out}\n"
            f"  %{res} = linalg.matmul {m}ins(%{a}, %{b} : {ta}, {tb}) "
            f"outs(%{res}_init : {out}) -> {out}\n")


def train(dp, tp):
    # Uneven shards (torch.chunk) make a local dim rank-dependent: "?".
    b = B // dp if B % dp == 0 else "?"
    h = H // tp if H % tp == 0 else "?"
    x, w1, w2, tt = t(b, D), t(D, h), t(h, O), t(b, O)
    bh = t(b, h)
    s = MAPS + f'spmd.mesh @mesh ["dp"={dp}, "tp"={tp}]\n'
    s += (f"func.func @train_step(%w1: {w1} {lay('R', 'S(1)')}, %w2: {w2} {lay('R', 'S(0)')},\n"
          f"    %x: {x} {lay('S(0)', 'R')}, %t: {tt} {lay('S(0)', 'R')})\n"
          f"    -> ({w1} {lay('R', 'S(1)')}, {w2} {lay('R', 'S(0)')}) {{\n")
    s += "  %zero = arith.constant 0.0 : f32\n  %lr = arith.constant 0.05 : f32\n"
    s += "  %c0 = arith.constant 0 : index\n  %c1 = arith.constant 1 : index\n"
    s += f"  %nb = tensor.dim %x, %c0 : {x}\n  %nh = tensor.dim %w1, %c1 : {w1}\n"

    def sizes(*dims):
        return ", ".join(n for d, n in dims if d == "?")
    for name, ty, dims in [("h", bh, [(b, "%nb"), (h, "%nh")]), ("yp", tt, [(b, "%nb")]),
                           ("dw2p", w2, [(h, "%nh")]), ("dr", bh, [(b, "%nb"), (h, "%nh")]),
                           ("dw1p", w1, [(h, "%nh")]), ("nw1", w1, [(h, "%nh")]),
                           ("nw2", w2, [(h, "%nh")])]:
        s += f"  %e_{name} = tensor.empty({sizes(*dims)}) : {ty}\n"
    s += matmul("h", "x", "w1", x, w1, bh)
    s += (f"  %r = linalg.generic {{indexing_maps = [#id, #id], iterator_types = [\"parallel\", \"parallel\"]}}\n"
          f"      ins(%h : {bh}) outs(%e_h : {bh}) {{\n"
          f"    ^bb0(%a: f32, %o: f32):\n      %m = arith.maximumf %a, %zero : f32\n      linalg.yield %m : f32\n"
          f"  }} -> {bh}\n")
    s += matmul("yp", "r", "w2", bh, w2, tt)
    y = "yp"
    if tp > 1:
        s += f'  %y = spmd.all_reduce %yp on @mesh ["tp"] sum : {tt}\n'
        y = "y"
    s += f"  %dy = linalg.sub ins(%{y}, %t : {tt}, {tt}) outs(%e_yp : {tt}) -> {tt}\n"
    s += matmul("dw2p", "r", "dy", bh, tt, w2, "#km, #kn, #mn")
    dw2 = "dw2p"
    if dp > 1:
        s += f'  %dw2 = spmd.all_reduce %dw2p on @mesh ["dp"] sum : {w2}\n'
        dw2 = "dw2"
    s += matmul("dr", "dy", "w2", tt, w2, bh, "#mk, #nk, #mn")
    s += (f"  %dh = linalg.generic {{indexing_maps = [#id, #id, #id], iterator_types = [\"parallel\", \"parallel\"]}}\n"
          f"      ins(%dr, %h : {bh}, {bh}) outs(%e_h : {bh}) {{\n"
          f"    ^bb0(%g: f32, %a: f32, %o: f32):\n"
          f"      %pos = arith.cmpf ogt, %a, %zero : f32\n"
          f"      %v = arith.select %pos, %g, %zero : f32\n      linalg.yield %v : f32\n"
          f"  }} -> {bh}\n")
    s += matmul("dw1p", "x", "dh", x, bh, w1, "#km, #kn, #mn")
    dw1 = "dw1p"
    if dp > 1:
        s += f'  %dw1 = spmd.all_reduce %dw1p on @mesh ["dp"] sum : {w1}\n'
        dw1 = "dw1"
    for new, w, g, ty in [("nw1", "w1", dw1, w1), ("nw2", "w2", dw2, w2)]:
        s += (f"  %{new} = linalg.generic {{indexing_maps = [#id, #id, #id], iterator_types = [\"parallel\", \"parallel\"]}}\n"
              f"      ins(%{w}, %{g} : {ty}, {ty}) outs(%e_{new} : {ty}) {{\n"
              f"    ^bb0(%w: f32, %g: f32, %o: f32):\n"
              f"      %s = arith.mulf %g, %lr : f32\n      %n = arith.subf %w, %s : f32\n"
              f"      linalg.yield %n : f32\n  }} -> {ty}\n")
    s += f"  return %nw1, %nw2 : {w1}, {w2}\n}}\n"
    return s


def seqpar(tp):
    b = B // tp if B % tp == 0 else "?"
    h = H // tp
    s = MAPS + f'spmd.mesh @mesh ["tp"={tp}]\n'
    s += (f"func.func @forward(%x: {t(b, D)} {lay('S(0)')}, %w1: {t(D, h)} {lay('S(1)')},\n"
          f"    %w2: {t(h, O)} {lay('S(0)')})\n"
          f"    -> ({t(b, O)} {lay('S(0)')}, {t(B, O // tp)} {lay('S(1)')}, {t(B, D // tp)} {lay('S(1)')},\n"
          f"        {t(b, D)} {lay('S(0)')}) {{\n")
    s += "  %zero = arith.constant 0.0 : f32\n"
    s += f'  %xg = spmd.all_gather %x on @mesh ["tp"] dim 0 : {t(b, D)} -> {t(B, D)}\n'
    s += f"  %e_h = tensor.empty() : {t(B, h)}\n  %e_yp = tensor.empty() : {t(B, O)}\n"
    s += matmul("h", "xg", "w1", t(B, D), t(D, h), t(B, h))
    s += (f"  %r = linalg.generic {{indexing_maps = [#id, #id], iterator_types = [\"parallel\", \"parallel\"]}}\n"
          f"      ins(%h : {t(B, h)}) outs(%e_h : {t(B, h)}) {{\n"
          f"    ^bb0(%a: f32, %o: f32):\n      %m = arith.maximumf %a, %zero : f32\n      linalg.yield %m : f32\n"
          f"  }} -> {t(B, h)}\n")
    s += matmul("yp", "r", "w2", t(B, h), t(h, O), t(B, O))
    s += f'  %ys = spmd.reduce_scatter %yp on @mesh ["tp"] dim 0 sum : {t(B, O)} -> {t(b, O)}\n'
    s += f'  %ya = spmd.all_to_all %ys on @mesh ["tp"] split 1 concat 0 : {t(b, O)} -> {t(B, O // tp)}\n'
    s += f'  %xs = spmd.shard %xg on @mesh ["tp"] dim 1 : {t(B, D)} -> {t(B, D // tp)}\n'
    s += f'  %xr = spmd.shard %xg on @mesh ["tp"] dim 0 : {t(B, D)} -> {t(b, D)}\n'
    s += (f"  return %ys, %ya, %xs, %xr : {t(b, O)}, {t(B, O // tp)}, {t(B, D // tp)}, "
          f"{t(b, D)}\n}}\n")
    return s


if __name__ == "__main__":
    if sys.argv[1] == "train":
        # Optional global sizes B D H O (benchmarks); the tests use 4 16 32 8.
        if len(sys.argv) > 4:
            B, D, H, O = (int(v) for v in sys.argv[4:8])
        print(train(int(sys.argv[2]), int(sys.argv[3])))
    else:
        if len(sys.argv) > 3:  # rows of x (uneven over tp: dynamic dims)
            B = int(sys.argv[3])
        print(seqpar(int(sys.argv[2])))
