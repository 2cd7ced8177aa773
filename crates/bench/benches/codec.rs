//! Throughput of the codes (criterion). Symbol size 1400 B; k/g ∈ {16, 64, 256, 1000};
//! systematic codes decode with 10 % of the source symbols lost. Throughput is always counted
//! in source bytes of the block (k·T) for block operations, or in bytes written for per-symbol
//! encoding. Results and targets: `docs/codec.md`.
//!
//! `cargo bench -p tributary-bench --bench codec -- --measurement-time 2 --warm-up-time 1`

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use rand_chacha::ChaCha8Rng;
use rand_core::{RngCore, SeedableRng};
use std::hint::black_box;
use tributary_codec::gf256::Kernel;
use tributary_codec::lt::{LtDecoder, LtEncoder, LtParams, LtSymbolId};
use tributary_codec::parity::{XorDecoder, XorEncoder};
use tributary_codec::raptorq::{RaptorqConfig, RaptorqDecoder, RaptorqEncoder};
use tributary_codec::rlnc::{Coding, RlncConfig, RlncDecoder, RlncEncoder, RlncMode};

const T: usize = 1400;
const SIZES: [usize; 4] = [16, 64, 256, 1000];

fn random(n: usize, seed: u64) -> Vec<u8> {
    let mut v = vec![0; n];
    ChaCha8Rng::seed_from_u64(seed).fill_bytes(&mut v);
    v
}

/// The source indices received when every 10th is lost (10 % loss, spread out).
fn received_sources(k: usize) -> impl Iterator<Item = usize> {
    (0..k).filter(|i| i % 10 != 9)
}

fn gf256(c: &mut Criterion) {
    let mut g = c.benchmark_group("gf256");
    let src = random(T, 1);
    let mut dst = random(T, 2);
    g.throughput(Throughput::Bytes(T as u64));
    for k in Kernel::available() {
        g.bench_function(BenchmarkId::new("mul_add_1400", format!("{k:?}")), |b| {
            b.iter(|| k.mul_add(black_box(&mut dst), black_box(&src), black_box(0x53)))
        });
    }
    let srcs: Vec<Vec<u8>> = (0..4).map(|i| random(T, 10 + i)).collect();
    let terms: Vec<(u8, &[u8])> = srcs.iter().map(|s| (0x35, &s[..])).collect();
    g.throughput(Throughput::Bytes(4 * T as u64));
    for k in Kernel::available() {
        g.bench_function(
            BenchmarkId::new("mul_add_multi4_1400", format!("{k:?}")),
            |b| b.iter(|| k.mul_add_multi(black_box(&mut dst), black_box(&terms))),
        );
    }
    g.throughput(Throughput::Bytes(T as u64));
    for k in Kernel::available() {
        g.bench_function(BenchmarkId::new("xor_1400", format!("{k:?}")), |b| {
            b.iter(|| k.xor(black_box(&mut dst), black_box(&src)))
        });
    }
    g.finish();
}

fn parity(c: &mut Criterion) {
    let mut g = c.benchmark_group("parity");
    let n = 16;
    let packets: Vec<Vec<u8>> = (0..n).map(|i| random(T, 100 + i as u64)).collect();
    g.throughput(Throughput::Bytes((n * T) as u64));
    g.bench_function("encode_16x1400", |b| {
        let mut enc = XorEncoder::new();
        b.iter(|| {
            for p in &packets {
                enc.push(black_box(p));
            }
            black_box(enc.finish())
        })
    });
    let mut enc = XorEncoder::new();
    packets.iter().for_each(|p| enc.push(p));
    let (par, lengths) = enc.finish();
    g.bench_function("recover_one_of_16x1400", |b| {
        b.iter(|| {
            let mut dec = XorDecoder::new(lengths.clone()).unwrap();
            dec.push_parity(&par).unwrap();
            for (i, p) in packets.iter().enumerate().skip(1) {
                dec.push(i, p).unwrap();
            }
            black_box(dec.recover().unwrap())
        })
    });
    g.finish();
}

