//! Cross-checks of the GF(2^8) slice kernels: every kernel this CPU has must agree with the
//! scalar one, byte for byte, on random inputs (lengths that are not multiples of the vector
//! width included).

use proptest::prelude::*;
use tributary_codec::gf256::{self, Kernel};

fn reference_mul_add(dst: &mut [u8], src: &[u8], c: u8) {
    for (d, &s) in dst.iter_mut().zip(src) {
        *d ^= gf256::mul(c, s);
    }
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 256,
        rng_seed: proptest::test_runner::RngSeed::Fixed(crate::PROPTEST_SEED),
        ..ProptestConfig::default()
    })]

    #[test]
    fn all_kernels_agree(
        (src, dst) in (0usize..3000).prop_flat_map(|n| (
            proptest::collection::vec(any::<u8>(), n),
            proptest::collection::vec(any::<u8>(), n),
        )),
        c in any::<u8>(),
    ) {
        let mut expected = dst.clone();
        reference_mul_add(&mut expected, &src, c);
        let expected_mul: Vec<u8> = src.iter().map(|&s| gf256::mul(c, s)).collect();
        let expected_xor: Vec<u8> = dst.iter().zip(&src).map(|(a, b)| a ^ b).collect();
        for k in Kernel::available() {
            let mut d = dst.clone();
            k.mul_add(&mut d, &src, c).unwrap();
            prop_assert_eq!(&d, &expected, "mul_add {:?}", k);
            let mut d = dst.clone();
            k.mul(&mut d, &src, c).unwrap();
            prop_assert_eq!(&d, &expected_mul, "mul {:?}", k);
            let mut d = dst.clone();
            k.xor(&mut d, &src).unwrap();
            prop_assert_eq!(&d, &expected_xor, "xor {:?}", k);
        }
    }

    #[test]
    fn fused_multi_source_kernel_agrees(
        n in 0usize..700,
        m in 0usize..40,
        seed in any::<u64>(),
    ) {
        // Deterministic pseudo-random content from the seed (splitmix64).
        let mut s = seed;
        let mut next = move || {
            s = s.wrapping_add(0x9E37_79B9_7F4A_7C15);
            let mut z = s;
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            (z ^ (z >> 31)) as u8
        };
        let srcs: Vec<Vec<u8>> = (0..m).map(|_| (0..n).map(|_| next()).collect()).collect();
        let coeffs: Vec<u8> = (0..m).map(|_| next()).collect();
        let dst: Vec<u8> = (0..n).map(|_| next()).collect();
        let mut expected = dst.clone();
        for (s, &c) in srcs.iter().zip(&coeffs) {
            reference_mul_add(&mut expected, s, c);
        }
        let terms: Vec<(u8, &[u8])> = coeffs.iter().copied().zip(srcs.iter().map(|s| &s[..])).collect();
        let mut expected_set = vec![0; n];
        for (s, &c) in srcs.iter().zip(&coeffs) {
            reference_mul_add(&mut expected_set, s, c);
        }
        for k in Kernel::available() {
            let mut d = dst.clone();
            k.mul_add_multi(&mut d, &terms).unwrap();
            prop_assert_eq!(&d, &expected, "{:?}", k);
            let mut d = dst.clone();
            k.mul_multi(&mut d, &terms).unwrap();
            prop_assert_eq!(&d, &expected_set, "mul_multi {:?}", k);
        }
    }
}

#[test]
fn every_coefficient_on_every_byte() {
    let src: Vec<u8> = (0..=255u8).cycle().take(256 + 31).collect();
    for c in 0..=255u8 {
        let mut expected = vec![0x5a; src.len()];
        reference_mul_add(&mut expected, &src, c);
        for k in Kernel::available() {
            let mut d = vec![0x5a; src.len()];
            k.mul_add(&mut d, &src, c).unwrap();
            assert_eq!(d, expected, "{k:?} c={c}");
        }
    }
}

/// Every length around the vector widths (ragged ends, and slices shorter than one vector).
#[test]
fn every_short_length() {
    for len in 0..130usize {
        let src: Vec<u8> = (0..len).map(|i| (i * 37 + 11) as u8).collect();
        let src2: Vec<u8> = (0..len).map(|i| (i * 101 + 3) as u8).collect();
        for c in [0u8, 1, 2, 0x53, 0xff] {
            let mut expected = vec![0xa5; len];
            reference_mul_add(&mut expected, &src, c);
            let mut expected_multi = expected.clone();
            for (s, c2) in [
                (&src2, 7u8),
                (&src, 9),
                (&src2, 200),
                (&src, 1),
                (&src2, 77),
            ] {
                reference_mul_add(&mut expected_multi, s, c2);
            }
            for k in Kernel::available() {
                let mut d = vec![0xa5; len];
                k.mul_add(&mut d, &src, c).unwrap();
                assert_eq!(d, expected, "{k:?} len={len} c={c}");
                let mut m = vec![0; len];
                k.mul(&mut m, &src, c).unwrap();
                let expected_mul: Vec<u8> = src.iter().map(|&s| gf256::mul(c, s)).collect();
                assert_eq!(m, expected_mul, "{k:?} len={len} c={c}");
                let terms: [(u8, &[u8]); 6] = [
                    (c, &src),
                    (7, &src2),
                    (9, &src),
                    (200, &src2),
                    (1, &src),
                    (77, &src2),
                ];
                let mut d = vec![0xa5; len];
                k.mul_add_multi(&mut d, &terms).unwrap();
                assert_eq!(d, expected_multi, "{k:?} multi len={len} c={c}");
                let mut expected_set = vec![0; len];
                for &(c, s) in &terms {
                    reference_mul_add(&mut expected_set, s, c);
                }
                let mut d = vec![0xa5; len];
                k.mul_multi(&mut d, &terms).unwrap();
                assert_eq!(d, expected_set, "{k:?} mul_multi len={len} c={c}");
                let mut d = vec![0xa5; len];
                k.xor(&mut d, &src).unwrap();
                let expected_xor: Vec<u8> = src.iter().map(|&s| s ^ 0xa5).collect();
                assert_eq!(d, expected_xor, "{k:?} xor len={len}");
            }
        }
    }
}
