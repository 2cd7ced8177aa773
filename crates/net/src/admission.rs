//! Admission of handshakes at a listener: address validation (RETRY cookies) and a budget
//! of key exchanges per second.
//!
//! Every INIT that reaches the Noise layer costs the listener a few X25519 operations. A
//! flood of INITs with fresh ephemeral keys (the replay cache does not catch them), perhaps
//! from forged source addresses, would otherwise buy that work for 1200 bytes each. Two
//! defences, in this order:
//! 1. **Address validation.** The listener answers an INIT without a valid cookie with a
//!    RETRY (32 bytes: no amplification) carrying a stateless cookie bound to the source
//!    address, the connection id and a 10-second slot
//!    ([`tributary_proto::handshake::Cookies`]); only a sender that receives at its address
//!    can repeat the INIT with it. [`RetryPolicy::Auto`] (default) asks for it only while the
//!    key-exchange budget is below half, so a normal connection pays no extra round trip;
//!    [`RetryPolicy::Always`] on every INIT (one more round trip per connection);
//!    [`RetryPolicy::Never`] disables it.
//! 2. **Budget.** At most `handshakes_per_sec` key exchanges per second (a token bucket
//!    holding one second's worth), and at most `per_address_per_sec` for one validated IP
//!    address, so that one real address cannot take the whole budget from the others. An INIT
//!    over budget gets REJECT "rate limited" (12 bytes) and costs no key exchange.
//!
//! What is not covered: an attacker with many real addresses that each complete the cookie
//! exchange is bounded only by the global budget (legitimate senders then see "rate
//! limited" until the flood stops). Forged sources cost the listener one HMAC and one 32-byte
//! datagram each.

use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
use std::time::Duration;
use tributary_proto::handshake::Cookies;
use tributary_proto::Instant;

/// When the listener asks an INIT's sender to prove its address first.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum RetryPolicy {
    /// While the key-exchange budget is below half (under load).
    #[default]
    Auto,
    /// For every INIT (one more round trip per connection).
    Always,
    /// Never (the budget alone limits the key exchanges).
    Never,
}

impl std::str::FromStr for RetryPolicy {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "auto" => Ok(RetryPolicy::Auto),
            "always" => Ok(RetryPolicy::Always),
            "never" => Ok(RetryPolicy::Never),
            _ => Err(format!(
                "unknown retry policy {s:?} (expected auto, always or never)"
            )),
        }
    }
}

/// [`Admission::clock_tolerance`] by default.
pub const DEFAULT_CLOCK_TOLERANCE: Duration = Duration::from_secs(60);

/// How a listener admits handshakes (see the module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Admission {
    /// When to ask for address validation.
    pub retry: RetryPolicy,
    /// Key exchanges per second, all senders together (0: unlimited).
    pub handshakes_per_sec: u32,
    /// Key exchanges per second for one validated IP address (0: unlimited).
    pub per_address_per_sec: u32,
    /// How far INIT timestamps may disagree (docs/udp.md, "Replayed handshakes"): an INIT
    /// up to this much older than the latest accepted from its identity is still accepted
    /// (unless this receiver run accepted that very INIT before), so that hosts sharing a
    /// key with clocks apart by less than this all get in; one more than this ahead of the
    /// receiver's clock is refused (REJECT "clock ahead"), so that a host with a clock far
    /// ahead cannot lock its identity's other hosts out. Zero: WireGuard's strict rule
    /// (later than every accepted one), with no bound ahead of the receiver's clock.
    pub clock_tolerance: Duration,
}

impl Default for Admission {
    /// Auto RETRY, 200 key exchanges per second, 20 per validated address. One IK key
    /// exchange costs the responder about 1 ms of CPU on the 2-core test VM (median under
    /// load; a RETRY cookie 0.6 µs: `cargo bench -p tributary-bench --bench protect --
    /// handshake`, docs/performance.md), so the budget bounds handshake work to about a fifth
    /// of one core. Clock tolerance 60 s: hosts kept by NTP agree within milliseconds, and
    /// one whose clock is off by more gets a clear refusal instead of a silent lock-out.
    fn default() -> Self {
        Admission {
            retry: RetryPolicy::Auto,
            handshakes_per_sec: 200,
            per_address_per_sec: 20,
            clock_tolerance: DEFAULT_CLOCK_TOLERANCE,
        }
    }
}

