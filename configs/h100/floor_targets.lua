-- floor_targets.lua — the memory-floor targets of qrita, cake and rejection on the H100
-- (algos/*/README.md): configs/h200/floor_grid.lua's four modes and the peers each module is
-- held to, on two of its vocabularies and five of its batches, so that the whole table fits
-- one device call beside the other measurements of a lent H100; the floors (floor.read,
-- floor.copy) of every (V, B) in the same run, by the same timer (docs/PEERS.md, "Memory
-- floors"). FlashInfer's samplers take probabilities computed outside the timed region.
--   build/gpu/topkp run configs/h100/floor_targets.lua --backend gpu -o floor_targets.h5
--   build/gpu/topkp export floor_targets.h5 > t.tsv && python3 scripts/floor-table.py t.tsv
local cells = include "lib/floor_cells.lua"
sweep "floors" {
    algos = { "floor.read", "floor.copy" }, dataset = "peers_s1", vocab = cells.vocab,
    batch = cells.batch, k = 50, p = 1.0, dtype = { "f32", "bf16" }, timing = cells.timing,
}
