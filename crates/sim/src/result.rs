//! What a run reports.

use crate::link::LinkStats;
use crate::stats::Distribution;
use tributary_proto::conn::SchemeCounters;

/// Per-path results of a flow (summed over the flow's connections for per-path flows).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct PathResult {
    /// Acknowledged datagram bytes on this path over the flow's lifetime, Mbit/s.
    pub throughput_mbps: f64,
    /// Ack-eliciting and other datagrams sent by the sender.
    pub packets_sent: u64,
    /// Packets declared lost by the sender.
    pub packets_lost: u64,
    /// `packets_lost / packets_sent`.
    pub loss_rate: f64,
    /// Stream bytes re-sent on this path.
    pub retransmitted_bytes: u64,
    /// Payload bytes sent on this path (stream data, symbols, parity).
    pub payload_bytes_sent: u64,
    /// Retransmission timeouts.
    pub rto_count: u64,
    /// Final smoothed RTT, ms.
    pub srtt_ms: Option<f64>,
    /// Final congestion window, bytes.
    pub cwnd_bytes: u64,
    /// Losses that proved spurious (the original was acknowledged after all), with
    /// `reorder_tolerance`; left out of the results while 0.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub spurious_losses: u64,
    /// Congestion responses undone because all their losses proved spurious, with
    /// `reorder_tolerance`; left out of the results while 0.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub undos: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// Block delivery delay: from the first transmission of any byte of a block to its in-order
/// delivery, over all blocks delivered (block size = the connection's `metric_block`).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct BlockDelay {
    /// Blocks measured.
    pub blocks: u64,
    /// Mean delay, ms.
    pub mean_ms: f64,
    /// Jitter: standard deviation of the block delays, ms.
    pub jitter_ms: f64,
    /// 95th percentile, ms.
    pub p95_ms: f64,
    /// Largest delay, ms.
    pub max_ms: f64,
}

/// Results of one flow.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct FlowResult {
    /// Flow name.
    pub name: String,
    /// Stream bytes delivered in order to the receiving application.
    pub bytes_delivered: u64,
    /// `bytes_delivered` over the flow's active time (start → completion or end of run),
    /// Mbit/s.
    pub goodput_mbps: f64,
    /// Seconds from start to the last byte read, for finite flows that finished.
    pub completion_s: Option<f64>,
    /// Per path.
    pub paths: Vec<PathResult>,
    /// Time-weighted mean receive-buffer occupancy, bytes (summed over connections).
    pub buffer_mean_bytes: f64,
    /// Largest receive-buffer occupancy seen, bytes (largest over connections).
    pub buffer_max_bytes: u64,
    /// Datagrams the endpoints dropped as malformed or corrupted.
    pub malformed_dropped: u64,
    /// Stream bytes dropped for arriving beyond the receive window.
    pub window_drops: u64,
    /// Window reductions the scheme asked for (MPTCP penalisation), all paths.
    pub penalizations: u64,
    /// Redundancy: payload bytes sent (stream data, symbols, parity, retransmissions
    /// included) over stream bytes delivered, minus one; the same measure for every scheme.
    /// Never negative; for a flow cut off by the end of the run it also counts what was still
    /// in flight. `None` if nothing was delivered.
    pub overhead: Option<f64>,
    /// (time s, goodput Mbit/s over the preceding interval), if sampling was asked for.
    pub series: Vec<[f64; 2]>,
    /// Block delivery delay statistics (none if no block was delivered).
    pub block_delay: Option<BlockDelay>,
    /// With `sample_interval`: per sampling interval in which blocks were delivered, (mean
    /// delivery time s, mean delay ms) of those blocks.
    pub block_delay_series: Vec<[f64; 2]>,
    /// With `sample_interval`: per path (same order as `paths`), its state sampled at the end
    /// of each interval while the flow was live.
    pub path_series: Vec<PathSeries>,
    /// The application's own measurements (name, sending and receiving half), summed over
    /// the flow's connections.
    pub app: AppCounters,
    /// The scheme's own counters (name, sending and receiving half), summed over the flow's
    /// connections.
    pub scheme: SchemeCounters,
}

