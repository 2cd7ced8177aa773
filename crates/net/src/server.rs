//! A long-lived receiver: many concurrent protected connections, each into its own sink.

use crate::driver::{Refusal, UdpDriver};
use crate::negotiate::{Content, Offer};
use crate::transfer::Linger;
use crate::{NetError, Session};
use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration as StdDuration, Instant as StdInstant};
use tributary_proto::Event;

/// Where one connection's stream goes.
pub trait Sink {
    /// Appends stream bytes.
    fn write(&mut self, data: &[u8]) -> std::io::Result<()>;
    /// The stream ended (`complete`: every byte arrived, and as many as announced) or the
    /// connection failed; make the result durable (or leave it marked incomplete).
    fn finish(self: Box<Self>, complete: bool) -> std::io::Result<()>;
}

/// What happened, for the log.
#[derive(Debug)]
pub enum ServerEvent<'a> {
    /// A connection was accepted.
    Accepted {
        /// Its id.
        id: u64,
        /// Where its first path comes from.
        from: Option<SocketAddr>,
        /// What it offered.
        offer: &'a Offer,
    },
    /// A connection delivered its whole stream.
    Done {
        /// Its id.
        id: u64,
        /// Stream bytes.
        bytes: u64,
        /// From acceptance to the end of the stream.
        elapsed: StdDuration,
    },
    /// A connection failed; its sink was finished as incomplete.
    Failed {
        /// Its id.
        id: u64,
        /// Stream bytes received before.
        bytes: u64,
        /// Why.
        error: String,
    },
    /// A handshake was refused.
    Refused(Refusal),
}

/// Limits of the server loop.
#[derive(Debug, Clone, Copy)]
pub struct ServeOptions {
    /// A connection without progress for this long is dropped.
    pub idle_timeout: StdDuration,
    /// After its stream ended, a connection is kept this long for the sender's CLOSE (since the
    /// sender's last datagram, and at least three retransmission timeouts: see
    /// [`TransferOptions::linger`](crate::TransferOptions::linger)).
    pub linger: StdDuration,
    /// Stop after this many connections ended (`None`: run until `stop`).
    pub max_served: Option<u64>,
}

struct Active {
    sink: Option<Box<dyn Sink>>,
    bytes: u64,
    expected: Option<u64>,
    accepted: StdInstant,
    progress: StdInstant,
    finished: Option<StdInstant>,
    linger: Option<Linger>,
}

/// How often every connection is looked at for its timeouts (between, only those that
/// received datagrams or ran timers are).
const SWEEP: StdDuration = StdDuration::from_millis(250);

/// The connections a serving loop looks at in one turn: those the driver touched since the
/// last turn (datagrams, timers), or all of them once per sweep interval (idle timeouts,
/// lingering) or whenever the caller needs every one.
pub(crate) struct Visits {
    ids: Vec<u64>,
    swept: StdInstant,
    every: StdDuration,
}

impl Visits {
    /// A list swept in full every `every`.
    pub(crate) fn new(every: StdDuration) -> Self {
        Visits {
            ids: Vec::new(),
            swept: StdInstant::now(),
            every,
        }
    }

    /// Refills the list for this turn: `d`'s touched connections, or every id of `all` when
    /// a sweep is due or `everyone` is set.
    pub(crate) fn refill(
        &mut self,
        d: &mut UdpDriver,
        all: impl Iterator<Item = u64>,
        everyone: bool,
    ) {
        self.ids.clear();
        d.take_touched(&mut self.ids);
        if everyone || self.swept.elapsed() >= self.every {
            self.swept = StdInstant::now();
            self.ids.clear();
            self.ids.extend(all);
        }
    }

    /// This turn's connection ids.
    pub(crate) fn ids(&self) -> &[u64] {
        &self.ids
    }
}

/// The next connection the driver accepted with an offer, logged as accepted (refusals
/// are logged first).
pub(crate) fn next_accepted(
    d: &mut UdpDriver,
    log: &mut impl FnMut(ServerEvent<'_>),
) -> Option<(u64, Offer)> {
    while let Some(r) = d.refusal() {
        log(ServerEvent::Refused(r));
    }
    while let Some(id) = d.accept() {
        let Some(s) = d.session_by_id(id) else {
            continue;
        };
        let Some(offer) = s.offer().cloned() else {
            continue;
        };
        log(ServerEvent::Accepted {
            id,
            from: s.remote(0).or(s.origin()),
            offer: &offer,
        });
        return Some((id, offer));
    }
    None
}

/// The session of connection `id` if it has not ended this turn; a connection the driver
/// no longer holds is recorded as ended ("connection vanished").
pub(crate) fn live_session<'d>(
    d: &'d mut UdpDriver,
    id: u64,
    ended: &mut Vec<(u64, Result<(), String>)>,
) -> Option<&'d mut Session> {
    if ended.iter().any(|(e, _)| *e == id) {
        return None;
    }
    match d.session_by_id_mut(id) {
        Some(s) => Some(s),
        None => {
            ended.push((id, Err("connection vanished".into())));
            None
        }
    }
}

