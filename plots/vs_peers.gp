# vs_peers.gp — each module's speed-up over the fastest peer of the same cell (the best ok peer
# median / the module's median; sweep, dataset, vocab, batch, k and p alike), cell by cell
# against batch size, one panel per vocabulary and mode; above 1 the module is faster.
dir = exists("dir") ? dir : "plots"
load dir."/common.gp"
what = "Speed-up over the fastest peer of each cell (its median time / median time)"
ycol = "vs_peer"
ylab = "speed-up over best peer (x)"
reference = 1
load dir."/grid.gp"
