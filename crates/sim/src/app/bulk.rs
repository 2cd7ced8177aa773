//! `bulk` (write for as long as the run lasts) and `file` (a finite transfer), each with an
//! optionally rate-limited reader.

use super::{AppContext, AppFactory, AppHalf, AppIo, Lifetime};
use crate::units::{Rate, Size};
use std::sync::Arc;
use tributary_proto::registry::{self, Entry, Factory, OptionDoc, Options};
use tributary_proto::time::{Duration, Instant};
use tributary_proto::Event;

/// Read tick of a rate-limited reader.
const READ_TICK: Duration = Duration::from_millis(1);

/// Options of `bulk`.
#[derive(Debug, Clone, Copy, Default, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct BulkConfig {
    /// Receiving application's read rate, bit/s (`None`: reads as data arrives).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub read_rate: Option<Rate>,
    /// Background traffic: the flow does not keep the run going ([`Lifetime::Background`]),
    /// so a run with a greedy TCP competitor still stops when the measured flows are done.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub background: bool,
}

/// Options of `file`.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FileConfig {
    /// Bytes to transfer (split evenly over the connections of an `n-tcp` flow).
    pub bytes: Size,
    /// Receiving application's read rate, bit/s (`None`: reads as data arrives).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read_rate: Option<Rate>,
}

pub(super) const BULK: Entry<dyn AppFactory> = Entry {
    name: "bulk",
    aliases: &[],
    summary: "writes whenever the connection accepts data, for the whole run (a flow without \
              `bytes`)",
    options: &[
        OptionDoc {
            key: "read_rate",
            doc: "receiver reads at most this rate (1 ms ticks); unset: reads as data arrives \
                  (the flow's `read_rate`)",
        },
        OptionDoc {
            key: "background",
            doc: "background traffic: the flow does not keep the run going (a run stops when \
                  the other flows are done, as with `on-off`)",
        },
    ],
    make: |o| Ok(Arc::new(registry::from_options::<BulkConfig>(o)?)),
};

pub(super) const FILE: Entry<dyn AppFactory> = Entry {
    name: "file",
    aliases: &[],
    summary: "transfers `bytes` and closes; done when the receiver has read them all (a flow \
              with `bytes`)",
    options: &[
        OptionDoc {
            key: "bytes",
            doc: "size to transfer (required; the flow's `bytes`)",
        },
        OptionDoc {
            key: "read_rate",
            doc: "as for bulk",
        },
    ],
    make: |o| {
        let c: FileConfig = registry::from_options(o)?;
        if c.bytes.0 == 0 {
            return Err("bytes must be positive".into());
        }
        Ok(Arc::new(c))
    },
};

impl Factory for BulkConfig {
    fn options(&self) -> Options {
        registry::options_of(self)
    }
}

impl AppFactory for BulkConfig {
    fn lifetime(&self) -> Lifetime {
        if self.background {
            Lifetime::Background
        } else {
            Lifetime::Endless
        }
    }
    fn build(&self, ctx: &AppContext) -> (Box<dyn AppHalf>, Box<dyn AppHalf>) {
        (
            Box::new(Writer { limit: None }),
            Box::new(Reader::new(self.read_rate, ctx.start, false)),
        )
    }
}

impl Factory for FileConfig {
    fn options(&self) -> Options {
        registry::options_of(self)
    }
}

impl AppFactory for FileConfig {
    fn lifetime(&self) -> Lifetime {
        Lifetime::Finite
    }
    fn build(&self, ctx: &AppContext) -> (Box<dyn AppHalf>, Box<dyn AppHalf>) {
        let (b, n, i) = (self.bytes.0, ctx.connections as u64, ctx.index as u64);
        let limit = b / n + u64::from(i < b % n);
        (
            Box::new(Writer { limit: Some(limit) }),
            Box::new(Reader::new(self.read_rate, ctx.start, true)),
        )
    }
}

/// Writes whatever the connection accepts, up to `limit`, then closes.
#[derive(Debug)]
struct Writer {
    limit: Option<u64>,
}

impl AppHalf for Writer {
    fn poll(&mut self, io: &mut AppIo<'_>) {
        // Offers everything left: the connection takes what it has room for, and knows the
        // writer has more (`SendCtx::writer_waiting`).
        let left = self.limit.map_or(u64::MAX, |l| l - io.written());
        if left > 0 {
            io.write(usize::try_from(left).unwrap_or(usize::MAX));
        }
        if self.limit.is_some_and(|l| io.written() == l) {
            io.close();
        }
    }

    fn done(&self) -> bool {
        true
    }
}

/// Reads everything as it arrives, or `rate` bit/s in 1 ms ticks.
#[derive(Debug)]
struct Reader {
    rate: Option<u64>,
    next_tick: Instant,
    finite: bool,
    done: bool,
}

impl Reader {
    fn new(rate: Option<Rate>, start: Instant, finite: bool) -> Self {
        Reader {
            rate: rate.map(|r| r.0),
            next_tick: start + READ_TICK,
            finite,
            done: false,
        }
    }
}

impl AppHalf for Reader {
    fn poll(&mut self, io: &mut AppIo<'_>) {
        match self.rate {
            None => {
                io.read(u64::MAX);
            }
            Some(rate) if io.now() >= self.next_tick => {
                let budget =
                    (rate as u128 * READ_TICK.as_nanos() as u128 / 8 / 1_000_000_000).max(1) as u64;
                io.read(budget);
                self.next_tick = io.now() + READ_TICK;
            }
            Some(_) => {}
        }
        self.done |= self.finite && io.is_finished();
    }

    fn on_event(&mut self, _io: &mut AppIo<'_>, event: &Event) {
        if self.finite && *event == Event::StreamFinished {
            self.done = true;
        }
    }

    fn next_wake(&self) -> Option<Instant> {
        (self.rate.is_some() && !self.done).then_some(self.next_tick)
    }

    fn done(&self) -> bool {
        self.done
    }
}
