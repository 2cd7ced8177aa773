//! LT properties: exact recovery, "not yet" below k symbols, typed errors, and the elimination
//! completion never doing worse than peeling.

use proptest::prelude::*;
use rand_chacha::ChaCha8Rng;
use rand_core::{RngCore, SeedableRng};
use tributary_codec::lt::{LtDecoder, LtEncoder, LtParams, LtSymbolId};
use tributary_codec::Error;

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// Symbols with random seeds (a random erasure pattern of the fountain) go to a peeling
    /// decoder and an eliminating one. The eliminating one completes exactly when the GF(2) rank
    /// reaches k, never later than peeling, and both return the source exactly.
    #[test]
    fn decodes_exactly_and_elimination_is_never_worse(
        k in 1usize..160,
        t in 1usize..48,
        c in 0.02f64..0.5,
        delta in 0.01f64..0.5,
        block in any::<u32>(),
        seed in any::<u64>(),
    ) {
        let Ok(params) = LtParams::new(k, t, c, delta) else {
            // Only c so small that S ≤ δ is rejected; that is a typed error, checked below.
            prop_assert!(c * ((k as f64) / delta).ln() * (k as f64).sqrt() <= delta);
            return Ok(());
        };
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let mut source = vec![0u8; k * t];
        rng.fill_bytes(&mut source);
        let mut enc = LtEncoder::new(params.clone(), block, &source).unwrap();
        let mut peel = LtDecoder::new(params.clone(), block);
        let mut elim = LtDecoder::with_elimination(params, block);
        let mut buf = vec![0; t];
        let mut peel_done_at = None;
        let mut elim_done_at = None;
        for n in 1..=(4 * k + 200) {
            let id = enc.encode(rng.next_u32(), &mut buf).unwrap();
            let pp = peel.push(id, &buf).unwrap();
            let pe = elim.push(id, &buf).unwrap();
            prop_assert_eq!(pe.complete, pe.rank == Some(k));
            if n < k {
                prop_assert!(!pp.complete && !pe.complete);
                prop_assert!(peel.data().is_err());
            }
            if pp.complete && peel_done_at.is_none() {
                peel_done_at = Some(n);
            }
            if pe.complete && elim_done_at.is_none() {
                elim_done_at = Some(n);
            }
            if pp.complete && pe.complete {
                break;
            }
        }
        let e = elim_done_at.expect("elimination decoder did not complete");
        if let Some(p) = peel_done_at {
            prop_assert!(e <= p);
            prop_assert_eq!(peel.data().unwrap(), &source[..]);
        }
        let mut released = 0;
        while let Some(i) = elim.pop_decoded() {
            prop_assert_eq!(elim.source_symbol(i).unwrap(), &source[i * t..(i + 1) * t]);
            released += 1;
        }
        prop_assert_eq!(released, k);
        prop_assert_eq!(elim.into_data().unwrap(), source);
    }
}

#[test]
fn malformed_input_is_a_typed_error() {
    assert!(matches!(
        LtParams::new(0, 8, 0.1, 0.05),
        Err(Error::BlockSizeOutOfRange { .. })
    ));
    assert!(matches!(
        LtParams::new(1 << 20, 8, 0.1, 0.05),
        Err(Error::BlockSizeOutOfRange { .. })
    ));
    assert!(matches!(
        LtParams::new(10, 0, 0.1, 0.05),
        Err(Error::SymbolSizeOutOfRange { .. })
    ));
    assert!(matches!(
        LtParams::new(10, 8, -1.0, 0.05),
        Err(Error::InvalidParameter { name: "c", .. })
    ));
    let params = LtParams::new(10, 8, 0.1, 0.05).unwrap();
    assert!(matches!(
        LtEncoder::new(params.clone(), 0, &[0; 79]),
        Err(Error::LengthMismatch { .. })
    ));
    let mut enc = LtEncoder::new(params.clone(), 0, &[0; 80]).unwrap();
    assert!(matches!(
        enc.encode(1, &mut [0; 7]),
        Err(Error::LengthMismatch { .. })
    ));
    let mut dec = LtDecoder::new(params, 0);
    assert!(matches!(
        dec.push(LtSymbolId { block: 1, seed: 0 }, &[0; 8]),
        Err(Error::UnknownSymbol { .. })
    ));
    assert!(matches!(
        dec.push(LtSymbolId { block: 0, seed: 0 }, &[0; 9]),
        Err(Error::LengthMismatch { .. })
    ));
    assert_eq!(dec.received(), 0);
    assert!(matches!(dec.data(), Err(Error::NotDecoded { .. })));
}

/// Explicit solve on a stalled peel: with a fixed seed stream, find a point where peeling has
/// stalled but the rank is k, and check that `solve` finishes it.
#[test]
fn solve_completes_a_stalled_peel() {
    let (k, t) = (200, 16);
    let params = LtParams::new(k, t, 0.05, 0.05).unwrap();
    let source: Vec<u8> = (0..k * t).map(|i| (i * 31 % 251) as u8).collect();
    let mut enc = LtEncoder::new(params.clone(), 9, &source).unwrap();
    let mut stalled_and_solved = 0;
    for trial in 0..20u32 {
        let mut peel = LtDecoder::new(params.clone(), 9);
        let mut rank = LtDecoder::with_elimination(params.clone(), 9);
        let mut buf = vec![0; t];
        for s in 0.. {
            let id = enc.encode(trial * 100_000 + s, &mut buf).unwrap();
            peel.push(id, &buf).unwrap();
            if rank.push(id, &buf).unwrap().complete {
                break;
            }
        }
        if !peel.is_complete() {
            assert!(peel.solve());
            assert_eq!(peel.data().unwrap(), &source[..]);
            stalled_and_solved += 1;
        }
    }
    assert!(stalled_and_solved > 0, "no stalled peel in 20 trials");
}

/// Cross-check of the peeling decoder against a naive, independent implementation of the same
/// rule (repeatedly take any received symbol with exactly one unknown neighbour): both must
/// need the same number of symbols, since the set a peel recovers does not depend on order.
#[test]
fn peeling_matches_a_naive_peeler() {
    let (k, t) = (300, 4);
    let params = LtParams::new(k, t, 0.05, 0.05).unwrap();
    let source = vec![0u8; k * t];
    let mut enc = LtEncoder::new(params.clone(), 2, &source).unwrap();
    let mut buf = vec![0; t];
    let mut neighbours = Vec::new();
    for trial in 0..10u32 {
        let mut dec = LtDecoder::new(params.clone(), 2);
        let mut sets: Vec<Vec<u32>> = Vec::new();
        let mut known = vec![false; k];
        for n in 1.. {
            let id = enc.encode(trial << 20 | n, &mut buf).unwrap();
            params.neighbours(id, &mut neighbours);
            sets.push(neighbours.clone());
            let fast = dec.push(id, &buf).unwrap().decoded;
            // Naive peel to a fixed point.
            loop {
                let mut progress = false;
                for s in &sets {
                    let unknown: Vec<u32> =
                        s.iter().copied().filter(|&x| !known[x as usize]).collect();
                    if unknown.len() == 1 {
                        known[unknown[0] as usize] = true;
                        progress = true;
                    }
                }
                if !progress {
                    break;
                }
            }
            let naive = known.iter().filter(|&&x| x).count();
            assert_eq!(fast, naive, "trial {trial}, {n} symbols");
            if naive == k {
                break;
            }
        }
    }
}
