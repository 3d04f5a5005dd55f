"""topkp.compat — drop-in stand-ins for other libraries' top-k / top-p calls (vllm,
flashinfer): same signatures, return types and in-place behaviour, our semantics
(docs/PYTHON.md, "The adapters"; where they differ: docs/SEMANTICS.md, "Probabilities", and
docs/PYTHON.md, "Where the semantics differ")."""
