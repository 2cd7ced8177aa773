//! `on-off`: an unreliable, uncontrolled datagram source (UDP-like background traffic):
//! constant rate during on-periods with Pareto-distributed lengths, silent during
//! exponentially (or Pareto) distributed off-periods. This is the bursty UDP part of the
//! background traffic of the MPTCP-dFEC evaluation (Ferlin et al., §IV: Pareto on-times,
//! exponential off-times, on/off intervals between 1 s and 5 s, 1000-byte packets).

use super::{AppContext, AppFactory, AppHalf, AppIo, FlowShape, Lifetime, RawDatagram};
use crate::random::{exponential, pareto};
use crate::stats::Distribution;
use crate::units::{Dur, Rate, Size};
use rand_chacha::ChaCha8Rng;
use rand_core::SeedableRng;
use std::sync::Arc;
use tributary_proto::registry::{self, Entry, Factory, OptionDoc, Options};
use tributary_proto::time::{Duration, Instant};

/// Distribution of the off-period lengths.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum OffTimes {
    /// Exponential with mean `off`.
    Exponential,
    /// Pareto with mean `off` and shape `off_shape`.
    Pareto,
}

/// Options of `on-off`.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct OnOffConfig {
    /// Sending rate during on-periods (datagram bytes, without lower-layer headers).
    pub rate: Rate,
    /// Datagram size.
    pub packet_size: Size,
    /// Mean on-period.
    pub on: Dur,
    /// Pareto shape α of the on-periods (> 1).
    pub on_shape: f64,
    /// Mean off-period.
    pub off: Dur,
    /// Off-period distribution.
    pub off_dist: OffTimes,
    /// Pareto shape of the off-periods when `off_dist = "pareto"` (> 1).
    pub off_shape: f64,
}

impl Default for OnOffConfig {
    fn default() -> Self {
        OnOffConfig {
            rate: Rate(1_000_000),
            packet_size: Size(1000),
            on: Dur(Duration::from_secs(2)),
            on_shape: 1.5,
            off: Dur(Duration::from_secs(2)),
            off_dist: OffTimes::Exponential,
            off_shape: 1.5,
        }
    }
}

pub(super) const ENTRY: Entry<dyn AppFactory> = Entry {
    name: "on-off",
    aliases: &[],
    summary: "unreliable datagrams without congestion control at `rate` during Pareto on-periods, \
              silent in off-periods (background traffic, MPTCP-dFEC §IV); never ends, does not \
              keep the run going",
    options: &[
        OptionDoc {
            key: "rate",
            doc: "rate during on-periods (datagram bytes)",
        },
        OptionDoc {
            key: "packet_size",
            doc: "datagram size, bytes (24 up to the flow's largest datagram)",
        },
        OptionDoc {
            key: "on",
            doc: "mean on-period",
        },
        OptionDoc {
            key: "on_shape",
            doc: "Pareto shape of the on-periods (> 1)",
        },
        OptionDoc {
            key: "off",
            doc: "mean off-period",
        },
        OptionDoc {
            key: "off_dist",
            doc: "\"exponential\" or \"pareto\"",
        },
        OptionDoc {
            key: "off_shape",
            doc: "Pareto shape of the off-periods (> 1)",
        },
    ],
    make: |o| {
        let c: OnOffConfig = registry::from_options(o)?;
        if c.rate.0 == 0 {
            return Err("rate must be positive".into());
        }
        if (c.packet_size.0 as usize) < RawDatagram::HEADER {
            return Err(format!(
                "packet_size must be at least {} bytes",
                RawDatagram::HEADER
            ));
        }
        for (k, v) in [("on_shape", c.on_shape), ("off_shape", c.off_shape)] {
            if !(v > 1.0 && v.is_finite()) {
                return Err(format!(
                    "{k} = {v}: a Pareto shape must exceed 1 (finite mean)"
                ));
            }
        }
        if c.on.0 == Duration::ZERO {
            return Err("on must be positive".into());
        }
        Ok(Arc::new(c))
    },
};

