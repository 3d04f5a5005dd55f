# vs_peers.gp — like with like: each module's speed-up over the fastest peer of the same cell
# (sweep, dataset, vocab, batch, k and p alike) that writes the same output and takes logits in
# (the peer's median / the module's; scripts/figures.sh, <stem>-vs-peers-like.tsv): a module's
# mask against the mask peers ("<module> [mask]"), its draws against the samplers ("<module>
# [sampler]"); a peer timed on probabilities (input=probs, the softmax outside its timed
# region) is no logits-in peer. Against batch size, one panel per vocabulary and mode; above 1
# the module is faster.
dir = exists("dir") ? dir : "plots"
load dir."/common.gp"
what = "Speed-up over the fastest logits-in peer of the same output ([mask]: mask peers, [sampler]: samplers; its median / the module's)"
ycol = "vs_like"
ylab = "speed-up over like peer (x)"
reference = 1
load dir."/grid.gp"
