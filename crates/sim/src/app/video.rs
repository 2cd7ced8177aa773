//! `video`: frames as messages with playout deadlines (live video over a partially reliable
//! connection).
//!
//! The sender captures frame k at `start + k/fps` and writes it as one message with deadline
//! `capture + deadline` (I frames priority 0, P frames 1; given up when late if
//! `abandon_late`). The deadline is the receiver's: with `abandon_early` (the default) the
//! sender gives a frame up as soon as it can no longer arrive whole in time (the engine's
//! estimate of one-way delay and sending time, [`MessageOptions::at_peer`]), not when the
//! deadline passes at the sender, so a sender that fell behind skips to frames that can still
//! be played. Frame sizes follow a GOP pattern — one I frame `i_ratio` times the size of
//! each of the `gop − 1` P frames, averaging `bit_rate / fps` — or a trace file (one size in
//! bytes per line). A frame that does not fit the send buffer waits (its deadline keeps
//! running). Message ids equal frame numbers, so the receiver knows each frame's deadline.
//!
//! The receiver counts frames complete on time (all bytes held by `capture + deadline`),
//! late, abandoned, and unresolved at the end, and runs a stated player model: playback
//! starts at `max(c₀, t₀ + deadline)` (c = completion, t = capture); frame k is due one frame
//! interval after frame k−1 was shown; a frame complete by then is shown on time, a later one
//! stalls playback until it completes (stall time += the wait, one stall counted), and an
//! abandoned frame is skipped at its slot (concealed, no stall).

use super::{AppContext, AppFactory, AppHalf, AppIo, FlowShape, Lifetime};
use crate::stats::Distribution;
use crate::units::{Dur, Rate};
use std::sync::Arc;
use tributary_proto::message::MessageOptions;
use tributary_proto::registry::{self, Entry, Factory, OptionDoc, Options};
use tributary_proto::time::{Duration, Instant};
use tributary_proto::Event;

/// Options of `video`.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct VideoConfig {
    /// Frames per second.
    pub fps: f64,
    /// Mean bit rate (frame bytes; ignored with `frame_sizes`).
    pub bit_rate: Rate,
    /// Frames per group of pictures (one I frame, then P frames).
    pub gop: u32,
    /// Size of an I frame over the size of a P frame.
    pub i_ratio: f64,
    /// Length of the video (frames = duration × fps, or the trace's length if shorter).
    pub duration: Dur,
    /// A frame-size trace: a file with one frame size in bytes per line (`#` comments);
    /// frame k of the trace is an I frame when k is a multiple of `gop`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub frame_sizes: Option<String>,
    /// Playout deadline after capture.
    pub deadline: Dur,
    /// Give a frame up when its deadline passes before the receiver has all of it.
    pub abandon_late: bool,
    /// With `abandon_late`: give a frame up as soon as it can no longer arrive whole by its
    /// deadline (the engine's estimate, [`MessageOptions::at_peer`]), not when the deadline
    /// passes at the sender.
    pub abandon_early: bool,
    #[serde(skip)]
    sizes: Option<Arc<Vec<u64>>>,
}

impl Default for VideoConfig {
    fn default() -> Self {
        VideoConfig {
            fps: 25.0,
            bit_rate: Rate(3_400_000),
            gop: 12,
            i_ratio: 5.0,
            duration: Dur(Duration::from_secs(60)),
            frame_sizes: None,
            deadline: Dur(Duration::from_millis(200)),
            abandon_late: true,
            abandon_early: true,
            sizes: None,
        }
    }
}

