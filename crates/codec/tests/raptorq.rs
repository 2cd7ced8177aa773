//! RaptorQ wrapper properties: exact recovery from random erasure patterns, no completion
//! below k symbols, typed errors where the crate would panic, and symbols identical to the
//! crate's own.

use proptest::prelude::*;
use rand_chacha::ChaCha8Rng;
use rand_core::{RngCore, SeedableRng};
use tributary_codec::raptorq::{
    RaptorqConfig, RaptorqDecoder, RaptorqEncoder, MAX_ENCODING_SYMBOL_ID,
};
use tributary_codec::Error;

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 40,
        rng_seed: proptest::test_runner::RngSeed::Fixed(crate::PROPTEST_SEED),
        ..ProptestConfig::default()
    })]

    #[test]
    fn decodes_exactly_from_random_erasure_patterns(
        k in 1usize..300,
        t in 1usize..64,
        seed in any::<u64>(),
    ) {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let config = RaptorqConfig::new(k, t).unwrap();
        let mut source = vec![0u8; k * t];
        rng.fill_bytes(&mut source);
        let enc = RaptorqEncoder::new(config, source.clone()).unwrap();
        let mut dec = RaptorqDecoder::new(config);
        // A random order over ESIs 0..2k+20: any mix of source and repair symbols, arriving
        // in any order, with the rest lost.
        let mut esis: Vec<u32> = (0..(2 * k + 20) as u32).collect();
        for i in (1..esis.len()).rev() {
            esis.swap(i, (rng.next_u64() % (i as u64 + 1)) as usize);
        }
        let mut buf = vec![0; t];
        for (n, &esi) in esis.iter().enumerate() {
            enc.encode(esi, &mut buf).unwrap();
            let p = dec.push(esi, &buf).unwrap();
            prop_assert_eq!(p.received, n + 1);
            if n + 1 < k {
                prop_assert!(!p.complete);
                let is_not_decoded = matches!(dec.data(), Err(Error::NotDecoded { .. }));
                prop_assert!(is_not_decoded);
            }
            if p.complete {
                break;
            }
        }
        prop_assert!(dec.is_complete(), "not decoded from {} symbols", esis.len());
        // A duplicate changes nothing.
        let p = dec.push(esis[0], &buf).unwrap();
        prop_assert!(!p.new_symbol);
        prop_assert_eq!(dec.into_data().unwrap(), source);
    }
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 60,
        rng_seed: proptest::test_runner::RngSeed::Fixed(crate::PROPTEST_SEED),
        ..ProptestConfig::default()
    })]

    /// The wrapper keeps source symbols itself and calls the crate only from the first repair
    /// symbol on (module docs). It must complete at exactly the push where the crate's own
    /// decoder, given every symbol as it arrives, first returns the block, and return the same
    /// bytes. Patterns as a transport delivers them: most source symbols in order, some lost,
    /// repair symbols interleaved (none, one or many).
    #[test]
    fn completes_at_the_same_symbol_as_the_crate(
        k in 1usize..120,
        t in 1usize..48,
        seed in any::<u64>(),
        loss_per_mille in 0u64..300,
        repairs_per_mille in 0u64..400,
    ) {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let config = RaptorqConfig::new(k, t).unwrap();
        let mut source = vec![0u8; k * t];
        rng.fill_bytes(&mut source);
        let enc = RaptorqEncoder::new(config, source.clone()).unwrap();
        let mut esis: Vec<u32> = Vec::new();
        let mut next_repair = k as u32;
        for i in 0..k as u32 {
            if rng.next_u64() % 1000 >= loss_per_mille {
                esis.push(i);
            }
            while rng.next_u64() % 1000 < repairs_per_mille {
                esis.push(next_repair);
                next_repair += 1;
            }
        }
        // Enough repair symbols at the end for the block to decode.
        for _ in 0..k + 4 {
            esis.push(next_repair);
            next_repair += 1;
        }
        let oti = raptorq::ObjectTransmissionInformation::new((k * t) as u64, t as u16, 1, 1, 1);
        let mut theirs = raptorq::SourceBlockDecoder::new(0, &oti, (k * t) as u64);
        let mut ours = RaptorqDecoder::new(config);
        let mut buf = vec![0; t];
        let mut done = false;
        for &esi in &esis {
            enc.encode(esi, &mut buf).unwrap();
            let p = ours.push(esi, &buf).unwrap();
            let packet = raptorq::EncodingPacket::new(raptorq::PayloadId::new(0, esi), buf.clone());
            let got = theirs.decode(std::iter::once(packet));
            prop_assert_eq!(p.complete, got.is_some(), "esi {} of {:?}", esi, esis);
            if let Some(data) = got {
                prop_assert_eq!(&data, &source);
                done = true;
                break;
            }
        }
        prop_assert!(done, "never decoded");
        prop_assert_eq!(ours.into_data().unwrap(), source);
    }
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 200,
        rng_seed: proptest::test_runner::RngSeed::Fixed(crate::PROPTEST_SEED),
        ..ProptestConfig::default()
    })]

    /// Symbols as a hostile peer may send them (any ESI, including beyond 2^24, wrong
    /// lengths, arbitrary bytes, repeats, repair symbols only) never make the decoder panic:
    /// a bad symbol is an error and changes nothing, and the decoder never claims the block
    /// with fewer than k distinct symbols. Small k takes the rows' path, k above 256 the
    /// crate's.
    #[test]
    fn hostile_symbols_are_errors_or_counted_never_a_panic(
        k in prop_oneof![1usize..40, 257usize..270],
        t in 1usize..24,
        seed in any::<u64>(),
    ) {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let config = RaptorqConfig::new(k, t).unwrap();
        let mut dec = RaptorqDecoder::new(config);
        let mut distinct = std::collections::HashSet::new();
        for _ in 0..(3 * k + 10) {
            let esi = match rng.next_u64() % 4 {
                0 => (rng.next_u64() % k as u64) as u32,
                1 => k as u32 + (rng.next_u64() % 64) as u32,
                2 => (rng.next_u64() % (1 << 25)) as u32,
                _ => MAX_ENCODING_SYMBOL_ID - (rng.next_u64() % 4) as u32,
            };
            let len = if rng.next_u64() % 8 == 0 { t + 1 } else { t };
            let mut payload = vec![0u8; len];
            rng.fill_bytes(&mut payload);
            let before = dec.received();
            match dec.push(esi, &payload) {
                Ok(p) => {
                    prop_assert!(len == t && esi <= MAX_ENCODING_SYMBOL_ID);
                    if p.new_symbol {
                        distinct.insert(esi);
                    }
                    if p.complete {
                        prop_assert!(distinct.len() >= k, "complete with {} < k = {k}", distinct.len());
                    }
                }
                Err(_) => {
                    prop_assert!(len != t || esi > MAX_ENCODING_SYMBOL_ID);
                    prop_assert_eq!(dec.received(), before);
                }
            }
            if dec.is_complete() {
                prop_assert_eq!(dec.data().unwrap().len(), k * t);
            }
        }
    }
}

