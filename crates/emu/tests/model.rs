//! The emulator's network against the simulator's link model on a fixed packet sequence, in
//! virtual time (no devices, no root): the same drops, the same arrival times, the same
//! corrupted bits and duplicates for the same seed.
//!
//! The reference below drives `tributary_sim::link::Link` — the model the simulator runs —
//! the way the simulator's engine does (`crates/sim/src/engine.rs`: `send` offers a packet and
//! applies its fate; packets that are not reordered leave the link in FIFO order; a duplicate
//! copy joins the FIFO with the original's arrival; a packet still in the link when it goes
//! down is lost), with the link seeded as `Simulator::new` seeds it.

use tributary_emu::network::{Delivery, Network, Route};
use tributary_proto::time::{Duration, Instant};
use tributary_sim::link::Link;
use tributary_sim::{derive_seed, SimConfig};

const SCENARIO: &str = r#"
name = "model"
duration = "10s"

[[links]]
name = "x"
rate = "10Mbps"
delay = "15ms"
queue = 30
loss = { model = "gilbert-elliott", mean = 0.05, burst = 3 }
reorder = 0.05
reorder_delay = "4ms"
duplicate = 0.03
corrupt = 0.03

[[links]]
name = "y"
rate = "8Mbps"
delay = "5ms"
queue = "20KB"
loss = 0.02

[[flows]]
name = "f"
paths = ["x", "y"]

[[events]]
at = "1.2005s"
link = "y"
set = { up = false }

[[events]]
at = "1.5005s"
link = "y"
set = { up = true, delay = "1ms" }
"#;

fn config(seed: u64) -> SimConfig {
    let s = tributary_lab::Scenario::parse(SCENARIO, "model").unwrap();
    let mut c = s.config(0, 0).sim.clone();
    c.seed = seed;
    c
}

/// A fixed packet sequence: (send time, size), bursty enough to fill the queues.
fn packets() -> Vec<(Instant, usize)> {
    let mut v = Vec::new();
    let mut t = 0u64;
    for i in 0..4000u64 {
        // Bursts of 20 back-to-back packets every 20 ms, plus a steady trickle.
        t += if i % 40 < 20 { 10_000 } else { 990_000 };
        let size = 200 + (i * 7919 % 1200) as usize;
        v.push((Instant::from_nanos(t), size));
    }
    v
}

fn payload(i: usize, size: usize) -> Vec<u8> {
    let mut p = vec![0u8; size];
    p[..4].copy_from_slice(&(i as u32).to_le_bytes());
    for (j, b) in p.iter_mut().enumerate().skip(4) {
        *b = (i * 31 + j) as u8;
    }
    p
}

/// The simulator's handling of one link, for packets offered at the given times.
fn reference_one_link(cfg: &SimConfig, link: usize, overhead: u64) -> Vec<Delivery> {
    let mut l = Link::new(
        cfg.links[link].forward.clone(),
        derive_seed(cfg.seed, &[1, link as u64, 0]),
    );
    let changes: Vec<_> = cfg.changes.iter().filter(|c| c.link == link).collect();
    let mut applied = 0;
    // (arrival, epoch, fifo, packet)
    let mut flying: Vec<(Instant, u32, bool, Vec<u8>)> = Vec::new();
    // Down times, to lose FIFO packets that had not arrived when the link went down.
    let mut downs: Vec<(Instant, u32)> = Vec::new();
    for (i, &(t, size)) in packets().iter().enumerate() {
        while applied < changes.len() && Instant::ZERO + changes[applied].at <= t {
            let c = &changes[applied].change;
            let at = Instant::ZERO + changes[applied].at;
            if let Some(d) = c.delay {
                l.params.delay = d;
            }
            if let Some(up) = c.up {
                let before = l.epoch;
                l.set_up(up);
                if l.epoch != before {
                    downs.push((at, before));
                }
            }
            applied += 1;
        }
        let mut p = payload(i, size);
        let fate = l.offer(t, size as u64 + overhead, size);
        let Some(arrival) = fate.arrival else {
            continue;
        };
        if let Some(bit) = fate.corrupt_bit {
            p[(bit / 8) as usize] ^= 1 << (bit % 8);
        }
        if fate.duplicate {
            let a = l.fifo_arrival(arrival);
            flying.push((a, l.epoch, true, p.clone()));
        }
        if fate.reordered {
            flying.push((arrival, l.epoch, false, p));
        } else {
            let a = l.fifo_arrival(arrival);
            flying.push((a, l.epoch, true, p));
        }
    }
    flying
        .into_iter()
        .filter(|(a, epoch, _, _)| {
            // Lost if the link went down (ending this epoch) before the packet arrived.
            !downs.iter().any(|&(t, e)| e == *epoch && t <= *a)
        })
        .map(|(at, _, _, packet)| Delivery {
            dest: 7,
            at,
            packet,
        })
        .collect()
}