pub(super) const ENTRY: Entry<dyn AppFactory> = Entry {
    name: "video",
    aliases: &[],
    summary: "live video: one message per frame (GOP pattern or a frame-size trace) with a \
              playout deadline; frames on time / late / abandoned, stall time of a stated player",
    options: &[
        OptionDoc {
            key: "fps",
            doc: "frames per second",
        },
        OptionDoc {
            key: "bit_rate",
            doc: "mean rate of the frame bytes (GOP pattern)",
        },
        OptionDoc {
            key: "gop",
            doc: "frames per group of pictures: one I frame, gop − 1 P frames",
        },
        OptionDoc {
            key: "i_ratio",
            doc: "I-frame size over P-frame size",
        },
        OptionDoc {
            key: "duration",
            doc: "video length",
        },
        OptionDoc {
            key: "frame_sizes",
            doc: "frame-size trace file (bytes per line), instead of the pattern",
        },
        OptionDoc {
            key: "deadline",
            doc: "playout deadline after capture",
        },
        OptionDoc {
            key: "abandon_late",
            doc: "give a late frame up (partial reliability)",
        },
        OptionDoc {
            key: "abandon_early",
            doc: "with abandon_late: give a frame up once it can no longer arrive whole by its \
                  deadline (one-way delay + unsent bytes / sending rate), not when the \
                  deadline passes at the sender",
        },
    ],
    make: |o| {
        let mut c: VideoConfig = registry::from_options(o)?;
        if !(c.fps.is_finite() && c.fps > 0.0 && c.fps <= 1000.0) {
            return Err(format!("fps = {} must be in (0, 1000]", c.fps));
        }
        if c.gop == 0 {
            return Err("gop must be at least 1".into());
        }
        if !(c.i_ratio.is_finite() && c.i_ratio >= 1.0) {
            return Err(format!("i_ratio = {} must be at least 1", c.i_ratio));
        }
        let frames = (c.duration.0.as_secs_f64() * c.fps).round() as u64;
        let sizes = match &c.frame_sizes {
            Some(path) => {
                let text = std::fs::read_to_string(path)
                    .map_err(|e| format!("frame_sizes: cannot read {path}: {e}"))?;
                let mut v = Vec::new();
                for (i, line) in text.lines().enumerate() {
                    let t = line.split('#').next().unwrap_or("").trim();
                    if t.is_empty() {
                        continue;
                    }
                    match t.parse::<u64>() {
                        Ok(n) if n > 0 => v.push(n),
                        _ => {
                            return Err(format!(
                                "frame_sizes: {path} line {}: expected a frame size in bytes, \
                                 got `{t}`",
                                i + 1
                            ))
                        }
                    }
                }
                v.truncate(frames.max(1) as usize);
                v
            }
            None => {
                if frames == 0 {
                    return Err("duration × fps gives no frame".into());
                }
                let gop = u64::from(c.gop);
                // Per GOP: one I frame of r·P and gop − 1 P frames average bit_rate / fps.
                let mean = c.bit_rate.0 as f64 / 8.0 / c.fps;
                let p = mean * gop as f64 / (c.i_ratio + gop as f64 - 1.0);
                (0..frames)
                    .map(|k| {
                        let s = if k % gop == 0 { p * c.i_ratio } else { p };
                        (s.round() as u64).max(1)
                    })
                    .collect()
            }
        };
        if sizes.is_empty() {
            return Err("the frame-size trace has no frame".into());
        }
        c.sizes = Some(Arc::new(sizes));
        Ok(Arc::new(c))
    },
};

impl Factory for VideoConfig {
    fn options(&self) -> Options {
        registry::options_of(self)
    }
}

impl AppFactory for VideoConfig {
    fn lifetime(&self) -> Lifetime {
        Lifetime::Finite
    }

    fn validate(&self, flow: &FlowShape) -> Result<(), String> {
        if flow.connections != 1 {
            return Err(
                "a video is one stream of frames: use a multipath scheme, not n-tcp".into(),
            );
        }
        Ok(())
    }

    /// Early abandonment judges a frame by its one-way delay: timestamps keep queueing in
    /// the ACK direction out of it.
    fn ack_timestamps(&self) -> bool {
        self.abandon_early
    }

    fn build(&self, ctx: &AppContext) -> (Box<dyn AppHalf>, Box<dyn AppHalf>) {
        let sizes = self.sizes.clone().unwrap_or_default();
        let n = sizes.len();
        let clock = Clock {
            start: ctx.start,
            fps: self.fps,
            deadline: self.deadline.0,
        };
        (
            Box::new(Camera {
                sizes,
                gop: u64::from(self.gop),
                clock,
                abandon_late: self.abandon_late,
                abandon_early: self.abandon_early,
                next: 0,
                queued: std::collections::VecDeque::new(),
                written: 0,
                too_large: 0,
                closed: false,
            }),
            Box::new(Player {
                clock,
                outcome: vec![None; n],
                resolved: 0,
                on_time: 0,
                late: 0,
                abandoned: 0,
                delay_ms: Distribution::default(),
                next_play: 0,
                last_shown: None,
                stall: Duration::ZERO,
                stalls: 0,
                startup: None,
            }),
        )
    }
}

#[derive(Debug, Clone, Copy)]
struct Clock {
    start: Instant,
    fps: f64,
    deadline: Duration,
}

impl Clock {
    fn capture(&self, k: u64) -> Instant {
        self.start + Duration::from_nanos((k as f64 * 1e9 / self.fps).round() as u64)
    }
    fn due(&self, k: u64) -> Instant {
        self.capture(k) + self.deadline
    }
    fn interval(&self) -> Duration {
        Duration::from_nanos((1e9 / self.fps).round() as u64)
    }
}

#[derive(Debug)]
struct Camera {
    sizes: Arc<Vec<u64>>,
    gop: u64,
    clock: Clock,
    abandon_late: bool,
    abandon_early: bool,
    next: u64,
    queued: std::collections::VecDeque<u64>,
    written: u64,
    too_large: u64,
    closed: bool,
}

