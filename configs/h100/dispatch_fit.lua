-- dispatch_fit.lua — the sweep a GPU's dispatch table is fitted from (docs/DESIGN.md, "Variants
-- and the dispatch table"): cake and rejection at every cluster size (the variants), on a fit
-- grid of B x V x k x dtype, and on held-out cells between its points. Then
--   python3 scripts/fit-dispatch.py RESULTS.h5 SLUG > dispatch/SLUG.tsv
--   python3 scripts/fit-dispatch.py RESULTS.h5 SLUG --check
-- (SLUG: the device's, scripts/reproduce.sh's folder rule: h100, h200). A forced size the
-- device cannot run takes the module's cost model, as it would in a run that the table sends
-- there. Every option is explicit, so no table of an earlier fit changes these cells.
local variants = {}
for _, module in ipairs({ "cake", "rejection" }) do
    for _, c in ipairs({ 1, 2, 4, 8, 16 }) do
        variants[#variants + 1] = { module, cluster = tostring(c) }
    end
end
local timing = { warmup = 3, min_reps = 20, max_reps = 200, max_seconds = 0.3, target_rel = 0.01 }

sweep "dispatch_fit" {
    algos = variants, dataset = "gaussian",
    batch = { 1, 4, 16, 64, 128, 512, 1024 }, vocab = { 32768, 128256, 262144 },
    k = { 50, 1000 }, dtype = { "f32", "bf16" }, verify = 1, timing = timing,
}

sweep "dispatch_heldout" {
    algos = variants, dataset = "gaussian",
    batch = { 2, 8, 32, 256 }, vocab = 151936,
    k = { 50, 1000 }, dtype = { "f32", "bf16" }, verify = 1, timing = timing,
}
