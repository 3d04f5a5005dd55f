"""cell.py — one cell as a peer sees it (docs/PEERS.md): the harness's logits on the cell's
device, in their own element type (float32, bfloat16 or float16), k and p in the harness's
convention (top-k off when k <= 0 or k >= V, top-p off when p >= 1), and the forms the peer
libraries take them in."""


SMALLEST_P = 1.1754943508222875e-38  # FLT_MIN, the smallest normal float32: kernels built with
# fast math flush a denormal to 0, which would turn "keep the first token" into p = 0


class Unsupported(Exception):
    """The peer cannot do this cell (or its package is missing); recorded as `unsupported`."""


class Cell:
    def __init__(self, torch, logits, k, p, seed, options, request=None):
        self.torch = torch
        self.logits = logits               # pristine [B, V], float32 or 16-bit; a peer never writes it
        self.sixteen_bit = logits.dtype != torch.float32
        self.batch, self.vocab = logits.shape
        self.device = logits.device
        self.k, self.p, self.seed = k, p, seed
        self.options = options
        # every field of the `open` request as text: each sweep axis marked TKP_AXIS_PEER in
        # harness/plan/axes.def is one (docs/DESIGN.md, "Adding an axis"), so a peer reads a new
        # axis here by its name (a float axis: float(cell.request[name]))
        self.request = request or {}
        self.topk_on = 0 < k < self.vocab
        self.topp_on = p < 1.0
        self._probs = None
        self._generator = None

    def float32(self):
        """The logits as float32: the logits themselves for a float32 cell, else `x.float()`, a
        new tensor (exact: every 16-bit value is a float32). A peer whose library needs float32
        calls this inside its timed call, so the cast is timed (docs/PEERS.md, "16-bit
        logits"); for a float32 cell it costs nothing."""
        return self.logits.float()

    def float32_like(self):
        """A float32 tensor of the logits' shape and device (its values unset, for calls that
        only look at the shape); the logits themselves for a float32 cell."""
        if not self.sixteen_bit:
            return self.logits
        return self.torch.empty(self.logits.shape, dtype=self.torch.float32, device=self.device)

    def option(self, name, default):
        return self.options.get(name, default)

    @property
    def k_int(self):
        """k as the libraries take it, the vocabulary size when top-k is off."""
        return self.k if self.topk_on else self.vocab

    @property
    def p_float(self):
        """p as the libraries take it: 1.0 when top-p is off; p <= 0, which the contract reads
        as "keep the first token", as SMALLEST_P (the libraries take p in (0, 1], and the
        shortest prefix with mass >= that p is the first token, whose mass is >= 1/V)."""
        if not self.topp_on:
            return 1.0
        return self.p if self.p > 0 else SMALLEST_P

    def k_rows(self):
        """int32 [B] of k_int, as vLLM's sampler and FlashInfer's tensor form take it."""
        return self.torch.full((self.batch,), self.k_int, dtype=self.torch.int32, device=self.device)

    def p_rows(self):
        return self.torch.full((self.batch,), self.p_float, dtype=self.torch.float32, device=self.device)

    def probs(self):
        """torch.softmax of the logits in float32, computed once outside the timed region (for
        a 16-bit cell the cast is outside it too)."""
        if self._probs is None:
            self._probs = self.torch.softmax(self.float32(), dim=-1)
        return self._probs

    def generator(self):
        """The cell's generator on its device, seeded with the cell's seed."""
        if self._generator is None:
            self._generator = self.torch.Generator(device=self.device)
            self._generator.manual_seed(self.seed)
        return self._generator

    def reseed(self):
        """Back to the seed's first draws, whatever the timed calls consumed: the draws handed
        to the oracle repeat from run to run."""
        if self._generator is not None:
            self._generator.manual_seed(self.seed)

    def mask_of_indices(self, indices):
        """bool [B, V], True at the given [B, n] indices."""
        kept = self.torch.zeros(self.batch, self.vocab, dtype=self.torch.bool, device=self.device)
        return kept.scatter_(1, indices.long(), True)


class Call:
    """What a peer's `prepare` returns. run() is the timed call and returns its output;
    reset() restores what run() writes in place (untimed); kept(out) turns a set peer's
    output into a bool [B, V] mask, sample(out) a sampler's into int64 [B] draws."""

    def __init__(self, run, reset=None, kept=None, sample=None):
        self.run = run
        self.reset = reset or (lambda: None)
        self.kept = kept
        self.sample = sample
