//! HMTP Fig. 4 (`shared/papers/hmtp.txt` §III-B): real decoding failure probability δ' of the
//! LT code versus the robust soliton constant c, δ = 0.03, k = 800 and 1000, for the paper's
//! message-passing (peeling) decoder and for peeling completed by Gaussian elimination
//! (`LtDecoder::with_elimination`, what the `hmtp` scheme runs by default).
//!
//! ```text
//! cargo run --release -p tributary-codec --example hmtp_fig4 -- [TRIALS]   # default 200
//! ```
//!
//! A trial encodes symbols with consecutive seeds (a fresh range per trial) and pushes them
//! into both decoders until each reports the block complete (decoded content is compared with
//! the source); δ' at n symbols is the share of trials that needed more than n. Reported at
//! n = kβ (what Luby's analysis designs for) and at n = 1.137k (the paper's "1137 symbols
//! decode 1000"). Prints a Markdown table and, on stderr, CSV lines `fig4,c,k,decoder,n,δ'`.

use rand_chacha::ChaCha8Rng;
use rand_core::{RngCore, SeedableRng};
use tributary_codec::lt::{LtDecoder, LtEncoder, LtParams};

fn main() {
    let trials: u32 = std::env::args()
        .nth(1)
        .map(|s| s.parse().expect("TRIALS must be a positive integer"))
        .unwrap_or(200);
    assert!(trials > 0, "TRIALS must be a positive integer");
    let delta = 0.03;
    println!(
        "| c | k | kβ | trials | peeling δ' at kβ | peeling δ' at 1.137k | elimination δ' at kβ | \
         elimination δ' at 1.137k | mean symbols, peeling | mean symbols, elimination |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|");
    for c in [0.02, 0.03, 0.04, 0.05, 0.057, 0.07, 0.08, 0.1, 0.15, 0.2] {
        for k in [800usize, 1000] {
            let t = 8;
            let params = LtParams::new(k, t, c, delta).expect("valid parameters");
            let kbeta = (k as f64 * params.distribution().beta()).ceil() as usize;
            let k1137 = (1.137 * k as f64).round() as usize;
            let mut rng = ChaCha8Rng::seed_from_u64(0x4836_0000 + k as u64);
            let mut source = vec![0u8; k * t];
            rng.fill_bytes(&mut source);
            let mut enc = LtEncoder::new(params.clone(), 7, &source).expect("k·T bytes");
            let mut buf = vec![0u8; t];
            let (mut fp_b, mut fp_1, mut fe_b, mut fe_1) = (0u32, 0u32, 0u32, 0u32);
            let (mut sum_p, mut sum_e) = (0usize, 0usize);
            for trial in 0..trials {
                let first = trial * (20 * k as u32 + 1);
                let mut peel = LtDecoder::new(params.clone(), 7);
                let mut elim = LtDecoder::with_elimination(params.clone(), 7);
                let (mut np, mut ne) = (None, None);
                for n in 1..=20 * k {
                    let id = enc.encode(first + n as u32, &mut buf).expect("T bytes");
                    if np.is_none() && peel.push(id, &buf).expect("valid").complete {
                        np = Some(n);
                    }
                    if ne.is_none() && elim.push(id, &buf).expect("valid").complete {
                        ne = Some(n);
                    }
                    if np.is_some() && ne.is_some() {
                        break;
                    }
                }
                let (np, ne) = (
                    np.expect("peeling finished within 20k symbols"),
                    ne.expect("elimination finished within 20k symbols"),
                );
                assert_eq!(peel.data().expect("complete"), &source[..]);
                assert_eq!(elim.data().expect("complete"), &source[..]);
                fp_b += u32::from(np > kbeta);
                fp_1 += u32::from(np > k1137);
                fe_b += u32::from(ne > kbeta);
                fe_1 += u32::from(ne > k1137);
                sum_p += np;
                sum_e += ne;
            }
            let r = |x: u32| f64::from(x) / f64::from(trials);
            println!(
                "| {c} | {k} | {kbeta} | {trials} | {:.3} | {:.3} | {:.3} | {:.3} | {:.0} | {:.0} |",
                r(fp_b),
                r(fp_1),
                r(fe_b),
                r(fe_1),
                sum_p as f64 / f64::from(trials),
                sum_e as f64 / f64::from(trials),
            );
            eprintln!("fig4,{c},{k},peeling,kbeta,{}", r(fp_b));
            eprintln!("fig4,{c},{k},peeling,1.137k,{}", r(fp_1));
            eprintln!("fig4,{c},{k},elimination,kbeta,{}", r(fe_b));
            eprintln!("fig4,{c},{k},elimination,1.137k,{}", r(fe_1));
        }
    }
}