/// The verdict on one INIT.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Verdict {
    /// Go on with the key exchange (a token was taken).
    Admit,
    /// Answer with this RETRY cookie.
    Retry([u8; Cookies::LEN]),
    /// Over budget: REJECT "rate limited".
    OverBudget,
}

/// A token bucket of `rate` per second holding at most one second's worth.
#[derive(Debug, Clone, Copy)]
struct Bucket {
    tokens: f64,
    at: Instant,
}

impl Bucket {
    fn full(rate: u32, now: Instant) -> Self {
        Bucket {
            tokens: f64::from(rate),
            at: now,
        }
    }

    fn refill(&mut self, rate: u32, now: Instant) {
        let dt = now.saturating_since(self.at).as_secs_f64();
        self.tokens = (self.tokens + dt * f64::from(rate)).min(f64::from(rate));
        self.at = now;
    }
}

/// Addresses tracked for the per-address budget before full ones are forgotten.
const MAX_TRACKED: usize = 4096;

/// The listener's admission state: cookie key and buckets.
#[derive(Debug)]
pub(crate) struct Guard {
    cookies: Cookies,
    global: Option<Bucket>,
    per_ip: HashMap<IpAddr, Bucket>,
    /// RETRYs sent.
    pub(crate) retries_sent: u64,
    /// INITs whose cookie did not verify (forged, expired, or for another address).
    pub(crate) cookies_invalid: u64,
    /// INITs refused over budget.
    pub(crate) rate_limited: u64,
}

/// The bytes a cookie binds: IP address and port.
fn addr_bytes(a: SocketAddr) -> Vec<u8> {
    let mut v = match a.ip() {
        IpAddr::V4(ip) => ip.octets().to_vec(),
        IpAddr::V6(ip) => ip.octets().to_vec(),
    };
    v.extend_from_slice(&a.port().to_be_bytes());
    v
}

impl Guard {
    pub(crate) fn new(secret: [u8; 32]) -> Self {
        Guard {
            cookies: Cookies::new(secret),
            global: None,
            per_ip: HashMap::new(),
            retries_sent: 0,
            cookies_invalid: 0,
            rate_limited: 0,
        }
    }