/// The application's measurements: its registry name and each half's own values.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct AppCounters {
    /// Registry name.
    pub name: String,
    /// The sending half's measurements (`null` if it keeps none).
    pub sender: serde_json::Value,
    /// The receiving half's measurements (`null` if it keeps none).
    pub receiver: serde_json::Value,
}

/// One path's state over time, column by column (all columns have the length of `t_s`).
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct PathSeries {
    /// Sample times, s.
    pub t_s: Vec<f64>,
    /// Congestion window, bytes.
    pub cwnd_bytes: Vec<u64>,
    /// Smoothed RTT, ms (`null` before the first sample).
    pub srtt_ms: Vec<Option<f64>>,
    /// Bytes in flight.
    pub in_flight_bytes: Vec<u64>,
    /// Acknowledged datagram bytes over the interval, Mbit/s.
    pub throughput_mbps: Vec<f64>,
    /// Packets declared lost during the interval.
    pub losses: Vec<u64>,
    /// Stream bytes re-sent during the interval.
    pub retransmitted_bytes: Vec<u64>,
}

/// Summary of a distribution (count, mean, standard deviation, percentiles, max).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct DistributionSummary {
    /// Samples.
    pub n: u64,
    /// Mean.
    pub mean: f64,
    /// Standard deviation.
    pub std: f64,
    /// Median.
    pub p50: f64,
    /// 95th percentile.
    pub p95: f64,
    /// 99th percentile.
    pub p99: f64,
    /// Largest.
    pub max: f64,
}

impl DistributionSummary {
    /// The summary of `d` (`None` without samples).
    pub fn of(d: &Distribution) -> Option<Self> {
        (d.count() > 0).then(|| DistributionSummary {
            n: d.count(),
            mean: d.mean(),
            std: d.std_dev(),
            p50: d.quantile(0.5),
            p95: d.quantile(0.95),
            p99: d.quantile(0.99),
            max: d.max(),
        })
    }
}

/// A distribution summary as JSON (`null` without samples), for application metrics.
pub(crate) fn summary(d: &Distribution) -> serde_json::Value {
    serde_json::to_value(DistributionSummary::of(d)).unwrap_or(serde_json::Value::Null)
}

/// Results of the flows of one arrival process, aggregated.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ArrivalResult {
    /// Group name.
    pub name: String,
    /// Flows that arrived.
    pub flows: u64,
    /// Flows that completed.
    pub completed: u64,
    /// Completion time of the completed flows, s.
    pub completion_s: Option<DistributionSummary>,
    /// Goodput of each completed flow (bytes over its completion time), Mbit/s.
    pub goodput_mbps: Option<DistributionSummary>,
    /// Stream bytes delivered, all flows.
    pub bytes_delivered: u64,
    /// Most flows of the group live at the same time.
    pub max_concurrent: u64,
    /// The application's measurements summed over the group's flows.
    pub app: AppCounters,
}

/// Counters of one link.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct LinkResult {
    /// Link name.
    pub name: String,
    /// Data direction.
    pub forward: LinkStats,
    /// ACK direction.
    pub reverse: LinkStats,
}

/// Everything a run reports.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct SimResult {
    /// Simulated seconds.
    pub sim_seconds: f64,
    /// Per flow, in configuration order.
    pub flows: Vec<FlowResult>,
    /// Per arrival process, in configuration order.
    pub arrivals: Vec<ArrivalResult>,
    /// Per link, in configuration order.
    pub links: Vec<LinkResult>,
    /// Events processed.
    pub events: u64,
    /// Datagrams delivered to receiving endpoints (the data direction).
    pub data_packets_delivered: u64,
}
