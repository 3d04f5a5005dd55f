-- ablation_two_options.lua — a two-option ablation of qrita (search x truncation) at two batch
-- sizes, for the ablation figure (docs/FIGURES.md, "Figures"): the list form of `variants` keeps
-- the order written here, and `baseline` names the variant the ratios divide by.
--   make figures RESULTS=results/ablation_two_options.h5
-- About a minute on two CPU cores.
local function qrita(search, truncation)
    return { "qrita", search = search, truncation = truncation }
end

ablation "search_x_truncation" {
    base = {
        dataset = "model_llama3_8b",
        vocab = 128256,
        batch = { 1, 32 },
        k = 50,
        p = 0.9,
        timing = { warmup = 1, min_reps = 5, max_reps = 10, max_seconds = 0.3 },
    },
    baseline = "Q",
    variants = {
        { "QT", qrita("quaternary", "auto") },   -- the full Qrita
        { "Q",  qrita("quaternary", "off") },
        { "BT", qrita("binary", "auto") },
        { "B",  qrita("binary", "off") },
        { "S",  qrita("sort", "off") },          -- a sort of the whole row
    },
}
