//! Random variates for workloads (arrival processes, on/off sources), computed with IEEE
//! basic arithmetic only: `ln` and `exp` here are short series evaluations rather than the
//! platform's libm, so a seed gives bit-identical draws on every machine.

use rand_chacha::ChaCha8Rng;
use rand_core::Rng;

const LN2: f64 = std::f64::consts::LN_2;

/// Natural logarithm of a positive finite `x` (≈ 1 ulp): `x = m·2^e` with m in [√½, √2),
/// then ln m = 2·atanh((m−1)/(m+1)) by its odd series.
pub fn ln(x: f64) -> f64 {
    debug_assert!(x > 0.0 && x.is_finite());
    let bits = x.to_bits();
    let mut e = ((bits >> 52) & 0x7ff) as i64 - 1023;
    let mut m = f64::from_bits((bits & 0x000f_ffff_ffff_ffff) | 0x3ff0_0000_0000_0000);
    if (bits >> 52) & 0x7ff == 0 {
        // Subnormal: scale into the normal range first.
        return ln(x * (1u64 << 54) as f64) - 54.0 * LN2;
    }
    if m > std::f64::consts::SQRT_2 {
        m /= 2.0;
        e += 1;
    }
    let s = (m - 1.0) / (m + 1.0);
    let s2 = s * s;
    // |s| ≤ 0.172: s^(2k+1)/(2k+1) falls below 1e-17 by k = 11.
    let mut term = s;
    let mut sum = 0.0;
    let mut k = 1.0;
    for _ in 0..12 {
        sum += term / k;
        term *= s2;
        k += 2.0;
    }
    2.0 * sum + e as f64 * LN2
}

/// e^x for finite `x` (≈ 1 ulp; 0 below −745, infinity above 709.8): x = k·ln 2 + r with
/// |r| ≤ ln 2 / 2, then the Taylor series of e^r.
pub fn exp(x: f64) -> f64 {
    if x < -745.0 {
        return 0.0;
    }
    if x > 709.78 {
        return f64::INFINITY;
    }
    let k = (x / LN2 + if x < 0.0 { -0.5 } else { 0.5 }) as i64;
    // Cody–Waite: ln 2 split so that k·LN2_HI is exact for |k| < 2^11.
    const LN2_HI: f64 = f64::from_bits(0x3fe6_2e42_fee0_0000);
    const LN2_LO: f64 = f64::from_bits(0x3dea_39ef_3579_3c76);
    let r = (x - k as f64 * LN2_HI) - k as f64 * LN2_LO;
    let mut term = 1.0;
    let mut sum = 1.0;
    for i in 1..=20 {
        term *= r / i as f64;
        sum += term;
    }
    // 2^k, split so that neither factor overflows or underflows early.
    let half = k / 2;
    sum * pow2(half) * pow2(k - half)
}

fn pow2(k: i64) -> f64 {
    if k < -1022 {
        return f64::from_bits(1u64 << (k + 1074).max(0));
    }
    f64::from_bits(((k + 1023) as u64) << 52)
}

/// Uniform in (0, 1]: never 0, so its logarithm is finite.
pub fn uniform_open0(rng: &mut ChaCha8Rng) -> f64 {
    ((rng.next_u64() >> 11) + 1) as f64 * (1.0 / (1u64 << 53) as f64)
}

/// Exponential with mean `mean`.
pub fn exponential(rng: &mut ChaCha8Rng, mean: f64) -> f64 {
    -mean * ln(uniform_open0(rng))
}

/// Pareto with shape `alpha` > 1 and mean `mean`: scale x_m = mean·(α−1)/α, then
/// x_m · U^(−1/α).
pub fn pareto(rng: &mut ChaCha8Rng, mean: f64, alpha: f64) -> f64 {
    let xm = mean * (alpha - 1.0) / alpha;
    xm * exp(-ln(uniform_open0(rng)) / alpha)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand_core::SeedableRng;

    #[test]
    fn ln_and_exp_match_the_platform_to_a_few_ulp() {
        let mut x = 1e-300;
        while x < 1e300 {
            let (a, b) = (ln(x), x.ln());
            assert!(
                (a - b).abs() <= 4.0 * f64::EPSILON * b.abs().max(1.0),
                "ln {x}: {a} {b}"
            );
            x *= 1.37;
        }
        let mut x = -700.0;
        while x < 700.0 {
            let (a, b) = (exp(x), x.exp());
            assert!((a - b).abs() <= 8.0 * f64::EPSILON * b, "exp {x}: {a} {b}");
            x += 0.731;
        }
        assert_eq!(exp(0.0), 1.0);
        assert_eq!(ln(1.0), 0.0);
    }

    #[test]
    fn sample_means_match() {
        let mut rng = ChaCha8Rng::seed_from_u64(7);
        let n = 200_000;
        let m: f64 = (0..n).map(|_| exponential(&mut rng, 2.0)).sum::<f64>() / n as f64;
        assert!((m - 2.0).abs() < 0.03, "exponential mean {m}");
        // Pareto α = 2.5 has finite variance, so the sample mean converges reasonably.
        let p: f64 = (0..n).map(|_| pareto(&mut rng, 3.0, 2.5)).sum::<f64>() / n as f64;
        assert!((p - 3.0).abs() < 0.1, "pareto mean {p}");
        let min = (0..1000)
            .map(|_| pareto(&mut rng, 3.0, 2.5))
            .fold(f64::INFINITY, f64::min);
        assert!(min >= 3.0 * 1.5 / 2.5, "pareto below its scale: {min}");
    }
}
