//! Measures the reception overhead of every code of `tributary-codec` by simulation, with
//! fixed seeds, and prints Markdown tables (the ones in `docs/codec.md`).
//!
//! ```text
//! cargo run --release -p tributary-codec --example overhead            # full run
//! cargo run --release -p tributary-codec --example overhead -- 0.1     # 10 % of the trials
//! ```
//!
//! Every number comes from the crate's real encoders and decoders: symbols are encoded, pushed
//! into a decoder, and the count at which the decoder reports completion is recorded (decoded
//! content is checked against the source at the end of every trial).

use rand_chacha::ChaCha8Rng;
use rand_core::{RngCore, SeedableRng};
use std::time::Instant;
use tributary_codec::lt::{LtDecoder, LtEncoder, LtParams, RobustSoliton};
use tributary_codec::raptorq::{RaptorqConfig, RaptorqDecoder, RaptorqEncoder};
use tributary_codec::rlnc::{Coding, RlncConfig, RlncDecoder, RlncEncoder};

fn main() {
    let scale: f64 = std::env::args()
        .nth(1)
        .map(|s| s.parse().expect("scale must be a number"))
        .unwrap_or(1.0);
    let trials = |n: u32| ((f64::from(n) * scale).round() as u32).max(1);
    let start = Instant::now();
    raptorq_failure(&[
        (10, trials(20_000)),
        (100, trials(10_000)),
        (1000, trials(1_000)),
    ]);
    lt_overhead(&[(100, trials(2_000)), (1000, trials(300))]);
    lt_fig4(trials(1_000));
    rlnc_overhead(&[
        (16, trials(50_000)),
        (64, trials(10_000)),
        (256, trials(1_000)),
    ]);
    eprintln!("total {:.1} s", start.elapsed().as_secs_f64());
}

fn random_block(rng: &mut ChaCha8Rng, n: usize) -> Vec<u8> {
    let mut v = vec![0; n];
    rng.fill_bytes(&mut v);
    v
}

fn shuffle(rng: &mut ChaCha8Rng, v: &mut [u32]) {
    for i in (1..v.len()).rev() {
        v.swap(i, (rng.next_u64() % (i as u64 + 1)) as usize);
    }
}

