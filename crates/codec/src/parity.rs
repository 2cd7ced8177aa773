//! XOR parity: one parity packet over a group of n packets of possibly different lengths.
//!
//! The parity is the XOR of the packets, each zero-padded to the longest; it is as long as the
//! longest packet. The lengths must travel with the parity (the scheme puts them in its header)
//! so that a rebuilt packet can be cut back to its true length. With the parity and all but one
//! packet, the missing one is the XOR of everything received.

use crate::error::{check_len, Error, Result};
use crate::gf256::Kernel;

/// Builds the parity of a group packet by packet (the sender side).
#[derive(Debug, Clone, Default)]
pub struct XorEncoder {
    parity: Vec<u8>,
    lengths: Vec<usize>,
}

impl XorEncoder {
    /// An empty group.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds the next packet of the group.
    pub fn push(&mut self, packet: &[u8]) {
        if packet.len() > self.parity.len() {
            self.parity.resize(packet.len(), 0);
        }
        let kernel = Kernel::best();
        // SAFETY: the best kernel is available; both slices have `packet.len()` bytes.
        unsafe { kernel.xor_unchecked(&mut self.parity[..packet.len()], packet) };
        self.lengths.push(packet.len());
    }

    /// Number of packets added so far.
    pub fn len(&self) -> usize {
        self.lengths.len()
    }

    /// Whether no packet was added yet.
    pub fn is_empty(&self) -> bool {
        self.lengths.is_empty()
    }

    /// The parity of the packets added so far (as long as the longest of them).
    pub fn parity(&self) -> &[u8] {
        &self.parity
    }

    /// The lengths of the packets added so far, in order.
    pub fn lengths(&self) -> &[usize] {
        &self.lengths
    }

    /// Ends the group and starts a new one, returning the parity and the lengths.
    pub fn finish(&mut self) -> (Vec<u8>, Vec<usize>) {
        (
            std::mem::take(&mut self.parity),
            std::mem::take(&mut self.lengths),
        )
    }
}

/// Collects a group at the receiver and rebuilds a single missing packet.
#[derive(Debug, Clone)]
pub struct XorDecoder {
    lengths: Vec<usize>,
    acc: Vec<u8>,
    received: Vec<bool>,
    received_count: usize,
    parity_received: bool,
}

impl XorDecoder {
    /// A decoder for a group whose packet lengths are `lengths` (from the parity's header).
    ///
    /// Errors if the group is empty.
    pub fn new(lengths: Vec<usize>) -> Result<Self> {
        if lengths.is_empty() {
            return Err(Error::BlockSizeOutOfRange {
                k: 0,
                min: 1,
                max: usize::MAX,
            });
        }
        let max = lengths.iter().copied().max().unwrap_or(0);
        let n = lengths.len();
        Ok(Self {
            lengths,
            acc: vec![0; max],
            received: vec![false; n],
            received_count: 0,
            parity_received: false,
        })
    }

    /// Number of packets in the group (parity not counted).
    pub fn group_len(&self) -> usize {
        self.lengths.len()
    }

    /// Records packet `index` of the group. A duplicate is ignored.
    ///
    /// Errors if `index` is outside the group or the packet length differs from the recorded one.
    pub fn push(&mut self, index: usize, packet: &[u8]) -> Result<()> {
        let &len = self.lengths.get(index).ok_or(Error::UnknownSymbol {
            id: index as u64,
            limit: self.lengths.len() as u64,
        })?;
        check_len(len, packet.len())?;
        if !self.received[index] {
            self.received[index] = true;
            self.received_count += 1;
            // SAFETY: the best kernel is available; both slices have `len` bytes.
            unsafe { Kernel::best().xor_unchecked(&mut self.acc[..len], packet) };
        }
        Ok(())
    }

    /// Records the parity packet. A duplicate is ignored.
    ///
    /// Errors if its length is not that of the longest packet of the group.
    pub fn push_parity(&mut self, parity: &[u8]) -> Result<()> {
        check_len(self.acc.len(), parity.len())?;
        if !self.parity_received {
            self.parity_received = true;
            // SAFETY: the best kernel is available; both slices have the same length.
            unsafe { Kernel::best().xor_unchecked(&mut self.acc, parity) };
        }
        Ok(())
    }

    /// Indices of the packets not received yet.
    pub fn missing(&self) -> impl Iterator<Item = usize> + '_ {
        self.received
            .iter()
            .enumerate()
            .filter(|(_, &r)| !r)
            .map(|(i, _)| i)
    }

    /// Whether [`XorDecoder::recover`] would rebuild a packet now.
    pub fn can_recover(&self) -> bool {
        self.parity_received && self.received_count + 1 == self.lengths.len()
    }

    /// Rebuilds the missing packet: `Ok(None)` when nothing is missing, `Ok(Some((index,
    /// packet)))` when exactly one data packet is missing and the parity is here.
    ///
    /// Errors with [`Error::TooManyMissing`] when more than one packet (counting the parity) is
    /// missing.
    pub fn recover(&self) -> Result<Option<(usize, Vec<u8>)>> {
        let missing_data = self.lengths.len() - self.received_count;
        if missing_data == 0 {
            return Ok(None);
        }
        if !self.can_recover() {
            return Err(Error::TooManyMissing {
                missing: missing_data + usize::from(!self.parity_received),
            });
        }
        let index = self.missing().next().unwrap_or(0);
        Ok(Some((index, self.acc[..self.lengths[index]].to_vec())))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recovers_each_single_loss_of_uneven_packets() {
        let packets: Vec<Vec<u8>> = vec![vec![1; 10], vec![2, 3, 4], vec![], vec![9; 77]];
        let mut enc = XorEncoder::new();
        for p in &packets {
            enc.push(p);
        }
        let (parity, lengths) = enc.finish();
        assert_eq!(parity.len(), 77);
        for lost in 0..packets.len() {
            let mut dec = XorDecoder::new(lengths.clone()).unwrap();
            for (i, p) in packets.iter().enumerate().filter(|&(i, _)| i != lost) {
                dec.push(i, p).unwrap();
            }
            assert!(matches!(
                dec.recover(),
                Err(Error::TooManyMissing { missing: 2 })
            ));
            dec.push_parity(&parity).unwrap();
            assert_eq!(dec.recover().unwrap(), Some((lost, packets[lost].clone())));
        }
    }

    #[test]
    fn malformed_input_is_an_error() {
        let mut dec = XorDecoder::new(vec![3, 5]).unwrap();
        assert!(matches!(
            dec.push(2, &[0; 3]),
            Err(Error::UnknownSymbol { .. })
        ));
        assert!(matches!(
            dec.push(0, &[0; 4]),
            Err(Error::LengthMismatch { .. })
        ));
        assert!(matches!(
            dec.push_parity(&[0; 3]),
            Err(Error::LengthMismatch { .. })
        ));
        assert!(XorDecoder::new(vec![]).is_err());
    }
}
