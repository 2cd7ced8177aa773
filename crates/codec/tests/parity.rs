//! XOR parity: any single loss of a group of random packets of random lengths is rebuilt
//! exactly; two losses are reported as such.

use proptest::prelude::*;
use tributary_codec::parity::{XorDecoder, XorEncoder};
use tributary_codec::Error;

proptest! {
    #[test]
    fn any_single_loss_is_recovered(
        packets in proptest::collection::vec(proptest::collection::vec(any::<u8>(), 0..1500), 1..12),
        lost in any::<proptest::sample::Index>(),
        second in any::<proptest::sample::Index>(),
    ) {
        let mut enc = XorEncoder::new();
        for p in &packets {
            enc.push(p);
        }
        let (parity, lengths) = enc.finish();
        prop_assert!(enc.is_empty());
        let lost = lost.index(packets.len());
        let mut dec = XorDecoder::new(lengths.clone()).unwrap();
        dec.push_parity(&parity).unwrap();
        for (i, p) in packets.iter().enumerate().filter(|&(i, _)| i != lost) {
            dec.push(i, p).unwrap();
        }
        prop_assert_eq!(dec.recover().unwrap(), Some((lost, packets[lost].clone())));

        // Two data packets lost: not recoverable, and said so.
        let second = second.index(packets.len());
        if packets.len() > 1 && second != lost {
            let mut dec = XorDecoder::new(lengths).unwrap();
            dec.push_parity(&parity).unwrap();
            for (i, p) in packets.iter().enumerate().filter(|&(i, _)| i != lost && i != second) {
                dec.push(i, p).unwrap();
            }
            prop_assert!(!dec.can_recover());
            prop_assert_eq!(dec.recover(), Err(Error::TooManyMissing { missing: 2 }));
        }
    }
}
