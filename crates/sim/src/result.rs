//! What a run reports.

use crate::link::LinkStats;
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
    /// (delivery time s, delay ms) per block, if sampling was asked for.
    pub block_delay_series: Vec<[f64; 2]>,
    /// The scheme's own counters (name, sending and receiving half), summed over the flow's
    /// connections.
    pub scheme: SchemeCounters,
}

/// Counters of one link.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
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
    /// Per link, in configuration order.
    pub links: Vec<LinkResult>,
    /// Events processed.
    pub events: u64,
    /// Datagrams delivered to receiving endpoints (the data direction).
    pub data_packets_delivered: u64,
}