/// Serves connections until `stop` is set (or `max_served` connections ended): each
/// accepted connection's stream goes to the sink `open` returns for it; `log` hears every
/// acceptance, completion, failure and refusal. A failure of one connection never stops the
/// others. Returns how many connections completed.
///
/// Work per wake-up is proportional to the connections that had traffic or timers
/// ([`UdpDriver::take_touched`]), plus a look at all of them every 250 ms for idle
/// timeouts and lingering.
pub fn serve(
    d: &mut UdpDriver,
    opts: &ServeOptions,
    stop: &AtomicBool,
    mut open: impl FnMut(u64, &Offer) -> std::io::Result<Box<dyn Sink>>,
    mut log: impl FnMut(ServerEvent<'_>),
) -> Result<u64, NetError> {
    let mut active: HashMap<u64, Active> = HashMap::new();
    let (mut served, mut completed) = (0u64, 0u64);
    let mut ended: Vec<(u64, Result<(), String>)> = Vec::new();
    let mut visits = Visits::new(SWEEP);
    while !stop.load(Ordering::Relaxed) && opts.max_served.is_none_or(|m| served < m) {
        d.poll_io(StdDuration::from_millis(50))?;
        while let Some((id, offer)) = next_accepted(d, &mut log) {
            let now = StdInstant::now();
            let sink = match open(id, &offer) {
                Ok(k) => Some(k),
                Err(e) => {
                    ended.push((id, Err(format!("cannot open the output: {e}"))));
                    None
                }
            };
            let expected = match offer.content {
                Content::File { size, .. } => size,
                Content::Perf { .. } => None,
            };
            active.insert(
                id,
                Active {
                    sink,
                    bytes: 0,
                    expected,
                    accepted: now,
                    progress: now,
                    finished: None,
                    linger: None,
                },
            );
        }
        visits.refill(d, active.keys().copied(), false);
        for &id in visits.ids() {
            let Some(a) = active.get_mut(&id) else {
                continue;
            };
            let Some(s) = live_session(d, id, &mut ended) else {
                continue;
            };
            let c = s.connection_mut();
            let mut err = None;
            let n = c.read_with(u64::MAX, |b| {
                if err.is_none() {
                    if let Some(k) = a.sink.as_mut() {
                        err = k.write(b).err();
                    }
                }
            });
            if n > 0 {
                a.bytes += n;
                a.progress = StdInstant::now();
            }
            let mut closed = None;
            while let Some(ev) = c.poll_event() {
                match ev {
                    Event::StreamFinished => {
                        let now = StdInstant::now();
                        a.finished = Some(now);
                        a.linger = Some(Linger::start(c, now));
                    }
                    Event::Closed { code } => closed = Some(code),
                    _ => {}
                }
            }
            if let Some(e) = err {
                ended.push((id, Err(format!("writing the output: {e}"))));
            } else if a.finished.is_some() {
                let over = a.linger.as_mut().is_none_or(|l| {
                    let now = StdInstant::now();
                    l.update(c, now);
                    l.remaining(opts.linger, now).is_zero()
                });
                if a.expected.is_some_and(|x| x != a.bytes) {
                    ended.push((
                        id,
                        Err(format!(
                            "stream of {} bytes, but {} were announced",
                            a.bytes,
                            a.expected.unwrap_or(0)
                        )),
                    ));
                } else if closed.is_some() || over {
                    ended.push((id, Ok(())));
                }
            } else if let Some(code) = closed {
                ended.push((id, Err(format!("the sender closed (code {code}) early"))));
            } else if a.progress.elapsed() >= opts.idle_timeout {
                ended.push((
                    id,
                    Err(format!(
                        "no progress for {:.1} s",
                        opts.idle_timeout.as_secs_f64()
                    )),
                ));
            }
        }
        d.flush_some(visits.ids());
        for (id, res) in ended.drain(..) {
            let Some(a) = active.remove(&id) else {
                continue;
            };
            d.remove(id);
            served += 1;
            let ok = res.is_ok();
            let fin = a.sink.map(|k| k.finish(ok)).transpose();
            match (res, fin) {
                (Ok(()), Ok(_)) => {
                    completed += 1;
                    log(ServerEvent::Done {
                        id,
                        bytes: a.bytes,
                        elapsed: a.finished.unwrap_or(a.accepted) - a.accepted,
                    });
                }
                (Ok(()), Err(e)) => log(ServerEvent::Failed {
                    id,
                    bytes: a.bytes,
                    error: format!("finishing the output: {e}"),
                }),
                (Err(error), _) => log(ServerEvent::Failed {
                    id,
                    bytes: a.bytes,
                    error,
                }),
            }
        }
    }
    Ok(completed)
}
