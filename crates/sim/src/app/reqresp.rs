//! `request-response`: a client (the flow's sending end) sends `requests` requests of
//! `request_size` bytes, at most `concurrency` outstanding and at least `interval` apart; the
//! server answers each, as soon as all its bytes are held, with a `response_size` message.
//! A request completes when its whole response is held by the client; its completion time
//! runs from writing the request to that moment (an RPC's latency; a request that waits for
//! send-buffer space waits inside it).
//!
//! Which request a response answers travels beside its bytes (as in `web`).

use super::{AppContext, AppFactory, AppHalf, AppIo, FlowShape, Lifetime};
use crate::stats::Distribution;
use crate::units::{Dur, Size};
use std::sync::{Arc, Mutex};
use tributary_proto::message::MessageOptions;
use tributary_proto::registry::{self, Entry, Factory, OptionDoc, Options};
use tributary_proto::time::{Duration, Instant};
use tributary_proto::Event;

/// Options of `request-response`.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RequestResponseConfig {
    /// Requests to send.
    pub requests: u64,
    /// Bytes per request.
    pub request_size: Size,
    /// Bytes per response.
    pub response_size: Size,
    /// Most requests outstanding at once.
    pub concurrency: u64,
    /// Least time between two requests' starts.
    pub interval: Dur,
}

impl Default for RequestResponseConfig {
    fn default() -> Self {
        RequestResponseConfig {
            requests: 100,
            request_size: Size(1000),
            response_size: Size(100_000),
            concurrency: 1,
            interval: Dur(Duration::ZERO),
        }
    }
}

pub(super) const ENTRY: Entry<dyn AppFactory> = Entry {
    name: "request-response",
    aliases: &["rpc"],
    summary: "a client sends requests (at most `concurrency` outstanding), the server answers \
              each with a response message; per-request completion time",
    options: &[
        OptionDoc {
            key: "requests",
            doc: "number of requests",
        },
        OptionDoc {
            key: "request_size",
            doc: "bytes per request",
        },
        OptionDoc {
            key: "response_size",
            doc: "bytes per response",
        },
        OptionDoc {
            key: "concurrency",
            doc: "most requests outstanding at once",
        },
        OptionDoc {
            key: "interval",
            doc: "least time between two requests' starts",
        },
    ],
    make: |o| {
        let c: RequestResponseConfig = registry::from_options(o)?;
        for (k, v) in [
            ("requests", c.requests),
            ("request_size", c.request_size.0),
            ("response_size", c.response_size.0),
            ("concurrency", c.concurrency),
        ] {
            if v == 0 {
                return Err(format!("{k} must be positive"));
            }
        }
        Ok(Arc::new(c))
    },
};

impl Factory for RequestResponseConfig {
    fn options(&self) -> Options {
        registry::options_of(self)
    }
}

impl AppFactory for RequestResponseConfig {
    fn lifetime(&self) -> Lifetime {
        Lifetime::Finite
    }

    fn validate(&self, flow: &FlowShape) -> Result<(), String> {
        if flow.connections != 1 {
            return Err("requests and responses share one connection: not n-tcp".into());
        }
        Ok(())
    }

    fn build(&self, _ctx: &AppContext) -> (Box<dyn AppHalf>, Box<dyn AppHalf>) {
        let answers = Arc::new(Mutex::new(Vec::new()));
        (
            Box::new(Client {
                cfg: *self,
                answers: Arc::clone(&answers),
                sent_at: Vec::new(),
                next_allowed: None,
                outstanding: 0,
                completed: 0,
                completion_ms: Distribution::default(),
                closed: false,
            }),
            Box::new(Server {
                size: self.response_size.0 as usize,
                answers,
                queue: std::collections::VecDeque::new(),
                answered: 0,
                requests: self.requests,
                closed: false,
            }),
        )
    }
}

#[derive(Debug)]
struct Client {
    cfg: RequestResponseConfig,
    /// Request answered by each response message id.
    answers: Arc<Mutex<Vec<u64>>>,
    sent_at: Vec<Instant>,
    next_allowed: Option<Instant>,
    outstanding: u64,
    completed: u64,
    completion_ms: Distribution,
    closed: bool,
}

impl AppHalf for Client {
    fn poll(&mut self, io: &mut AppIo<'_>) {
        io.read(u64::MAX);
        while (self.sent_at.len() as u64) < self.cfg.requests
            && self.outstanding < self.cfg.concurrency
            && self.next_allowed.is_none_or(|t| t <= io.now())
        {
            if io
                .write_message(self.cfg.request_size.0 as usize, MessageOptions::default())
                .is_err()
            {
                break;
            }
            self.sent_at.push(io.now());
            self.outstanding += 1;
            self.next_allowed = Some(io.now() + self.cfg.interval.0);
        }
        if !self.closed && self.sent_at.len() as u64 == self.cfg.requests {
            io.close();
            self.closed = true;
        }
    }

    fn on_event(&mut self, io: &mut AppIo<'_>, event: &Event) {
        if let Event::MessageReceived { id, .. } = *event {
            let req = self.answers.lock().expect("single-threaded")[id as usize];
            let t = io.now() - self.sent_at[req as usize];
            self.completion_ms.add(t.as_secs_f64() * 1e3);
            self.completed += 1;
            self.outstanding -= 1;
            self.poll(io);
        }
    }

    fn next_wake(&self) -> Option<Instant> {
        let more = (self.sent_at.len() as u64) < self.cfg.requests
            && self.outstanding < self.cfg.concurrency;
        if more {
            self.next_allowed
        } else {
            None
        }
    }

    fn done(&self) -> bool {
        self.completed == self.cfg.requests
    }

    fn metrics(&self) -> serde_json::Value {
        serde_json::json!({
            "requests": self.sent_at.len(),
            "completed": self.completed,
            "completion_ms": crate::result::summary(&self.completion_ms),
        })
    }
}

#[derive(Debug)]
struct Server {
    size: usize,
    answers: Arc<Mutex<Vec<u64>>>,
    queue: std::collections::VecDeque<u64>,
    answered: u64,
    requests: u64,
    closed: bool,
}

impl AppHalf for Server {
    fn poll(&mut self, io: &mut AppIo<'_>) {
        io.read(u64::MAX);
        while let Some(&req) = self.queue.front() {
            if io
                .write_message(self.size, MessageOptions::default())
                .is_err()
            {
                break;
            }
            self.answers.lock().expect("single-threaded").push(req);
            self.queue.pop_front();
            self.answered += 1;
        }
        if !self.closed && self.answered == self.requests {
            io.close();
            self.closed = true;
        }
    }

    fn on_event(&mut self, io: &mut AppIo<'_>, event: &Event) {
        // Requests are written in order, so the client's message id is the request number.
        if let Event::MessageReceived { id, .. } = *event {
            self.queue.push_back(id);
            self.poll(io);
        }
    }

    fn done(&self) -> bool {
        true
    }

    fn metrics(&self) -> serde_json::Value {
        serde_json::json!({ "responses": self.answered })
    }
}
