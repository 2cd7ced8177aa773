//! CPU cost per symbol of the LT encoder and the eliminating decoder at HMTP's defaults
//! (k = 1000, c = 0.057, δ = 0.03, T = 1376 bytes): a measuring aid for issue 12.
//!
//! ```text
//! cargo run --release -p tributary-codec --example lt_cost            # 60 blocks
//! cargo run --release -p tributary-codec --example lt_cost -- 200     # 200 blocks
//! ```
//!
//! Every block is encoded symbol by symbol (seeds 0, 1, …, every fifth symbol dropped as if
//! lost) into an eliminating decoder reused from block to block, as `hmtp` does, until the
//! decoder completes; the decoded block is checked against the source. Prints nanoseconds per
//! symbol for encoding and for decoding (median over blocks).

use rand_chacha::ChaCha8Rng;
use rand_core::{RngCore, SeedableRng};
use std::time::Instant;
use tributary_codec::lt::{LtDecoder, LtEncoder, LtParams, LtSymbolId};

fn main() {
    let blocks: usize = std::env::args()
        .nth(1)
        .map(|s| s.parse().expect("the number of blocks must be an integer"))
        .unwrap_or(60);
    let (k, t) = (1000, 1376);
    let params = LtParams::new(k, t, 0.057, 0.03).expect("valid parameters");
    let mut rng = ChaCha8Rng::seed_from_u64(12);
    let mut data = vec![0u8; k * t];
    let mut dec = LtDecoder::with_elimination(params.clone(), 0);
    let mut sym = vec![0u8; t];
    let (mut enc_ns, mut dec_ns) = (Vec::new(), Vec::new());
    let mut symbols = 0;
    for b in 0..blocks as u32 {
        // Cheap pseudo-random bytes (the source content does not change the cost).
        let mut x = rng.next_u64() | 1;
        for w in data.chunks_exact_mut(8) {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            w.copy_from_slice(&x.to_le_bytes());
        }
        let mut enc =
            LtEncoder::from_vec(params.clone(), b, std::mem::take(&mut data)).expect("k·T bytes");
        dec.reset(params.clone(), b);
        let (mut te, mut td, mut n) = (0u128, 0u128, 0u32);
        let mut seed = 0u32;
        while !dec.is_complete() {
            let s = Instant::now();
            enc.encode(seed, &mut sym).expect("T bytes");
            te += s.elapsed().as_nanos();
            if seed % 5 != 4 {
                let s = Instant::now();
                dec.push(LtSymbolId { block: b, seed }, &sym)
                    .expect("same block");
                td += s.elapsed().as_nanos();
                n += 1;
            }
            seed += 1;
        }
        data = enc.into_data();
        assert_eq!(
            dec.data().expect("complete"),
            &data[..],
            "block {b} decoded wrongly"
        );
        enc_ns.push(te as f64 / f64::from(seed));
        dec_ns.push(td as f64 / f64::from(n));
        symbols += n;
    }
    let median = |v: &mut Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    println!(
        "{blocks} blocks, {:.1} symbols received per block: encode {:.0} ns/symbol, decode {:.0} ns/symbol",
        f64::from(symbols) / blocks as f64,
        median(&mut enc_ns),
        median(&mut dec_ns)
    );
}