/// Sorted sample → value at quantile q (nearest rank).
fn quantile(sorted: &[usize], q: f64) -> usize {
    let i = ((q * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len()) - 1;
    sorted[i]
}

fn mean(v: &[usize]) -> f64 {
    v.iter().sum::<usize>() as f64 / v.len() as f64
}

/// Upper end of the one-sided 95 % confidence interval of a proportion with `x` successes
/// out of `n` (Clopper–Pearson for x = 0, i.e. the "rule of three"; Wilson otherwise).
fn upper95(x: u32, n: u32) -> f64 {
    let n = f64::from(n);
    if x == 0 {
        return 1.0 - 0.05f64.powf(1.0 / n);
    }
    let p = f64::from(x) / n;
    let z = 1.645f64;
    let centre = p + z * z / (2.0 * n);
    let half = z * (p * (1.0 - p) / n + z * z / (4.0 * n * n)).sqrt();
    (centre + half) / (1.0 + z * z / n)
}

/// RaptorQ: symbols arrive in a random order drawn from ESIs 0..2k+20 (source and repair
/// mixed, the rest lost); record how many were needed.
fn raptorq_failure(cases: &[(usize, u32)]) {
    println!("### RaptorQ: decoding failure probability with k + e received symbols\n");
    println!("| k | trials | fail at k | fail at k+1 | fail at k+2 | 95 % upper bound at k+2 |");
    println!("|---|---|---|---|---|---|");
    let t = 8;
    for &(k, trials) in cases {
        let mut rng = ChaCha8Rng::seed_from_u64(0x5254_0000 + k as u64);
        let config = RaptorqConfig::new(k, t).unwrap();
        let source = random_block(&mut rng, k * t);
        let enc = RaptorqEncoder::new(config, source.clone()).unwrap();
        let pool = 2 * k + 20;
        let mut symbols = vec![0u8; pool * t];
        for (esi, s) in symbols.chunks_exact_mut(t).enumerate() {
            enc.encode(esi as u32, s).unwrap();
        }
        let mut fails = [0u32; 3];
        let mut order: Vec<u32> = (0..pool as u32).collect();
        for _ in 0..trials {
            shuffle(&mut rng, &mut order);
            let mut dec = RaptorqDecoder::new(config);
            let mut needed = None;
            for (n, &esi) in order.iter().enumerate() {
                let e = esi as usize;
                if dec
                    .push(esi, &symbols[e * t..(e + 1) * t])
                    .unwrap()
                    .complete
                {
                    needed = Some(n + 1);
                    break;
                }
            }
            let needed = needed.expect("RaptorQ did not decode from 2k+20 symbols");
            assert_eq!(dec.data().unwrap(), &source[..]);
            for (e, f) in fails.iter_mut().enumerate() {
                *f += u32::from(needed > k + e);
            }
        }
        let p = |x: u32| format!("{:.2e} ({x})", f64::from(x) / f64::from(trials));
        println!(
            "| {k} | {trials} | {} | {} | {} | {:.1e} |",
            p(fails[0]),
            p(fails[1]),
            p(fails[2]),
            upper95(fails[2], trials)
        );
    }
    println!();
}

/// For one LT trial, the number of symbols after which the peeling decoder, and the decoder
/// with elimination, were complete (the same symbol sequence feeds both).
fn lt_trial(
    params: &LtParams,
    enc: &mut LtEncoder,
    first_seed: u32,
    with_elim: bool,
) -> (usize, usize) {
    let k = params.k();
    let t = params.symbol_size();
    let mut peel = LtDecoder::new(params.clone(), 0);
    let mut elim = with_elim.then(|| LtDecoder::with_elimination(params.clone(), 0));
    let mut buf = vec![0; t];
    let (mut n_peel, mut n_elim) = (None, None);
    for n in 1..=20 * k {
        let id = enc.encode(first_seed + n as u32, &mut buf).unwrap();
        if n_peel.is_none() && peel.push(id, &buf).unwrap().complete {
            n_peel = Some(n);
        }
        if let Some(e) = elim.as_mut() {
            if n_elim.is_none() && e.push(id, &buf).unwrap().complete {
                n_elim = Some(n);
            }
        }
        if n_peel.is_some() && (n_elim.is_some() || elim.is_none()) {
            break;
        }
    }
    let n_peel = n_peel.expect("peeling did not finish within 20k symbols");
    (n_peel, n_elim.unwrap_or(n_peel))
}

fn lt_overhead(cases: &[(usize, u32)]) {
    let delta = 0.03;
    println!("### LT (robust soliton, δ = {delta}): symbols received beyond k until decoded\n");
    println!("| k | c | S | spike k/S | β | kβ | trials | peeling mean | peeling p50 | peeling p95 | peeling p99 | elimination mean | elimination p50 | elimination p95 | elimination p99 |");
    println!("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|");
    for &(k, trials) in cases {
        for c in [0.03, 0.057, 0.1, 0.2] {
            let t = 4;
            let params = LtParams::new(k, t, c, delta).unwrap();
            let d = params.distribution();
            let mut rng = ChaCha8Rng::seed_from_u64(0x4C54_0000 + k as u64);
            let source = random_block(&mut rng, k * t);
            let mut enc = LtEncoder::new(params.clone(), 0, &source).unwrap();
            let mut peel = Vec::new();
            let mut elim = Vec::new();
            for trial in 0..trials {
                let (p, e) = lt_trial(&params, &mut enc, trial * (20 * k as u32 + 1), true);
                peel.push(p - k);
                elim.push(e - k);
            }
            peel.sort_unstable();
            elim.sort_unstable();
            let pct = |x: f64| format!("{:.1} %", 100.0 * x / k as f64);
            println!(
                "| {k} | {c} | {:.1} | {} | {:.3} | {:.0} | {trials} | {} | {} | {} | {} | {} | {} | {} | {} |",
                d.s(),
                d.spike(),
                d.beta(),
                k as f64 * d.beta(),
                pct(mean(&peel)),
                pct(quantile(&peel, 0.5) as f64),
                pct(quantile(&peel, 0.95) as f64),
                pct(quantile(&peel, 0.99) as f64),
                pct(mean(&elim)),
                pct(quantile(&elim, 0.5) as f64),
                pct(quantile(&elim, 0.95) as f64),
                pct(quantile(&elim, 0.99) as f64),
            );
        }
    }
    println!();
}

/// HMTP Fig. 4: real decoding failure probability δ' of the peeling decoder versus c, at
/// δ = 0.03, for k = 800 and 1000. δ' is measured with kβ received symbols (Luby's bound, the
/// number the distribution is designed for) and with 1.137k (the paper's 1137 for k = 1000).
/// Peeling success is monotone in the number of symbols, so one run per trial gives both.
fn lt_fig4(trials: u32) {
    let delta = 0.03;
    println!("### LT: HMTP Fig. 4, peeling failure probability δ' versus c (δ = {delta}, {trials} trials per point)\n");
    println!("| c | k | kβ | δ' at kβ | δ' at 1.137k | with elimination: δ' at 1.137k | mean symbols to decode (peeling) |");
    println!("|---|---|---|---|---|---|---|");
    let cs = [
        0.01, 0.02, 0.03, 0.04, 0.05, 0.057, 0.06, 0.07, 0.08, 0.1, 0.15, 0.2,
    ];
    for c in cs {
        for k in [800usize, 1000] {
            let t = 1;
            let Ok(params) = LtParams::new(k, t, c, delta) else {
                continue;
            };
            let d: &RobustSoliton = params.distribution();
            let kbeta = (k as f64 * d.beta()).ceil() as usize;
            let k1137 = (1.137 * k as f64).round() as usize;
            let mut rng = ChaCha8Rng::seed_from_u64(0xF164_0000 + k as u64);
            let source = random_block(&mut rng, k * t);
            let mut enc = LtEncoder::new(params.clone(), 0, &source).unwrap();
            let (mut f_beta, mut f_1137, mut f_1137_elim) = (0u32, 0u32, 0u32);
            let mut total = 0usize;
            // Elimination only at the anchor points where it is reported (it is ~10× slower).
            let with_elim = (c - 0.057f64).abs() < 1e-9 || (c - 0.07f64).abs() < 1e-9;
            for trial in 0..trials {
                let (p, e) = lt_trial(&params, &mut enc, trial * (20 * k as u32 + 1), with_elim);
                f_beta += u32::from(p > kbeta);
                f_1137 += u32::from(p > k1137);
                f_1137_elim += u32::from(e > k1137);
                total += p;
            }
            let r = |x: u32| format!("{:.3}", f64::from(x) / f64::from(trials));
            println!(
                "| {c} | {k} | {kbeta} | {} | {} | {} | {:.0} |",
                r(f_beta),
                r(f_1137),
                if with_elim {
                    r(f_1137_elim)
                } else {
                    "–".into()
                },
                total as f64 / f64::from(trials),
            );
        }
    }
    println!();
}

/// Probability that g + e uniformly random vectors span GF(256)^g.
fn full_rank(g: usize, e: usize) -> f64 {
    (e + 1..=e + g)
        .map(|i| 1.0 - 256f64.powi(-(i as i32)))
        .product()
}

/// RLNC, non-systematic (the worst case: every symbol coded): seeded symbols until complete.
fn rlnc_overhead(cases: &[(usize, u32)]) {
    println!(
        "### RLNC (non-systematic, seeded coefficients): symbols received beyond g until decoded\n"
    );
    println!("| g | trials | mean | P(0) measured | P(0) theory | P(1) measured | P(1) theory | P(≥2) measured | P(≥2) theory | max |");
    println!("|---|---|---|---|---|---|---|---|---|---|");
    for &(g, trials) in cases {
        let t = 2;
        let config = RlncConfig::new(g, t).unwrap();
        let mut rng = ChaCha8Rng::seed_from_u64(0x524C_0000 + g as u64);
        let source = random_block(&mut rng, g * t);
        let mut enc = RlncEncoder::new(config, &source).unwrap();
        let mut hist = [0u32; 3];
        let mut total = 0usize;
        let mut max = 0;
        let mut buf = vec![0; t];
        for trial in 0..trials {
            let mut dec = RlncDecoder::new(config);
            let base = trial * (g as u32 + 64);
            let mut n = 0;
            while !dec.is_complete() {
                let coding = Coding::Seeded(base + n as u32);
                enc.encode(coding, &mut buf).unwrap();
                dec.push(coding, &buf).unwrap();
                n += 1;
                assert!(n < g + 64, "RLNC did not decode from g+64 symbols");
            }
            assert_eq!(dec.data().unwrap(), &source[..]);
            let over = n - g;
            hist[over.min(2)] += 1;
            total += over;
            max = max.max(over);
        }
        let p0 = full_rank(g, 0);
        let p1 = full_rank(g, 1) - p0;
        let f = |x: u32| format!("{:.5}", f64::from(x) / f64::from(trials));
        println!(
            "| {g} | {trials} | {:.5} | {} | {p0:.5} | {} | {p1:.5} | {} | {:.1e} | {max} |",
            total as f64 / f64::from(trials),
            f(hist[0]),
            f(hist[1]),
            f(hist[2]),
            1.0 - full_rank(g, 1),
        );
    }
    println!();
}
