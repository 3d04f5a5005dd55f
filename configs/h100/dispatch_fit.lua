-- dispatch_fit.lua — the sweep a GPU's dispatch table is fitted from (docs/DESIGN.md, "Variants
-- and the dispatch table"): cake and rejection at every cluster size, and cake's two CTA
-- shapes (the variants), on a fit grid of B x V x k x dtype, and on held-out cells between its
-- points. Then
--   python3 scripts/fit-dispatch.py RESULTS.h5 SLUG > dispatch/SLUG.tsv
--   python3 scripts/fit-dispatch.py RESULTS.h5 SLUG --check --topkp build/topkp
-- (SLUG: the device's, scripts/reproduce.sh's folder rule: h100, h200). A size c is timed at a
-- batch B only where B x c <= 4 x 132 CTAs (four waves of an H100's or H200's SMs) or c = 1:
-- past that no size but 1 won a cell of the first fit (results/h100-2026-12-05/dispatch), where
-- those cells took most of the run's time. Every option is explicit, so no table of an earlier
-- fit changes these cells. Each B is a sweep of its own (its variants differ), named
-- dispatch_fit_bB / dispatch_heldout_bB: the script reads every sweep of those two prefixes.
local MAX_CTAS = 4 * 132
local timing = { warmup = 3, min_reps = 20, max_reps = 200, max_seconds = 0.3, target_rel = 0.01 }

-- cake's CTA shape is a variant too (option threads): 512 at every size, and 256 (two CTAs a
-- SM) at one CTA a row from B = 128 up (the grid point below the first batch with more rows
-- than SMs, so that B between 128 and 256 interpolates; below 128 measured slower:
-- results/h100-2026-12-06/cake_threads/). Both are explicit, so a table row names its shape
-- and a cell that takes it plans it whatever `threads=auto` would.
local function variants_at(batch)
    local out = {}
    for _, module in ipairs({ "cake", "rejection" }) do
        for _, c in ipairs({ 1, 2, 4, 8, 16 }) do
            if c == 1 or batch * c <= MAX_CTAS then
                local v = { module, cluster = tostring(c) }
                if module == "cake" then v.threads = "512" end
                out[#out + 1] = v
            end
        end
        if module == "cake" and batch >= 128 then
            out[#out + 1] = { module, cluster = "1", threads = "256" }
        end
    end
    return out
end

for _, b in ipairs({ 1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024 }) do
    sweep("dispatch_fit_b" .. b) {
        algos = variants_at(b), dataset = "gaussian",
        batch = b, vocab = { 32768, 128256, 262144 },
        k = { 50, 1000 }, dtype = { "f32", "bf16" }, verify = 1, timing = timing,
    }
end

for _, b in ipairs({ 3, 6, 12, 24, 48, 96, 192, 384 }) do
    sweep("dispatch_heldout_b" .. b) {
        algos = variants_at(b), dataset = "gaussian",
        batch = b, vocab = 151936,
        k = { 50, 1000 }, dtype = { "f32", "bf16" }, verify = 1, timing = timing,
    }
end
