//! `web`: a page of objects fetched over one connection, with requests that cross the
//! network.
//!
//! The client is the flow's receiving end. It requests every object without a dependency at
//! once (one `request_size` message each, towards the server), and an object that depends on
//! another when that one is complete (a page's HTML before its images). The server (the
//! flow's sending end) answers each request, as its message arrives, with the object as one
//! message. Page load time: from the flow's start to the last object complete at the client.
//!
//! What a request names travels beside its bytes: the client records the object of its k-th
//! request and the server looks it up when request message k has arrived; likewise for the
//! responses (the bytes are the flows' verified streams, the names are the simulator's).

use super::{AppContext, AppFactory, AppHalf, AppIo, FlowShape, Lifetime};
use crate::units::Size;
use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use tributary_proto::message::MessageOptions;
use tributary_proto::registry::{self, Entry, Factory, OptionDoc, Options};
use tributary_proto::time::Instant;
use tributary_proto::Event;

/// Options of `web`.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct WebConfig {
    /// Object sizes, in page order.
    pub objects: Vec<Size>,
    /// Per object, the object it depends on (requested once that one is complete), or −1.
    /// Empty: object 0 first, every other object after it.
    pub depends_on: Vec<i64>,
    /// Bytes of each request.
    pub request_size: Size,
}

impl Default for WebConfig {
    fn default() -> Self {
        WebConfig {
            objects: [30_000, 60_000, 60_000, 20_000, 20_000, 10_000]
                .map(Size)
                .to_vec(),
            depends_on: Vec::new(),
            request_size: Size(300),
        }
    }
}

pub(super) const ENTRY: Entry<dyn AppFactory> = Entry {
    name: "web",
    aliases: &[],
    summary: "a page of objects: requests cross the network, each object answered as a \
              message, dependents requested when their parent is complete; page load time and \
              per-object completion",
    options: &[
        OptionDoc {
            key: "objects",
            doc: "object sizes in page order",
        },
        OptionDoc {
            key: "depends_on",
            doc: "per object: index of the object it waits for, or -1 (empty: all wait for \
                  object 0)",
        },
        OptionDoc {
            key: "request_size",
            doc: "bytes per request",
        },
    ],
    make: |o| {
        let c: WebConfig = registry::from_options(o)?;
        if c.objects.is_empty() {
            return Err("objects: a page needs at least one object".into());
        }
        if c.objects.iter().any(|s| s.0 == 0) {
            return Err("objects: sizes must be positive".into());
        }
        if c.request_size.0 == 0 {
            return Err("request_size must be positive".into());
        }
        if !c.depends_on.is_empty() {
            if c.depends_on.len() != c.objects.len() {
                return Err(format!(
                    "depends_on has {} entries for {} objects",
                    c.depends_on.len(),
                    c.objects.len()
                ));
            }
            for (i, &d) in c.depends_on.iter().enumerate() {
                // Parents come first: no cycle, every object reachable.
                if d != -1 && !(0..i as i64).contains(&d) {
                    return Err(format!(
                        "depends_on[{i}] = {d}: must be -1 or an earlier object's index"
                    ));
                }
            }
        }
        Ok(Arc::new(c))
    },
};

impl WebConfig {
    fn parent(&self, i: usize) -> Option<usize> {
        if self.depends_on.is_empty() {
            (i > 0).then_some(0)
        } else {
            usize::try_from(self.depends_on[i]).ok()
        }
    }
}

impl Factory for WebConfig {
    fn options(&self) -> Options {
        registry::options_of(self)
    }
}

/// What the two ends share beside the bytes: the object each request and response carries,
/// by message id.
#[derive(Debug, Default)]
struct Names {
    requests: Vec<usize>,
    responses: Vec<usize>,
}

impl AppFactory for WebConfig {
    fn lifetime(&self) -> Lifetime {
        Lifetime::Finite
    }

    fn validate(&self, flow: &FlowShape) -> Result<(), String> {
        if flow.connections != 1 {
            return Err("a page is fetched over one connection: not n-tcp".into());
        }
        Ok(())
    }