fn rlnc(c: &mut Criterion) {
    let mut g = c.benchmark_group("rlnc");
    g.sample_size(10);
    for &gen in &SIZES {
        let config = RlncConfig::new(gen, T).unwrap();
        let source = random(gen * T, gen as u64);
        let mut enc = RlncEncoder::new(config, &source).unwrap();
        let mut out = vec![0; T];
        g.throughput(Throughput::Bytes(T as u64));
        g.bench_with_input(
            BenchmarkId::new("encode_coded_symbol", gen),
            &gen,
            |b, _| {
                let mut seed = 0;
                b.iter(|| {
                    seed += 1;
                    enc.encode(Coding::Seeded(seed), &mut out).unwrap();
                })
            },
        );

        // Systematic, 10 % of sources lost, then repair symbols until complete.
        let mut symbols: Vec<(Coding<'static>, Vec<u8>)> = Vec::new();
        for i in received_sources(gen) {
            symbols.push((
                Coding::Source(i as u32),
                source[i * T..(i + 1) * T].to_vec(),
            ));
        }
        let mut check = RlncDecoder::new(config);
        symbols.iter().for_each(|(c, p)| {
            check.push(*c, p).unwrap();
        });
        let mut n = gen as u32;
        while !check.is_complete() {
            let coding = RlncMode::Systematic.coding(gen, n);
            enc.encode(coding, &mut out).unwrap();
            check.push(coding, &out).unwrap();
            symbols.push((coding, out.clone()));
            n += 1;
        }
        g.throughput(Throughput::Bytes((gen * T) as u64));
        g.bench_with_input(
            BenchmarkId::new("decode_systematic_10pct_loss", gen),
            &gen,
            |b, _| {
                b.iter(|| {
                    let mut dec = RlncDecoder::new(config);
                    for (c, p) in &symbols {
                        dec.push(*c, p).unwrap();
                    }
                    assert!(dec.is_complete());
                    black_box(dec.data().unwrap().len())
                })
            },
        );

        // Non-systematic: seeded symbols until complete.
        let mut symbols: Vec<(Coding<'static>, Vec<u8>)> = Vec::new();
        let mut check = RlncDecoder::new(config);
        let mut n = 0;
        while !check.is_complete() {
            let coding = RlncMode::NonSystematic.coding(gen, n);
            enc.encode(coding, &mut out).unwrap();
            check.push(coding, &out).unwrap();
            symbols.push((coding, out.clone()));
            n += 1;
        }
        g.bench_with_input(
            BenchmarkId::new("decode_nonsystematic", gen),
            &gen,
            |b, _| {
                b.iter(|| {
                    let mut dec = RlncDecoder::new(config);
                    for (c, p) in &symbols {
                        dec.push(*c, p).unwrap();
                    }
                    assert!(dec.is_complete());
                    black_box(dec.data().unwrap().len())
                })
            },
        );
    }
    g.finish();
}

/// RaptorQ through our wrapper and through the `raptorq` crate directly, on identical work
/// (the wrapper takes its block by value and gives it back, so the same buffer is reused;
/// `examples/raptorq_wrapper_cost.rs` measures the difference interleaved):
/// encode = build the block encoder and produce ⌈k/10⌉ repair symbols; decode = 10 % of the
/// source symbols lost, exactly k symbols received (a set checked to decode), bytes copied
/// from receive buffers into the decoder in both cases.
fn raptorq(c: &mut Criterion) {
    let mut g = c.benchmark_group("raptorq");
    g.sample_size(10);
    for &k in &SIZES {
        let config = RaptorqConfig::new(k, T).unwrap();
        let oti = raptorq::ObjectTransmissionInformation::new((k * T) as u64, T as u16, 1, 1, 1);
        let source = random(k * T, k as u64 + 7);
        let repairs = k.div_ceil(10);
        g.throughput(Throughput::Bytes((k * T) as u64));
        let mut out = vec![0; repairs * T];
        g.bench_with_input(BenchmarkId::new("encode_wrapper", k), &k, |b, _| {
            // The block buffer is handed back and reused, as a sender would.
            let mut block = Some(source.clone());
            b.iter(|| {
                let enc = RaptorqEncoder::new(config, block.take().unwrap()).unwrap();
                enc.encode_repair(k as u32, &mut out).unwrap();
                block = Some(enc.into_data());
            })
        });
        g.bench_with_input(BenchmarkId::new("encode_crate", k), &k, |b, _| {
            b.iter(|| {
                let enc = raptorq::SourceBlockEncoder::new(0, &oti, &source);
                black_box(enc.repair_packets(0, repairs as u32))
            })
        });

        // Received set: sources minus every 10th, then repairs up to exactly k symbols.
        let enc = RaptorqEncoder::new(config, source.clone()).unwrap();
        let mut received: Vec<(u32, Vec<u8>)> = received_sources(k)
            .map(|i| (i as u32, source[i * T..(i + 1) * T].to_vec()))
            .collect();
        let mut esi = k as u32;
        while received.len() < k {
            let mut s = vec![0; T];
            enc.encode(esi, &mut s).unwrap();
            received.push((esi, s));
            esi += 1;
        }
        // Make sure exactly these k decode; otherwise swap in later repair symbols.
        loop {
            let mut dec = RaptorqDecoder::new(config);
            received.iter().for_each(|(e, p)| {
                dec.push(*e, p).unwrap();
            });
            if dec.is_complete() {
                break;
            }
            let mut s = vec![0; T];
            enc.encode(esi, &mut s).unwrap();
            *received.last_mut().unwrap() = (esi, s);
            esi += 1;
        }
        g.bench_with_input(
            BenchmarkId::new("decode_10pct_loss_wrapper", k),
            &k,
            |b, _| {
                b.iter(|| {
                    let mut dec = RaptorqDecoder::new(config);
                    for (e, p) in &received {
                        dec.push(*e, p).unwrap();
                    }
                    assert!(dec.is_complete());
                    black_box(dec.data().unwrap().len())
                })
            },
        );
        g.bench_with_input(
            BenchmarkId::new("decode_10pct_loss_crate", k),
            &k,
            |b, _| {
                b.iter(|| {
                    let mut dec = raptorq::SourceBlockDecoder::new(0, &oti, (k * T) as u64);
                    let packets = received.iter().map(|(e, p)| {
                        raptorq::EncodingPacket::new(raptorq::PayloadId::new(0, *e), p.clone())
                    });
                    black_box(dec.decode(packets).unwrap().len())
                })
            },
        );
    }
    g.finish();
}

fn lt(c: &mut Criterion) {
    let mut g = c.benchmark_group("lt");
    g.sample_size(10);
    let (lt_c, delta) = (0.057, 0.03);
    for &k in &SIZES {
        let params = LtParams::new(k, T, lt_c, delta).unwrap();
        let source = random(k * T, k as u64 + 11);
        let mut enc = LtEncoder::new(params.clone(), 0, &source).unwrap();
        let mut out = vec![0; T];
        g.throughput(Throughput::Bytes(T as u64));
        g.bench_with_input(BenchmarkId::new("encode_symbol", k), &k, |b, _| {
            let mut seed = 0;
            b.iter(|| {
                seed += 1;
                enc.encode(seed, &mut out).unwrap();
            })
        });
        for elimination in [false, true] {
            // The shortest seed prefix this decoder completes on.
            let mut symbols: Vec<(LtSymbolId, Vec<u8>)> = Vec::new();
            let new_decoder = || {
                if elimination {
                    LtDecoder::with_elimination(params.clone(), 0)
                } else {
                    LtDecoder::new(params.clone(), 0)
                }
            };
            let mut check = new_decoder();
            let mut seed = 1_000_000;
            while !check.is_complete() {
                let id = enc.encode(seed, &mut out).unwrap();
                check.push(id, &out).unwrap();
                symbols.push((id, out.clone()));
                seed += 1;
            }
            let name = if elimination {
                "decode_with_elimination"
            } else {
                "decode_peeling"
            };
            g.throughput(Throughput::Bytes((k * T) as u64));
            g.bench_with_input(BenchmarkId::new(name, k), &k, |b, _| {
                b.iter(|| {
                    let mut dec = new_decoder();
                    for (id, p) in &symbols {
                        dec.push(*id, p).unwrap();
                    }
                    assert!(dec.is_complete());
                    black_box(dec.data().unwrap().len())
                })
            });
        }
    }
    g.finish();
}

criterion_group!(benches, gf256, parity, rlnc, raptorq, lt);
criterion_main!(benches);