/// Source symbols alone, in any order (in order, reversed, shuffled, the last first), give
/// back the block: the decoder holds them in place as they come, without the crate.
#[test]
fn source_symbols_in_any_order_give_the_block() {
    let mut rng = ChaCha8Rng::seed_from_u64(7);
    for &(k, t) in &[(1, 1), (2, 3), (24, 1340), (57, 16), (200, 7)] {
        let config = RaptorqConfig::new(k, t).unwrap();
        let mut source = vec![0u8; k * t];
        rng.fill_bytes(&mut source);
        let enc = RaptorqEncoder::new(config, source.clone()).unwrap();
        let mut shuffled: Vec<u32> = (0..k as u32).collect();
        for i in (1..k).rev() {
            shuffled.swap(i, (rng.next_u64() % (i as u64 + 1)) as usize);
        }
        let mut last_first: Vec<u32> = (0..k as u32).collect();
        last_first.rotate_right(1);
        let orders = [
            (0..k as u32).collect::<Vec<_>>(),
            (0..k as u32).rev().collect(),
            shuffled,
            last_first,
        ];
        for order in orders {
            let mut dec = RaptorqDecoder::new(config);
            let mut buf = vec![0; t];
            for (n, &esi) in order.iter().enumerate() {
                enc.encode(esi, &mut buf).unwrap();
                let p = dec.push(esi, &buf).unwrap();
                assert_eq!(p.complete, n + 1 == k, "k {k}, order {order:?}, push {n}");
            }
            assert_eq!(
                dec.into_data().unwrap(),
                source,
                "k {k}, t {t}, order {order:?}"
            );
        }
    }
}