fn emulator_network(cfg: &SimConfig, hops: Vec<usize>, overhead: u64) -> (Vec<Delivery>, Network) {
    let mut net = Network::new(cfg, overhead);
    let r = net.add_route(Route { hops, dest: 7 });
    let mut out = Vec::new();
    for (i, &(t, size)) in packets().iter().enumerate() {
        net.advance(t, |d| out.push(d));
        net.inject(t, r, &payload(i, size));
    }
    net.advance(Instant::from_nanos(u64::MAX / 2), |d| out.push(d));
    (out, net)
}

fn sorted(mut v: Vec<Delivery>) -> Vec<Delivery> {
    v.sort_by(|a, b| (a.at, &a.packet).cmp(&(b.at, &b.packet)));
    v
}

#[test]
fn one_link_matches_the_simulator_model_for_every_seed() {
    for seed in [1, 2, 3, 99] {
        let cfg = config(seed);
        // Link x: loss bursts, reordering, duplication, corruption, queue drops.
        let want = sorted(reference_one_link(&cfg, 0, 28));
        let (got, net) = emulator_network(&cfg, vec![0], 28);
        let got = sorted(got);
        let s = net.stats()[0].1;
        assert!(s.random_drops > 50 && s.queue_drops > 50, "{s:?}");
        assert!(
            s.reordered > 50 && s.duplicated > 50 && s.corrupted > 50,
            "{s:?}"
        );
        assert_eq!(got.len(), want.len(), "seed {seed}: delivered count");
        assert_eq!(got, want, "seed {seed}: deliveries differ");
        assert_eq!(net.in_flight(), 0);
    }
}

#[test]
fn down_and_up_lose_packets_in_flight_like_the_simulator() {
    for seed in [5, 6] {
        let cfg = config(seed);
        // Link y goes down at 1.2005 s (packets in its FIFO are lost, new ones dropped) and
        // comes back at 1.5005 s with a shorter delay (FIFO order still holds).
        let want = sorted(reference_one_link(&cfg, 1, 0));
        let (got, net) = emulator_network(&cfg, vec![2], 0);
        let s = net.stats()[1].1;
        assert!(s.down_drops > 10, "{s:?}");
        assert_eq!(sorted(got), want, "seed {seed}");
    }
}

#[test]
fn different_seeds_give_different_drops() {
    let (a, _) = emulator_network(&config(1), vec![0], 28);
    let (b, _) = emulator_network(&config(2), vec![0], 28);
    assert_ne!(sorted(a), sorted(b));
}

/// Two links in a row: the packet is offered to the second link at its arrival time from
/// the first, as the simulator's `arrived` does. With only loss on both (no queueing: one
/// small packet every 10 ms), every delivered packet takes exactly the two delays plus the
/// two serializations, and is lost with the links' own draws in order.
#[test]
fn two_hops_add_up() {
    let text = r#"
name = "hops"
duration = "10s"
[[links]]
name = "a"
rate = "8Mbps"
delay = "10ms"
loss = 0.1
[[links]]
name = "b"
rate = "4Mbps"
delay = "3ms"
loss = 0.2
[[paths]]
name = "ab"
links = ["a", "b"]
[[flows]]
name = "f"
paths = ["ab"]
"#;
    let s = tributary_lab::Scenario::parse(text, "hops").unwrap();
    let mut cfg = s.config(0, 0).sim.clone();
    cfg.seed = 4;
    let mut net = Network::new(&cfg, 0);
    let r = net.add_route(Route {
        hops: vec![0, 2],
        dest: 0,
    });
    let mut la = Link::new(cfg.links[0].forward.clone(), derive_seed(4, &[1, 0, 0]));
    let mut lb = Link::new(cfg.links[1].forward.clone(), derive_seed(4, &[1, 1, 0]));
    let mut out = Vec::new();
    let mut want = Vec::new();
    for i in 0..1000u64 {
        let t = Instant::from_nanos(i * 10_000_000);
        net.advance(t, |d| out.push(d.at));
        net.inject(t, r, &[0u8; 1000]);
        if let Some(a1) = la.offer(t, 1000, 1000).arrival {
            if let Some(a2) = lb.offer(a1, 1000, 1000).arrival {
                assert_eq!(
                    a2,
                    t + Duration::from_millis(13) + Duration::from_micros(1000 + 2000)
                );
                want.push(a2);
            }
        }
    }
    net.advance(Instant::from_nanos(u64::MAX / 2), |d| out.push(d.at));
    assert_eq!(out, want);
    assert!(want.len() > 650 && want.len() < 790, "{}", want.len());
}
