//! Small RaptorQ blocks with and without the solver: the wrapper's rows of source-symbol
//! coefficients (`raptorq_rows`) against the `raptorq` crate alone, interleaved. Each round
//! runs both once on identical work (alternating which goes first); the medians of the times
//! and of the per-round ratios are reported.
//!
//! `cargo run --release -p tributary-codec --example raptorq_rows_cost [rounds]`
//!
//! Work, T = 1280 B: encode = a fresh encoder for the block and r repair symbols; decode =
//! the block with m source symbols lost and m + 2 repair symbols (every symbol pushed, the
//! crate's decoder given the same symbols). The wrapper uses rows up to 16 repair symbols and
//! up to 16 missing symbols for k ≤ 256, so the rows with m or r = 32 and k = 1024 show the
//! wrapper on the crate's path.

use std::hint::black_box;
use std::time::Instant;
use tributary_codec::raptorq::{RaptorqConfig, RaptorqDecoder, RaptorqEncoder};

const T: usize = 1280;

fn time(f: impl FnOnce()) -> f64 {
    let s = Instant::now();
    f();
    s.elapsed().as_secs_f64()
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}

/// Runs `ours` and `theirs` `rounds` times interleaved; prints medians.
fn compare(label: &str, rounds: usize, mut ours: impl FnMut(), mut theirs: impl FnMut()) {
    let (mut a, mut b, mut r) = (Vec::new(), Vec::new(), Vec::new());
    for i in 0..rounds {
        let (x, y) = if i % 2 == 0 {
            let x = time(&mut ours);
            (x, time(&mut theirs))
        } else {
            let y = time(&mut theirs);
            (time(&mut ours), y)
        };
        a.push(x);
        b.push(y);
        r.push(x / y);
    }
    println!(
        "| {label} | {:.1} µs | {:.1} µs | {:.3} |",
        median(&mut a) * 1e6,
        median(&mut b) * 1e6,
        median(&mut r)
    );
}

fn main() {
    let rounds: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(31);
    println!("| work | wrapper | crate | wrapper / crate (median of ratios) |");
    println!("|---|---|---|---|");
    for &k in &[10usize, 24, 64, 256, 1024] {
        let data: Vec<u8> = (0..k * T).map(|i| (i * 7 + i / 11) as u8).collect();
        let config = RaptorqConfig::new(k, T).unwrap();
        let oti = raptorq::ObjectTransmissionInformation::new((k * T) as u64, T as u16, 1, 1, 1);
        for &r in &[1usize, 4, 16, 32] {
            let mut buf = vec![0u8; T];
            compare(
                &format!("encode k = {k}, r = {r}"),
                rounds,
                || {
                    let e = RaptorqEncoder::new(config, data.clone()).unwrap();
                    for i in 0..r {
                        e.encode((k + i) as u32, &mut buf).unwrap();
                    }
                    black_box(&buf);
                },
                || {
                    let copy = data.clone();
                    let e = raptorq::SourceBlockEncoder::new(0, &oti, &copy);
                    black_box(e.repair_packets(0, r as u32));
                },
            );
        }
        let enc = raptorq::SourceBlockEncoder::new(0, &oti, &data);
        for &m in &[1usize, 4, 16, 32] {
            if m > k {
                continue;
            }
            let repairs = enc.repair_packets(0, m as u32 + 2);
            compare(
                &format!("decode k = {k}, m = {m}"),
                rounds,
                || {
                    let mut d = RaptorqDecoder::new(config);
                    for i in m..k {
                        d.push(i as u32, &data[i * T..(i + 1) * T]).unwrap();
                    }
                    for p in &repairs {
                        d.push(p.payload_id().encoding_symbol_id(), p.data())
                            .unwrap();
                    }
                    assert!(d.is_complete());
                },
                || {
                    let mut d = raptorq::SourceBlockDecoder::new(0, &oti, (k * T) as u64);
                    let mut out = None;
                    let sources = (m..k).map(|i| {
                        raptorq::EncodingPacket::new(
                            raptorq::PayloadId::new(0, i as u32),
                            data[i * T..(i + 1) * T].to_vec(),
                        )
                    });
                    for p in sources.chain(repairs.iter().cloned()) {
                        if out.is_none() {
                            out = d.decode(std::iter::once(p));
                        }
                    }
                    assert!(out.is_some());
                },
            );
        }
    }
}
