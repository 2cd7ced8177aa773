//! LT properties: exact recovery, "not yet" below k symbols, typed errors, the elimination
//! completion never doing worse than peeling, and the inactivation decoder agreeing with plain
//! Gaussian elimination (a reference written here, independent of the crate) on every prefix
//! of the received symbols: same rank, same decode/fail outcome, same source symbols.

use proptest::prelude::*;
use rand_chacha::ChaCha8Rng;
use rand_core::{RngCore, SeedableRng};
use tributary_codec::lt::{LtDecoder, LtEncoder, LtParams, LtSymbolId};
use tributary_codec::Error;

/// Reference decoder: the received symbols' full neighbour rows over GF(2), with payloads, in
/// echelon form (a row is reduced by the stored row of its lowest set bit until that bit is
/// new). Rank is exact; at rank k back-substitution from the highest pivot gives the source.
/// This is the Gaussian elimination `LtDecoder::solve` used before inactivation decoding.
struct Reference {
    k: usize,
    t: usize,
    words: usize,
    rows: Vec<Option<(Vec<u64>, Vec<u8>)>>,
    rank: usize,
}

impl Reference {
    fn new(k: usize, t: usize) -> Self {
        Reference {
            k,
            t,
            words: k.div_ceil(64),
            rows: vec![None; k],
            rank: 0,
        }
    }

    fn push(&mut self, neighbours: &[u32], payload: &[u8]) {
        let mut v = vec![0u64; self.words];
        for &n in neighbours {
            v[n as usize / 64] ^= 1 << (n % 64);
        }
        let mut p = payload.to_vec();
        loop {
            let Some(w) = v.iter().position(|&x| x != 0) else {
                return;
            };
            let b = w * 64 + v[w].trailing_zeros() as usize;
            match &self.rows[b] {
                Some((rv, rp)) => {
                    v.iter_mut().zip(rv).for_each(|(x, y)| *x ^= y);
                    p.iter_mut().zip(rp).for_each(|(x, y)| *x ^= y);
                }
                None => {
                    self.rows[b] = Some((v, p));
                    self.rank += 1;
                    return;
                }
            }
        }
    }

    fn solution(&self) -> Option<Vec<u8>> {
        if self.rank < self.k {
            return None;
        }
        let t = self.t;
        let mut x = vec![0u8; self.k * t];
        for b in (0..self.k).rev() {
            let (v, p) = self.rows[b].as_ref()?;
            let mut out = p.clone();
            for c in b + 1..self.k {
                if v[c / 64] >> (c % 64) & 1 == 1 {
                    out.iter_mut()
                        .zip(&x[c * t..(c + 1) * t])
                        .for_each(|(o, y)| *o ^= y);
                }
            }
            x[b * t..(b + 1) * t].copy_from_slice(&out);
        }
        Some(x)
    }
}

