-- pass1_ab.lua — cake's and rejection's first pass before and after testing each vector by its
-- maximum (algos/cake/README.md, "Fewer instructions a logit"; algos/rejection/README.md,
-- "Pass 1 by quads"): run it with the build before the change and with the build after in one
-- device call, and compare the two files cell by cell (`topkp compare OLD.h5 NEW.h5`). Both
-- dtypes whose instruction counts moved (bf16's most), one CTA a row and clusters, k = 50
-- and 1000 (rejection's crowded bucket).
sweep "pass1_ab" {
    algos = { "cake", "rejection" }, dataset = "peers_s1", vocab = 128256,
    batch = { 1024, 128, 16, 1 }, k = { 50, 1000 }, p = 0.9, dtype = { "f32", "bf16" },
}
