//! What a simulation is made of: links, flows over routes of links, and timed changes.

use crate::link::{LinkParams, LossModel};
use tributary_proto::time::Duration;
use tributary_proto::ConnectionConfig;

/// A bidirectional link; the forward direction carries data, the reverse one ACKs.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct LinkConfig {
    /// Name used in results and errors.
    pub name: String,
    /// Sender → receiver direction.
    pub forward: LinkParams,
    /// Receiver → sender direction.
    pub reverse: LinkParams,
}

/// How a flow uses its paths.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum FlowKind {
    /// One connection over all the flow's paths.
    Multipath,
    /// One independent single-path connection per path, each with its own buffers; the
    /// flow's goodput is their sum (the papers' "N-TCP" ideal).
    PerPath,
}

/// One application transfer.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct FlowConfig {
    /// Name used in results.
    pub name: String,
    /// Paths, each a route of link indices from sender to receiver (the reverse direction
    /// of the same links carries the ACKs back).
    pub paths: Vec<Vec<usize>>,
    /// Connection configuration (both ends).
    pub conn: ConnectionConfig,
    /// Multipath or one connection per path.
    pub kind: FlowKind,
    /// When the application starts writing.
    pub start: Duration,
    /// Bytes to transfer; `None` writes for as long as the simulation runs.
    pub bytes: Option<u64>,
    /// Receiving application's read rate in bit/s; `None` reads as data arrives.
    pub read_rate_bps: Option<u64>,
}

/// Which direction(s) of a link a change applies to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Direction {
    /// Data direction only.
    Forward,
    /// ACK direction only.
    Reverse,
    /// Both.
    Both,
}

/// A change of link parameters; unset fields keep their value.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct LinkChange {
    /// New rate, bit/s.
    pub rate_bps: Option<u64>,
    /// New propagation delay.
    pub delay: Option<Duration>,
    /// New loss model.
    pub loss: Option<LossModel>,
    /// Up or down.
    pub up: Option<bool>,
}

/// A change at a given time.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct TimedChange {
    /// When (from the start of the run).
    pub at: Duration,
    /// Link index.
    pub link: usize,
    /// Direction(s).
    pub direction: Direction,
    /// What changes.
    pub change: LinkChange,
}

/// A whole simulation.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct SimConfig {
    /// Links.
    pub links: Vec<LinkConfig>,
    /// Flows (all run concurrently).
    pub flows: Vec<FlowConfig>,
    /// Timed link changes.
    pub changes: Vec<TimedChange>,
    /// Simulated time after which the run stops (finite flows may finish earlier; the run
    /// then stops when all finite flows are done and there is no bulk flow).
    pub duration: Duration,
    /// Master seed: every link direction and connection derives its own stream from it.
    pub seed: u64,
    /// Bytes of lower-layer headers added to each datagram on the wire (IPv4 + UDP = 28).
    pub header_overhead: u64,
    /// Record each flow's goodput every this long (time series for plots).
    pub sample_interval: Option<Duration>,
}

/// A configuration the simulator cannot run.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{what}: {reason}")]
pub struct SimConfigError {
    /// Where (e.g. `flows[1].paths[0]`).
    pub what: String,
    /// The problem.
    pub reason: String,
}

impl SimConfig {
    /// Checks the configuration; the error names the offending element.
    pub fn validate(&self) -> Result<(), SimConfigError> {
        let err = |what: String, reason: String| Err(SimConfigError { what, reason });
        if self.duration.as_nanos() == 0 {
            return err("duration".into(), "must be positive".into());
        }
        if self.flows.is_empty() {
            return err("flows".into(), "at least one flow is needed".into());
        }
        for (i, l) in self.links.iter().enumerate() {
            for (dir, p) in [("forward", &l.forward), ("reverse", &l.reverse)] {
                if let Err(e) = p.validate() {
                    return err(format!("links[{i}] ({}) {dir}", l.name), e);
                }
            }
        }
        for (i, f) in self.flows.iter().enumerate() {
            let what = format!("flows[{i}] ({})", f.name);
            if f.paths.is_empty() {
                return err(what, "has no path".into());
            }
            for (j, route) in f.paths.iter().enumerate() {
                if route.is_empty() {
                    return err(format!("{what}.paths[{j}]"), "is an empty route".into());
                }
                if route.len() > 255 {
                    return err(
                        format!("{what}.paths[{j}]"),
                        "has more than 255 hops".into(),
                    );
                }
                if let Some(&bad) = route.iter().find(|&&l| l >= self.links.len()) {
                    return err(
                        format!("{what}.paths[{j}]"),
                        format!("refers to link {bad}, but there are {}", self.links.len()),
                    );
                }
            }
            let n = match f.kind {
                FlowKind::Multipath => f.paths.len(),
                FlowKind::PerPath => 1,
            };
            if let Err(e) = f.conn.validate(n) {
                return err(what, e.to_string());
            }
            if f.bytes == Some(0) {
                return err(
                    what,
                    "bytes must be positive (omit it for a bulk flow)".into(),
                );
            }
            if f.read_rate_bps == Some(0) {
                return err(what, "read rate must be positive".into());
            }
        }
        for (i, c) in self.changes.iter().enumerate() {
            if c.link >= self.links.len() {
                return err(
                    format!("changes[{i}]"),
                    format!(
                        "refers to link {}, but there are {}",
                        c.link,
                        self.links.len()
                    ),
                );
            }
            if c.change.rate_bps == Some(0) {
                return err(format!("changes[{i}]"), "rate must be positive".into());
            }
        }
        if self.sample_interval.is_some_and(|d| d.as_nanos() == 0) {
            return err("sample_interval".into(), "must be positive".into());
        }
        Ok(())
    }
}