/// Feeds `symbols` seeds (with repeats, to make rank-deficient prefixes) to an eliminating
/// decoder, a peeling decoder and the reference, and after every symbol checks: the rank and the
/// completion of the eliminating decoder are the reference's (so it completes at exactly the
/// symbol where the rank reaches k, as Gaussian elimination would); every `solve_every` symbols,
/// the peeling decoder's rank is the reference's and `solve()` on a copy of it succeeds exactly
/// when the reference has rank k, returns the source then, and changes nothing otherwise. Returns whether the reference reached rank k.
fn agree_with_reference(
    params: &LtParams,
    block: u32,
    source: &[u8],
    seeds: &[u32],
    solve_every: usize,
) -> Result<bool, TestCaseError> {
    let (k, t) = (params.k(), params.symbol_size());
    let mut enc = LtEncoder::new(params.clone(), block, source).unwrap();
    let mut elim = LtDecoder::with_elimination(params.clone(), block);
    let mut peel = LtDecoder::new(params.clone(), block);
    let mut reference = Reference::new(k, t);
    let mut buf = vec![0; t];
    let mut neighbours = Vec::new();
    for (n, &seed) in seeds.iter().enumerate() {
        let id = enc.encode(seed, &mut buf).unwrap();
        params.neighbours(id, &mut neighbours);
        reference.push(&neighbours, &buf);
        let full = reference.rank == k;
        let pe = elim.push(id, &buf).unwrap();
        peel.push(id, &buf).unwrap();
        prop_assert_eq!(elim.rank(), reference.rank, "rank after {} symbols", n + 1);
        prop_assert!(pe.rank.is_none() || pe.rank == Some(reference.rank));
        prop_assert_eq!(pe.complete, full);
        if full {
            prop_assert_eq!(elim.data().unwrap(), source);
            prop_assert_eq!(reference.solution().unwrap(), source);
        }
        if n % solve_every == 0 || full {
            prop_assert_eq!(peel.rank(), reference.rank);
            let mut copy = peel.clone();
            let before = copy.decoded_count();
            prop_assert_eq!(copy.solve(), full, "solve after {} symbols", n + 1);
            if full {
                prop_assert_eq!(copy.data().unwrap(), source);
            } else {
                prop_assert_eq!(copy.decoded_count(), before);
                prop_assert!(copy.data().is_err());
                prop_assert!(!peel.is_complete());
            }
        }
        if full {
            return Ok(true);
        }
    }
    Ok(false)
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 64,
        rng_seed: proptest::test_runner::RngSeed::Fixed(crate::PROPTEST_SEED),
        ..ProptestConfig::default()
    })]

    /// Inactivation decoding against the reference Gaussian elimination, on random parameters
    /// (c and δ across their range, so sparse and dense degree distributions) and random seed
    /// streams in which about one symbol in five repeats an earlier seed.
    #[test]
    fn inactivation_decoding_matches_gaussian_elimination(
        k in 1usize..200,
        t in 1usize..24,
        c in 0.005f64..1.0,
        delta in 0.01f64..0.9,
        block in any::<u32>(),
        seed in any::<u64>(),
    ) {
        let Ok(params) = LtParams::new(k, t, c, delta) else {
            return Ok(());
        };
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let mut source = vec![0u8; k * t];
        rng.fill_bytes(&mut source);
        let mut seeds: Vec<u32> = Vec::new();
        for _ in 0..(3 * k + 60) {
            let s = if !seeds.is_empty() && rng.next_u32() % 5 == 0 {
                seeds[rng.next_u32() as usize % seeds.len()]
            } else {
                rng.next_u32()
            };
            seeds.push(s);
        }
        agree_with_reference(&params, block, &source, &seeds, 1)?;
    }

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
            prop_assert_eq!(pe.complete, elim.rank() == k);
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

/// The HMTP size: k = 1000 (c = 0.057, δ = 0.03, the scheme's defaults), where the inactivated
/// core is large (tens of sources, more than one 64-bit word): the eliminating decoder completes
/// at exactly the symbol where the reference's rank reaches k, with the source, and `solve()` on
/// the peeling decoder agrees with the reference every 25 symbols.
#[test]
fn inactivation_decoding_matches_gaussian_elimination_at_k_1000() {
    let (k, t) = (1000, 8);
    let params = LtParams::new(k, t, 0.057, 0.03).unwrap();
    let mut rng = ChaCha8Rng::seed_from_u64(1000);
    for block in 0..3u32 {
        let mut source = vec![0u8; k * t];
        rng.fill_bytes(&mut source);
        let seeds: Vec<u32> = (0..1300).map(|_| rng.next_u32()).collect();
        assert!(agree_with_reference(&params, block, &source, &seeds, 25).unwrap());
    }
}

/// A decoder reset for another block (and another k) behaves exactly like a fresh one: same
/// progress after every symbol and the same block, for both kinds of decoder, including when
/// the previous block was left unfinished.
#[test]
fn a_reset_decoder_is_a_fresh_decoder() {
    let t = 12;
    let mut rng = ChaCha8Rng::seed_from_u64(77);
    for eliminating in [false, true] {
        let make = |p: LtParams, b: u32| {
            if eliminating {
                LtDecoder::with_elimination(p, b)
            } else {
                LtDecoder::new(p, b)
            }
        };
        let mut reused = make(LtParams::new(300, t, 0.05, 0.05).unwrap(), 0);
        for (block, k, stop_early) in [(0u32, 300, false), (1, 120, true), (2, 257, false)] {
            let params = LtParams::new(k, t, 0.05, 0.05).unwrap();
            reused.reset(params.clone(), block);
            let mut fresh = make(params.clone(), block);
            let mut source = vec![0u8; k * t];
            rng.fill_bytes(&mut source);
            let mut enc = LtEncoder::new(params, block, &source).unwrap();
            let mut buf = vec![0; t];
            let limit = if stop_early { k / 2 } else { 3 * k };
            for _ in 0..limit {
                let id = enc.encode(rng.next_u32(), &mut buf).unwrap();
                let a = reused.push(id, &buf).unwrap();
                let b = fresh.push(id, &buf).unwrap();
                assert_eq!(a, b);
                if b.complete {
                    break;
                }
            }
            assert_eq!(reused.rank(), fresh.rank());
            if !stop_early {
                assert!(fresh.is_complete(), "block {block} did not decode");
                assert_eq!(reused.data().unwrap(), &source[..]);
            }
        }
    }
}