    /// Decides on an INIT of connection `conn_id` from `from` carrying `cookie`.
    pub(crate) fn judge(
        &mut self,
        adm: &Admission,
        now: Instant,
        conn_id: u64,
        from: SocketAddr,
        cookie: Option<&[u8]>,
    ) -> Verdict {
        let rate = adm.handshakes_per_sec;
        let global = self.global.get_or_insert(Bucket::full(rate, now));
        global.refill(rate, now);
        let addr = addr_bytes(from);
        let validated = match cookie {
            Some(c) => {
                let ok = self.cookies.verify(now, conn_id, &addr, c);
                if !ok {
                    self.cookies_invalid += 1;
                }
                ok
            }
            None => false,
        };
        let pressed = rate > 0 && global.tokens < f64::from(rate) / 2.0;
        let demand = match adm.retry {
            RetryPolicy::Always => true,
            RetryPolicy::Never => false,
            RetryPolicy::Auto => pressed,
        };
        if demand && !validated {
            self.retries_sent += 1;
            return Verdict::Retry(self.cookies.mint(now, conn_id, &addr));
        }
        if rate > 0 && global.tokens < 1.0 {
            self.rate_limited += 1;
            return Verdict::OverBudget;
        }
        // Only a validated address has a budget of its own: a forged one could otherwise
        // spend a real sender's.
        let per = adm.per_address_per_sec;
        if validated && per > 0 {
            if self.per_ip.len() >= MAX_TRACKED {
                for b in self.per_ip.values_mut() {
                    b.refill(per, now);
                }
                self.per_ip.retain(|_, b| b.tokens < f64::from(per));
            }
            let b = self
                .per_ip
                .entry(from.ip())
                .or_insert(Bucket::full(per, now));
            b.refill(per, now);
            if b.tokens < 1.0 {
                self.rate_limited += 1;
                return Verdict::OverBudget;
            }
            b.tokens -= 1.0;
        }
        if rate > 0 {
            global.tokens -= 1.0;
        }
        Verdict::Admit
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(ms: u64) -> Instant {
        Instant::from_nanos(ms * 1_000_000)
    }

    fn addr(last: u8, port: u16) -> SocketAddr {
        SocketAddr::from(([10, 0, 0, last], port))
    }

    #[test]
    fn auto_asks_for_cookies_only_under_load_and_budget_holds() {
        let adm = Admission {
            retry: RetryPolicy::Auto,
            handshakes_per_sec: 10,
            per_address_per_sec: 0,
            ..Admission::default()
        };
        let mut g = Guard::new([1; 32]);
        // While at least half the budget is left (10, 9, ..., 5 tokens): no cookie asked.
        for i in 0..6 {
            assert_eq!(g.judge(&adm, at(0), i, addr(1, 1), None), Verdict::Admit);
        }
        // Below half: a cookie is demanded; the cookie admits, for its address only.
        let Verdict::Retry(c) = g.judge(&adm, at(0), 99, addr(2, 2), None) else {
            panic!("no RETRY under load");
        };
        assert_eq!(
            g.judge(&adm, at(0), 99, addr(3, 2), Some(&c)),
            Verdict::Retry(g.cookies.mint(at(0), 99, &addr_bytes(addr(3, 2))))
        );
        assert_eq!(g.cookies_invalid, 1);
        assert_eq!(
            g.judge(&adm, at(0), 99, addr(2, 2), Some(&c)),
            Verdict::Admit
        );
        // The rest of the second's budget (3 tokens), then over budget even with a cookie.
        for _ in 0..3 {
            assert_eq!(
                g.judge(&adm, at(0), 99, addr(2, 2), Some(&c)),
                Verdict::Admit
            );
        }
        assert_eq!(
            g.judge(&adm, at(0), 99, addr(2, 2), Some(&c)),
            Verdict::OverBudget
        );
        // Refilled at 10 per second: after 1 s, full again and no cookie needed.
        assert_eq!(g.judge(&adm, at(1000), 5, addr(1, 1), None), Verdict::Admit);
        assert_eq!(g.rate_limited, 1);
    }

    #[test]
    fn one_validated_address_cannot_take_the_whole_budget() {
        let adm = Admission {
            retry: RetryPolicy::Always,
            handshakes_per_sec: 100,
            per_address_per_sec: 3,
            ..Admission::default()
        };
        let mut g = Guard::new([2; 32]);
        let Verdict::Retry(c) = g.judge(&adm, at(0), 1, addr(1, 1), None) else {
            panic!("Always must ask");
        };
        for _ in 0..3 {
            assert_eq!(
                g.judge(&adm, at(0), 1, addr(1, 1), Some(&c)),
                Verdict::Admit
            );
        }
        assert_eq!(
            g.judge(&adm, at(0), 1, addr(1, 1), Some(&c)),
            Verdict::OverBudget
        );
        // Another address still gets in.
        let Verdict::Retry(c2) = g.judge(&adm, at(0), 2, addr(2, 1), None) else {
            panic!("Always must ask");
        };
        assert_eq!(
            g.judge(&adm, at(0), 2, addr(2, 1), Some(&c2)),
            Verdict::Admit
        );
    }

    #[test]
    fn never_and_unlimited() {
        let mut g = Guard::new([3; 32]);
        let never = Admission {
            retry: RetryPolicy::Never,
            handshakes_per_sec: 2,
            per_address_per_sec: 0,
            ..Admission::default()
        };
        assert_eq!(g.judge(&never, at(0), 1, addr(1, 1), None), Verdict::Admit);
        assert_eq!(g.judge(&never, at(0), 1, addr(1, 1), None), Verdict::Admit);
        assert_eq!(
            g.judge(&never, at(0), 1, addr(1, 1), None),
            Verdict::OverBudget
        );
        let open = Admission {
            retry: RetryPolicy::Auto,
            handshakes_per_sec: 0,
            per_address_per_sec: 0,
            ..Admission::default()
        };
        let mut g = Guard::new([3; 32]);
        for i in 0..10_000 {
            assert_eq!(g.judge(&open, at(0), i, addr(1, 1), None), Verdict::Admit);
        }
        assert!("sometimes".parse::<RetryPolicy>().is_err());
        assert_eq!("always".parse::<RetryPolicy>(), Ok(RetryPolicy::Always));
    }
}