#[test]
fn repair_symbols_are_the_crates() {
    let (k, t) = (50usize, 24usize);
    let data: Vec<u8> = (0..k * t).map(|i| (i * 7 + 3) as u8).collect();
    let config = RaptorqConfig::new(k, t).unwrap();
    let ours = RaptorqEncoder::new(config, data.clone()).unwrap();
    let oti = raptorq::ObjectTransmissionInformation::new((k * t) as u64, t as u16, 1, 1, 1);
    let theirs = raptorq::SourceBlockEncoder::new(0, &oti, &data);
    let packets = theirs.repair_packets(0, 30);
    let mut buf = vec![0; t];
    let mut batch = vec![0; 30 * t];
    ours.encode_repair(k as u32, &mut batch).unwrap();
    for (i, p) in packets.iter().enumerate() {
        assert_eq!(p.payload_id().encoding_symbol_id(), (k + i) as u32);
        ours.encode((k + i) as u32, &mut buf).unwrap();
        assert_eq!(&buf[..], p.data());
        assert_eq!(&batch[i * t..(i + 1) * t], p.data());
    }
}

/// A small block's encoder writes its first repair symbols from rows of source-symbol
/// coefficients and later ones from the crate's intermediate symbols (module docs); either
/// way, one by one or in batches, they are the crate's bytes.
#[test]
fn repair_symbols_from_rows_and_from_the_solver_are_the_crates() {
    for &(k, t) in &[(1usize, 5usize), (24, 1340), (101, 9), (300, 3)] {
        let data: Vec<u8> = (0..k * t).map(|i| (i * 31 + i / 7) as u8).collect();
        let config = RaptorqConfig::new(k, t).unwrap();
        let oti = raptorq::ObjectTransmissionInformation::new((k * t) as u64, t as u16, 1, 1, 1);
        let theirs = raptorq::SourceBlockEncoder::new(0, &oti, &data);
        let packets = theirs.repair_packets(0, 60);
        // One by one: the first 16 from rows (k ≤ 256), the rest from the solver.
        let ours = RaptorqEncoder::new(config, data.clone()).unwrap();
        let mut buf = vec![0; t];
        for (i, p) in packets.iter().enumerate() {
            ours.encode((k + i) as u32, &mut buf).unwrap();
            assert_eq!(&buf[..], p.data(), "k {k}, repair {i}");
        }
        // Batches of 5, 5 and 50: rows, rows, then the solver.
        let ours = RaptorqEncoder::new(config, data.clone()).unwrap();
        let mut batch = vec![0; 60 * t];
        let (a, rest) = batch.split_at_mut(5 * t);
        let (b, c) = rest.split_at_mut(5 * t);
        ours.encode_repair(k as u32, a).unwrap();
        ours.encode_repair((k + 5) as u32, b).unwrap();
        ours.encode_repair((k + 10) as u32, c).unwrap();
        for (i, p) in packets.iter().enumerate() {
            assert_eq!(
                &batch[i * t..(i + 1) * t],
                p.data(),
                "k {k}, batch repair {i}"
            );
        }
    }
}

