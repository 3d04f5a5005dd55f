-- algo_lists.lua — list helpers that targets.lua and targets_bf16.lua include (a file under a
-- config's folder, not a config: it declares no sweep; docs/CONFIGS.md, "Sharing helpers:
-- include"). `include "lib/algo_lists.lua"` returns this table.
local lists = {}

-- Lists joined into one `algos` table.
function lists.join(...)
    local out = {}
    for _, list in ipairs({ ... }) do
        for _, a in ipairs(list) do out[#out + 1] = a end
    end
    return out
end

-- A peer taking probabilities, timed alone (`probs`: softmax outside the timed region) and with
-- its library's softmax (`softmax`: what a pipeline from logits pays).
function lists.probs_and_softmax(name)
    return { { name, input = "probs" }, { name, input = "softmax" } }
end

return lists