impl Factory for OnOffConfig {
    fn options(&self) -> Options {
        registry::options_of(self)
    }
}

impl AppFactory for OnOffConfig {
    fn lifetime(&self) -> Lifetime {
        Lifetime::Background
    }

    fn validate(&self, flow: &FlowShape) -> Result<(), String> {
        if flow.paths != 1 {
            return Err("on-off sends on the flow's first path only: use one path".into());
        }
        if self.packet_size.0 as usize > flow.max_datagram {
            return Err(format!(
                "packet_size {} exceeds the flow's largest datagram ({} bytes)",
                self.packet_size.0, flow.max_datagram
            ));
        }
        Ok(())
    }

    fn build(&self, ctx: &AppContext) -> (Box<dyn AppHalf>, Box<dyn AppHalf>) {
        let size = self.packet_size.0;
        // Nanoseconds between datagrams during an on-period.
        let gap = (size as u128 * 8 * 1_000_000_000 / u128::from(self.rate.0)).max(1) as u64;
        let mut s = OnOffSource {
            cfg: *self,
            rng: ChaCha8Rng::seed_from_u64(ctx.seed),
            gap: Duration::from_nanos(gap),
            next_send: ctx.start,
            on_until: ctx.start,
            sent: 0,
            on_periods: 0,
        };
        s.next_send = ctx.start;
        s.on_until = ctx.start + s.on_time();
        s.on_periods = 1;
        (Box::new(s), Box::new(OnOffReceiver::default()))
    }
}

#[derive(Debug)]
struct OnOffSource {
    cfg: OnOffConfig,
    rng: ChaCha8Rng,
    gap: Duration,
    next_send: Instant,
    on_until: Instant,
    sent: u64,
    on_periods: u64,
}

impl OnOffSource {
    fn on_time(&mut self) -> Duration {
        let s = pareto(
            &mut self.rng,
            self.cfg.on.0.as_secs_f64(),
            self.cfg.on_shape,
        );
        Duration::from_secs_f64(s)
    }
    fn off_time(&mut self) -> Duration {
        let mean = self.cfg.off.0.as_secs_f64();
        let s = match self.cfg.off_dist {
            OffTimes::Exponential => exponential(&mut self.rng, mean),
            OffTimes::Pareto => pareto(&mut self.rng, mean, self.cfg.off_shape),
        };
        Duration::from_secs_f64(s)
    }
}

impl AppHalf for OnOffSource {
    fn poll(&mut self, io: &mut AppIo<'_>) {
        while self.next_send <= io.now() {
            if self.next_send >= self.on_until {
                // The on-period ended: silence, then a new on-period.
                let resume = self.on_until + self.off_time();
                self.next_send = resume;
                self.on_until = resume + self.on_time();
                self.on_periods += 1;
                continue;
            }
            io.send_datagram(self.cfg.packet_size.0 as usize);
            self.sent += 1;
            self.next_send += self.gap;
        }
    }

    fn next_wake(&self) -> Option<Instant> {
        Some(self.next_send)
    }

    fn done(&self) -> bool {
        true
    }

    fn metrics(&self) -> serde_json::Value {
        serde_json::json!({
            "datagrams_sent": self.sent,
            "bytes_sent": self.sent * self.cfg.packet_size.0,
            "on_periods": self.on_periods,
        })
    }
}

#[derive(Debug, Default)]
struct OnOffReceiver {
    received: u64,
    bytes: u64,
    delay_ms: Distribution,
}

impl AppHalf for OnOffReceiver {
    fn poll(&mut self, _io: &mut AppIo<'_>) {}

    fn on_datagram(&mut self, now: Instant, d: &RawDatagram) {
        self.received += 1;
        self.bytes += d.len as u64;
        self.delay_ms.add((now - d.sent).as_secs_f64() * 1e3);
    }

    fn done(&self) -> bool {
        false
    }

    fn metrics(&self) -> serde_json::Value {
        serde_json::json!({
            "datagrams_received": self.received,
            "bytes_received": self.bytes,
            "delay_ms": crate::result::summary(&self.delay_ms),
        })
    }
}