/// The decoder solves small blocks missing few symbols from rows, without the crate (module
/// docs). It must complete at exactly the push where the crate's decoder does and return the
/// same bytes, including the pushes where k or more symbols are held but do not determine the
/// block (RFC 6330 §1: about 1 % at exactly k symbols). Each trial loses m source symbols
/// (1..=40: up to 16 the rows solve, beyond that the rows only tell when the block is
/// determined and the crate solves), delivers the rest in a random order with m repair
/// symbols of random ESIs among them, then one more repair symbol at a time.
#[test]
fn completes_where_the_crate_does_at_exactly_k_symbols() {
    let mut rng = ChaCha8Rng::seed_from_u64(11);
    let t = 4usize;
    let mut not_at_k = 0;
    let mut beyond_rows = 0;
    let mut trials = 0;
    for &k in &[1usize, 2, 3, 5, 10, 24, 40, 100] {
        let config = RaptorqConfig::new(k, t).unwrap();
        let oti = raptorq::ObjectTransmissionInformation::new((k * t) as u64, t as u16, 1, 1, 1);
        for _ in 0..400 {
            let mut source = vec![0u8; k * t];
            rng.fill_bytes(&mut source);
            let enc = RaptorqEncoder::new(config, source.clone()).unwrap();
            let m = 1 + (rng.next_u64() % k.min(40) as u64) as usize;
            let mut esis: Vec<u32> = (0..k as u32).collect();
            for i in (1..k).rev() {
                esis.swap(i, (rng.next_u64() % (i as u64 + 1)) as usize);
            }
            esis.truncate(k - m);
            let mut repairs = std::collections::BTreeSet::new();
            while repairs.len() < m + 8 {
                repairs.insert(k as u32 + (rng.next_u64() % 5000) as u32);
            }
            let mut repairs: Vec<u32> = repairs.into_iter().collect();
            for i in (1..repairs.len()).rev() {
                repairs.swap(i, (rng.next_u64() % (i as u64 + 1)) as usize);
            }
            esis.extend_from_slice(&repairs[..m]);
            for i in (1..k).rev() {
                esis.swap(i, (rng.next_u64() % (i as u64 + 1)) as usize);
            }
            esis.extend_from_slice(&repairs[m..]);
            let mut theirs = raptorq::SourceBlockDecoder::new(0, &oti, (k * t) as u64);
            let mut ours = RaptorqDecoder::new(config);
            let mut buf = vec![0; t];
            trials += 1;
            let mut done = false;
            for (n, &esi) in esis.iter().enumerate() {
                enc.encode(esi, &mut buf).unwrap();
                let p = ours.push(esi, &buf).unwrap();
                let packet =
                    raptorq::EncodingPacket::new(raptorq::PayloadId::new(0, esi), buf.clone());
                let got = theirs.decode(std::iter::once(packet));
                assert_eq!(
                    p.complete,
                    got.is_some(),
                    "k {k}, m {m}, push {n} of {esis:?}"
                );
                if let Some(data) = got {
                    assert_eq!(data, source);
                    not_at_k += usize::from(n + 1 > k);
                    beyond_rows += usize::from(n + 1 > k && m > 16);
                    done = true;
                    break;
                }
            }
            assert!(done, "k {k}, m {m}: not decoded from {esis:?}");
            assert_eq!(ours.into_data().unwrap(), source);
        }
    }
    // The trials must include blocks that did not decode at exactly k symbols, or the
    // comparison above never saw the two decoders refuse together.
    assert!(
        not_at_k > 0,
        "all {trials} trials decoded at exactly k symbols"
    );
    assert!(
        beyond_rows > 0,
        "no trial with more than 16 missing symbols needed more than k symbols"
    );
    eprintln!(
        "{not_at_k} of {trials} trials needed more than k symbols, {beyond_rows} with m > 16"
    );
}

#[test]
fn malformed_input_is_a_typed_error() {
    assert!(matches!(
        RaptorqConfig::new(0, 8),
        Err(Error::BlockSizeOutOfRange { .. })
    ));
    assert!(matches!(
        RaptorqConfig::new(56_404, 8),
        Err(Error::BlockSizeOutOfRange { .. })
    ));
    assert!(matches!(
        RaptorqConfig::new(10, 0),
        Err(Error::SymbolSizeOutOfRange { .. })
    ));
    assert!(matches!(
        RaptorqConfig::new(10, 65_536),
        Err(Error::SymbolSizeOutOfRange { .. })
    ));
    let config = RaptorqConfig::new(10, 8).unwrap();
    assert!(matches!(
        RaptorqEncoder::new(config, vec![0; 81]),
        Err(Error::LengthMismatch { .. })
    ));
    let enc = RaptorqEncoder::new(config, vec![0; 80]).unwrap();
    assert!(matches!(
        enc.encode(MAX_ENCODING_SYMBOL_ID + 1, &mut [0; 8]),
        Err(Error::UnknownSymbol { .. })
    ));
    assert!(matches!(
        enc.encode(3, &mut [0; 9]),
        Err(Error::LengthMismatch { .. })
    ));
    assert!(matches!(
        enc.encode_repair(5, &mut [0; 16]),
        Err(Error::UnknownSymbol { .. })
    ));
    assert!(matches!(
        enc.encode_repair(MAX_ENCODING_SYMBOL_ID, &mut [0; 16]),
        Err(Error::UnknownSymbol { .. })
    ));
    assert!(matches!(
        enc.encode_repair(10, &mut [0; 15]),
        Err(Error::LengthMismatch { .. })
    ));
    let mut dec = RaptorqDecoder::new(config);
    assert!(matches!(
        dec.push(1 << 24, &[0; 8]),
        Err(Error::UnknownSymbol { .. })
    ));
    assert!(matches!(
        dec.push(0, &[0; 7]),
        Err(Error::LengthMismatch { .. })
    ));
    assert_eq!(dec.received(), 0);
    // The highest valid id is accepted (the crate asserts beyond it).
    enc.encode(MAX_ENCODING_SYMBOL_ID, &mut [0; 8]).unwrap();
    dec.push(MAX_ENCODING_SYMBOL_ID, &[0; 8]).unwrap();
}
