"""claims_stats.py — the intervals of scripts/claims.py: a median's distribution-free
order-statistic interval and a ratio of two medians' interval, both as harness/store/compare.c computes
them (tkp_median_interval, tkp_compare_samples), and the Clopper-Pearson binomial interval."""
import math


def median_interval(values, alpha):
    """compare.c's tkp_median_interval: order statistics l and n + 1 - l around the median
    with P(Bin(n, 1/2) < l) <= alpha / 2; None when n is too small."""
    s = sorted(values)
    n, log_pmf, cdf, l = len(s), -len(s) * math.log(2.0), 0.0, 0
    j = 0
    while 2 * j < n:
        cdf += math.exp(log_pmf)
        if cdf > alpha / 2:
            break
        l = j + 1
        log_pmf += math.log((n - j) / (j + 1))
        j += 1
    return (s[l - 1], s[n - l]) if l else None


def ratio_interval(num, den, alpha_each=0.025):
    """t(num) / t(den)'s interval from two sample lists, compare.c's tkp_compare_samples: each
    median at 1 - alpha_each, [lo_num / hi_den, hi_num / lo_den] (>= 95 % at 0.025 each); None
    when either has too few samples or den's lower bound is not positive."""
    a, b = median_interval(num, alpha_each), median_interval(den, alpha_each)
    return (a[0] / b[1], a[1] / b[0]) if a and b and b[0] > 0 else None


def clopper_pearson(x, n, alpha=0.05):
    """The exact (Clopper-Pearson) binomial interval of x successes in n trials, by bisection
    on the binomial tails (log-space terms, so thousands of rows do not overflow)."""
    def cdf(p, upto):  # P(Bin(n, p) <= upto)
        if p <= 0 or p >= 1:
            return 1.0 if p <= 0 or upto >= n else 0.0
        logs = [math.lgamma(n + 1) - math.lgamma(i + 1) - math.lgamma(n - i + 1) + i * math.log(p) +
                (n - i) * math.log1p(-p) for i in range(upto + 1)]
        top = max(logs)
        return min(1.0, math.exp(top) * sum(math.exp(v - top) for v in logs))

    def solve(f, target):  # the p in (0, 1) where the decreasing f crosses target
        a, b = 0.0, 1.0
        for _ in range(60):
            m = (a + b) / 2
            a, b = (m, b) if f(m) > target else (a, m)
        return (a + b) / 2
    lo = 0.0 if x == 0 else solve(lambda p: cdf(p, x - 1), 1 - alpha / 2)  # P(X >= x) = alpha/2
    hi = 1.0 if x == n else solve(lambda p: cdf(p, x), alpha / 2)
    return lo, hi
