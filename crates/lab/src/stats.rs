//! Summary statistics: mean with a Student-t 95 % confidence interval, Jain's fairness index.

/// Two-sided 97.5 % quantiles of Student's t for 1..=30 degrees of freedom.
const T975: [f64; 30] = [
    12.706205, 4.302653, 3.182446, 2.776445, 2.570582, 2.446912, 2.364624, 2.306004, 2.262157,
    2.228139, 2.200985, 2.178813, 2.160369, 2.144787, 2.131450, 2.119905, 2.109816, 2.100922,
    2.093024, 2.085963, 2.079614, 2.073873, 2.068658, 2.063899, 2.059539, 2.055529, 2.051831,
    2.048407, 2.045230, 2.042272,
];

/// t_{0.975, df}: exact to 6 decimals up to 30 degrees of freedom, beyond that the
/// Cornish–Fisher expansion around the normal quantile (error < 1e-5).
pub fn t_975(df: u64) -> f64 {
    assert!(df > 0, "t quantile needs at least one degree of freedom");
    if df <= 30 {
        return T975[df as usize - 1];
    }
    let z: f64 = 1.959_963_984_540_054;
    let n = df as f64;
    let (z3, z5, z7) = (z.powi(3), z.powi(5), z.powi(7));
    z + (z3 + z) / (4.0 * n)
        + (5.0 * z5 + 16.0 * z3 + 3.0 * z) / (96.0 * n * n)
        + (3.0 * z7 + 19.0 * z5 + 17.0 * z3 - 15.0 * z) / (384.0 * n * n * n)
}

/// Mean and 95 % confidence half-width of a sample.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Estimate {
    /// Sample mean.
    pub mean: f64,
    /// Half-width of the 95 % confidence interval of the mean,
    /// `t_{0.975, n-1} · s / √n` with `s` the sample standard deviation; `None` for a single
    /// observation (no interval can be computed).
    pub ci95: Option<f64>,
    /// Sample standard deviation (`None` for one observation).
    pub std: Option<f64>,
    /// Smallest observation.
    pub min: f64,
    /// Largest observation.
    pub max: f64,
    /// Number of observations.
    pub n: usize,
}

impl Estimate {
    /// Estimates from observations; `None` when there are none.
    pub fn of(xs: &[f64]) -> Option<Estimate> {
        let n = xs.len();
        if n == 0 {
            return None;
        }
        let mean = xs.iter().sum::<f64>() / n as f64;
        let (std, ci95) = if n > 1 {
            let var = xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1) as f64;
            let s = var.sqrt();
            (Some(s), Some(t_975(n as u64 - 1) * s / (n as f64).sqrt()))
        } else {
            (None, None)
        };
        Some(Estimate {
            mean,
            ci95,
            std,
            min: xs.iter().copied().fold(f64::INFINITY, f64::min),
            max: xs.iter().copied().fold(f64::NEG_INFINITY, f64::max),
            n,
        })
    }
}

/// Jain's fairness index (Σx)² / (n·Σx²): 1 when all equal, 1/n when one takes everything.
/// All zeros count as fair (1).
pub fn jain(xs: &[f64]) -> f64 {
    let sum: f64 = xs.iter().sum();
    let sq: f64 = xs.iter().map(|x| x * x).sum();
    if sq == 0.0 {
        1.0
    } else {
        sum * sum / (xs.len() as f64 * sq)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn t_quantiles() {
        assert_eq!(t_975(1), 12.706205);
        assert_eq!(t_975(4), 2.776445);
        // Tabulated: df 40 → 2.021075, 60 → 2.000298, 120 → 1.979930.
        for (df, t) in [
            (40, 2.021075),
            (60, 2.000298),
            (120, 1.979930),
            (1000, 1.962339),
        ] {
            assert!(
                (t_975(df) - t).abs() < 2e-5,
                "df {df}: {} vs {t}",
                t_975(df)
            );
        }
    }

    #[test]
    fn estimate_by_hand() {
        // 10, 12, 14: mean 12, s = 2, ci = 4.302653 · 2 / √3 = 4.968275.
        let e = Estimate::of(&[10.0, 12.0, 14.0]).unwrap();
        assert_eq!(e.mean, 12.0);
        assert!((e.std.unwrap() - 2.0).abs() < 1e-12);
        assert!((e.ci95.unwrap() - 4.968275).abs() < 1e-6, "{:?}", e.ci95);
        assert_eq!((e.min, e.max, e.n), (10.0, 14.0, 3));
        // 5 values 1..5: mean 3, s = √2.5, ci = 2.776445 · 1.581139 / √5 = 1.963243.
        let e = Estimate::of(&[1.0, 2.0, 3.0, 4.0, 5.0]).unwrap();
        assert!((e.ci95.unwrap() - 1.963243).abs() < 1e-6);
        let one = Estimate::of(&[7.5]).unwrap();
        assert_eq!((one.mean, one.ci95, one.std), (7.5, None, None));
        assert!(Estimate::of(&[]).is_none());
    }

    #[test]
    fn jain_index() {
        assert_eq!(jain(&[3.0, 3.0, 3.0]), 1.0);
        assert_eq!(jain(&[1.0, 0.0, 0.0, 0.0]), 0.25);
        // (1+2+3)² / (3·14) = 36/42.
        assert!((jain(&[1.0, 2.0, 3.0]) - 36.0 / 42.0).abs() < 1e-15);
        assert_eq!(jain(&[0.0, 0.0]), 1.0);
    }
}
