# softmax.gp — the softmax as its own cost: for each peer timed both on logits with its softmax
# (input=softmax) and on probabilities computed outside its timed region (input=probs), the
# difference of the two medians, cell by cell against the X axis, in the panel grid of grid.gp
# (scripts/figures.sh, <stem>-softmax.tsv). A line is named by the peer's input=softmax series.
dir = exists("dir") ? dir : "plots"
load dir."/common.gp"
what = "The softmax as its own cost: median with input=softmax - median with input=probs, per peer"
ycol = "softmax_us"
ylab = "softmax time per call"
yscale = 1e-6
yformat = "%.0s %cs"
vunit = "s"
load dir."/grid.gp"
