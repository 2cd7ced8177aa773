//! Cost of our RaptorQ wrapper over the `raptorq` crate, measured by interleaving: each round
//! runs the wrapper and the crate once on identical work (alternating which goes first), and
//! the median of the per-round time ratios is reported. Interleaving cancels most of the drift
//! a shared machine adds to separate criterion runs.
//!
//! `cargo run --release -p tributary-codec --example raptorq_wrapper_cost [rounds]`
//!
//! Work, as in `benches/codec.rs`: encode = build the source-block encoder and produce ⌈k/10⌉
//! repair symbols; decode = a set of exactly k symbols with 10 % of the sources lost (checked
//! to decode), bytes copied from receive buffers into the decoder in both cases. T = 1400 B.

use rand_chacha::ChaCha8Rng;
use rand_core::{RngCore, SeedableRng};
use std::hint::black_box;
use std::time::Instant;
use tributary_codec::raptorq::{RaptorqConfig, RaptorqDecoder, RaptorqEncoder};

const T: usize = 1400;

fn time(f: impl FnOnce()) -> f64 {
    let start = Instant::now();
    f();
    start.elapsed().as_secs_f64()
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() {
    let rounds: usize = std::env::args()
        .nth(1)
        .map(|s| s.parse().expect("rounds must be an integer"))
        .unwrap_or(0);
    println!("| k | rounds | encode: wrapper / crate (median ratio) | encode crate median | decode: wrapper / crate (median ratio) | decode crate median |");
    println!("|---|---|---|---|---|---|");
    for k in [16usize, 64, 256, 1000] {
        let rounds = if rounds > 0 { rounds } else { 200_000 / k };
        let config = RaptorqConfig::new(k, T).unwrap();
        let oti = raptorq::ObjectTransmissionInformation::new((k * T) as u64, T as u16, 1, 1, 1);
        let mut source = vec![0u8; k * T];
        ChaCha8Rng::seed_from_u64(k as u64).fill_bytes(&mut source);
        let repairs = k.div_ceil(10);
        let enc = RaptorqEncoder::new(config, source.clone()).unwrap();
        let mut received: Vec<(u32, Vec<u8>)> = (0..k)
            .filter(|i| i % 10 != 9)
            .map(|i| (i as u32, source[i * T..(i + 1) * T].to_vec()))
            .collect();
        let mut esi = k as u32;
        loop {
            while received.len() < k {
                let mut s = vec![0; T];
                enc.encode(esi, &mut s).unwrap();
                received.push((esi, s));
                esi += 1;
            }
            let mut dec = RaptorqDecoder::new(config);
            received.iter().for_each(|(e, p)| {
                dec.push(*e, p).unwrap();
            });
            if dec.is_complete() {
                break;
            }
            received.pop();
        }

        let mut out = vec![0u8; repairs * T];
        let wrapper_encode = |out: &mut [u8], data: Vec<u8>| {
            time(|| {
                let enc = RaptorqEncoder::new(config, data).unwrap();
                enc.encode_repair(k as u32, out).unwrap();
            })
        };
        let crate_encode = || {
            time(|| {
                let enc = raptorq::SourceBlockEncoder::new(0, &oti, &source);
                black_box(enc.repair_packets(0, repairs as u32));
            })
        };
        let wrapper_decode = || {
            time(|| {
                let mut dec = RaptorqDecoder::new(config);
                for (e, p) in &received {
                    dec.push(*e, p).unwrap();
                }
                black_box(dec.data().unwrap().len());
            })
        };
        let crate_decode = || {
            time(|| {
                let mut dec = raptorq::SourceBlockDecoder::new(0, &oti, (k * T) as u64);
                let packets = received.iter().map(|(e, p)| {
                    raptorq::EncodingPacket::new(raptorq::PayloadId::new(0, *e), p.clone())
                });
                black_box(dec.decode(packets).unwrap().len());
            })
        };
        let (mut enc_ratio, mut dec_ratio, mut enc_crate, mut dec_crate) =
            (Vec::new(), Vec::new(), Vec::new(), Vec::new());
        for round in 0..rounds + 3 {
            // The wrapper takes its block by value, as a sender owning its buffer would; the
            // copy made here for it is not timed.
            let data = source.clone();
            let (we, ce, wd, cd) = if round % 2 == 0 {
                let we = wrapper_encode(&mut out, data);
                let ce = crate_encode();
                let wd = wrapper_decode();
                (we, ce, wd, crate_decode())
            } else {
                let ce = crate_encode();
                let we = wrapper_encode(&mut out, data);
                let cd = crate_decode();
                (we, ce, wrapper_decode(), cd)
            };
            if round >= 3 {
                enc_ratio.push(we / ce);
                dec_ratio.push(wd / cd);
                enc_crate.push(ce);
                dec_crate.push(cd);
            }
        }
        println!(
            "| {k} | {rounds} | {:.3} | {:.1} µs | {:.3} | {:.1} µs |",
            median(&mut enc_ratio),
            median(&mut enc_crate) * 1e6,
            median(&mut dec_ratio),
            median(&mut dec_crate) * 1e6,
        );
    }
}
