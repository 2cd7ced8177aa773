"""Student's t 95 % intervals shared by the report scripts (stress-paired.py, stress-shift.py,
compare.py): two-sided 95 % quantiles by degrees of freedom, and a mean with its half-width."""
import math

# Two-sided 95 % quantiles of Student's t by degrees of freedom (1-30); 1.96 beyond.
T95 = [12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179,
       2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064,
       2.060, 2.056, 2.052, 2.048, 2.045, 2.042]


def t95(n):
    """The quantile for a mean of n >= 2 values."""
    return T95[n - 2] if n - 2 < len(T95) else 1.96


def ci(xs):
    """Mean of xs and the half-width of its 95 % interval (0 for a single value)."""
    n = len(xs)
    m = sum(xs) / n
    if n < 2:
        return m, 0.0
    sd = math.sqrt(sum((x - m) ** 2 for x in xs) / (n - 1))
    return m, t95(n) * sd / math.sqrt(n)