    fn build(&self, ctx: &AppContext) -> (Box<dyn AppHalf>, Box<dyn AppHalf>) {
        let names = Arc::new(Mutex::new(Names::default()));
        let n = self.objects.len();
        let mut children = vec![Vec::new(); n];
        let mut roots = VecDeque::new();
        for i in 0..n {
            match self.parent(i) {
                Some(p) => children[p].push(i),
                None => roots.push_back(i),
            }
        }
        (
            Box::new(Server {
                sizes: self.objects.iter().map(|s| s.0).collect(),
                names: Arc::clone(&names),
                queue: VecDeque::new(),
                answered: 0,
                closed: false,
            }),
            Box::new(Client {
                start: ctx.start,
                request_size: self.request_size.0 as usize,
                names,
                children,
                to_request: roots,
                requested: 0,
                done_at: vec![None; n],
                complete: 0,
                closed: false,
            }),
        )
    }
}

#[derive(Debug)]
struct Server {
    sizes: Vec<u64>,
    names: Arc<Mutex<Names>>,
    queue: VecDeque<usize>,
    answered: usize,
    closed: bool,
}

impl AppHalf for Server {
    fn poll(&mut self, io: &mut AppIo<'_>) {
        io.read(u64::MAX);
        while let Some(&obj) = self.queue.front() {
            let len = self.sizes[obj] as usize;
            let Ok(id) = io.write_message(len, MessageOptions::default()) else {
                break;
            };
            let mut names = self.names.lock().expect("single-threaded");
            debug_assert_eq!(id as usize, names.responses.len());
            names.responses.push(obj);
            self.queue.pop_front();
            self.answered += 1;
        }
        if !self.closed && self.answered == self.sizes.len() {
            io.close();
            self.closed = true;
        }
    }

    fn on_event(&mut self, io: &mut AppIo<'_>, event: &Event) {
        if let Event::MessageReceived { id, .. } = *event {
            let obj = self.names.lock().expect("single-threaded").requests[id as usize];
            self.queue.push_back(obj);
            self.poll(io);
        }
    }

    fn done(&self) -> bool {
        true
    }

    fn metrics(&self) -> serde_json::Value {
        serde_json::json!({ "objects_sent": self.answered })
    }
}

#[derive(Debug)]
struct Client {
    start: Instant,
    request_size: usize,
    names: Arc<Mutex<Names>>,
    children: Vec<Vec<usize>>,
    to_request: VecDeque<usize>,
    requested: usize,
    done_at: Vec<Option<Instant>>,
    complete: usize,
    closed: bool,
}

impl AppHalf for Client {
    fn poll(&mut self, io: &mut AppIo<'_>) {
        io.read(u64::MAX);
        while let Some(&obj) = self.to_request.front() {
            let Ok(id) = io.write_message(self.request_size, MessageOptions::default()) else {
                break;
            };
            let mut names = self.names.lock().expect("single-threaded");
            debug_assert_eq!(id as usize, names.requests.len());
            names.requests.push(obj);
            self.to_request.pop_front();
            self.requested += 1;
        }
        if !self.closed && self.requested == self.done_at.len() {
            io.close();
            self.closed = true;
        }
    }

    fn on_event(&mut self, io: &mut AppIo<'_>, event: &Event) {
        if let Event::MessageReceived { id, .. } = *event {
            let obj = self.names.lock().expect("single-threaded").responses[id as usize];
            if self.done_at[obj].is_none() {
                self.done_at[obj] = Some(io.now());
                self.complete += 1;
                self.to_request.extend(self.children[obj].iter().copied());
                self.poll(io);
            }
        }
    }

    fn done(&self) -> bool {
        self.complete == self.done_at.len()
    }

    fn metrics(&self) -> serde_json::Value {
        let since = |t: &Option<Instant>| t.map(|t| (t - self.start).as_secs_f64());
        serde_json::json!({
            "objects": self.done_at.len(),
            "objects_complete": self.complete,
            "page_load_s": self.done().then(|| {
                self.done_at.iter().filter_map(since).fold(0.0, f64::max)
            }),
            "object_completion_s": self.done_at.iter().map(since).collect::<Vec<_>>(),
        })
    }
}