impl AppHalf for Camera {
    fn poll(&mut self, io: &mut AppIo<'_>) {
        let n = self.sizes.len() as u64;
        while self.next < n && self.clock.capture(self.next) <= io.now() {
            self.queued.push_back(self.next);
            self.next += 1;
        }
        let buffer = io.connection().config().send_buffer as u64;
        while let Some(&k) = self.queued.front() {
            let size = self.sizes[k as usize];
            let opts = MessageOptions::default()
                .with_deadline(self.clock.due(k), self.abandon_late)
                .deadline_at_peer(self.abandon_early)
                .with_priority(u8::from(k % self.gop != 0));
            // A frame larger than the whole send buffer can never be written: it is written
            // as a 1-byte stand-in so that message ids keep equalling frame numbers, and
            // counted.
            let len = if size > buffer {
                self.too_large += 1;
                1
            } else {
                size as usize
            };
            if io.write_message(len, opts).is_err() {
                break;
            }
            self.queued.pop_front();
            self.written += 1;
        }
        if !self.closed && self.written == n {
            io.close();
            self.closed = true;
        }
        // Received data (none expected) is read and verified.
        io.read(u64::MAX);
    }

    fn next_wake(&self) -> Option<Instant> {
        ((self.next as usize) < self.sizes.len()).then(|| self.clock.capture(self.next))
    }

    fn done(&self) -> bool {
        true
    }

    fn metrics(&self) -> serde_json::Value {
        serde_json::json!({
            "frames_written": self.written,
            "frames_too_large": self.too_large,
        })
    }
}

#[derive(Debug, Clone, Copy)]
enum Outcome {
    Complete(Instant),
    Abandoned,
}

#[derive(Debug)]
struct Player {
    clock: Clock,
    outcome: Vec<Option<Outcome>>,
    resolved: usize,
    on_time: u64,
    late: u64,
    abandoned: u64,
    delay_ms: Distribution,
    next_play: usize,
    last_shown: Option<Instant>,
    stall: Duration,
    stalls: u64,
    startup: Option<Instant>,
}

impl Player {
    fn resolve(&mut self, k: usize, o: Outcome) {
        let Some(slot) = self.outcome.get_mut(k) else {
            return;
        };
        if slot.is_some() {
            return;
        }
        *slot = Some(o);
        self.resolved += 1;
        match o {
            Outcome::Complete(c) => {
                if c <= self.clock.due(k as u64) {
                    self.on_time += 1;
                } else {
                    self.late += 1;
                }
                self.delay_ms
                    .add((c - self.clock.capture(k as u64)).as_secs_f64() * 1e3);
            }
            Outcome::Abandoned => self.abandoned += 1,
        }
        self.play();
    }

    /// Advances playback over the frames resolved in order.
    fn play(&mut self) {
        while let Some(Some(o)) = self.outcome.get(self.next_play).copied() {
            let slot = match self.last_shown {
                None => self.clock.due(0),
                Some(p) => p + self.clock.interval(),
            };
            let shown = match o {
                Outcome::Complete(c) if self.last_shown.is_none() => c.max(slot),
                Outcome::Complete(c) if c > slot => {
                    self.stall = self.stall + (c - slot);
                    self.stalls += 1;
                    c
                }
                _ => slot,
            };
            if self.last_shown.is_none() {
                self.startup = Some(shown);
            }
            self.last_shown = Some(shown);
            self.next_play += 1;
        }
    }
}

impl AppHalf for Player {
    fn poll(&mut self, io: &mut AppIo<'_>) {
        io.read(u64::MAX);
    }

    fn on_event(&mut self, io: &mut AppIo<'_>, event: &Event) {
        match *event {
            Event::MessageReceived { id, .. } => {
                self.resolve(id as usize, Outcome::Complete(io.now()));
            }
            Event::MessageAbandoned { id, .. } => {
                self.resolve(id as usize, Outcome::Abandoned);
            }
            _ => {}
        }
    }

    fn done(&self) -> bool {
        self.resolved == self.outcome.len()
    }

    fn metrics(&self) -> serde_json::Value {
        let frames = self.outcome.len() as u64;
        serde_json::json!({
            "frames": frames,
            "on_time": self.on_time,
            "late": self.late,
            "abandoned": self.abandoned,
            "unresolved": frames - self.resolved as u64,
            "frame_delay_ms": crate::result::summary(&self.delay_ms),
            "stall_s": self.stall.as_secs_f64(),
            "stalls": self.stalls,
            "startup_s": self.startup.map(|s| (s - self.clock.start).as_secs_f64()),
        })
    }
}
