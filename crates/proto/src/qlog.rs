//! qlog traces: a [`Tracer`] that writes a connection's events as a JSON Text Sequence
//! (RFC 7464: each record is `0x1E`, a JSON object, `\n`) in the layout of the IETF qlog main
//! schema's sequential file (draft-ietf-quic-qlog-main-schema, "QlogFileSeq"; version 0.3,
//! the one qvis loads): a header record with the trace's `common_fields` and
//! `vantage_point`, then one record per event with `time` (milliseconds relative to the
//! connection's epoch), `name` and `data`.
//!
//! Events: `transport:packet_sent`, `transport:packet_received` (header with `packet_type`
//! `"1RTT"`, `packet_number`, `raw.payload_length` and the decoded frames),
//! `recovery:packet_lost` (with the trigger, `reordering_threshold` or `pto_expired`) and
//! `recovery:metrics_updated` (congestion window, RTTs in ms, bytes in flight, ssthresh);
//! with the reordering tolerance also two events of our own namespace (the schema has none
//! for them): `tributary:spurious_loss` (a declared-lost packet acknowledged after all: its
//! `packet_number`) and `tributary:congestion_undone` (its episode's congestion response
//! undone). Every event carries the multipath extension's `path_id`. The tracer buffers and
//! writes on drop or [`QlogWriter::finish`]; a write error is kept and reported by `finish`.

use crate::scheme::LossKind;
use crate::time::Instant;
use crate::trace::{TraceEvent, Tracer};
use crate::wire::{Frame, FrameIter};
use std::fmt::Write as _;
use std::io::Write;

/// Bytes buffered before a write.
const FLUSH_AT: usize = 64 * 1024;

/// Which end of the connection the trace is from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum VantagePoint {
    /// The end that sends the data.
    Client,
    /// The end that receives it.
    Server,
}

/// Writes qlog JSON-SEQ records to `W`.
#[derive(Debug)]
pub struct QlogWriter<W: Write + Send + std::fmt::Debug> {
    out: Option<W>,
    buf: String,
    error: Option<std::io::Error>,
    events: u64,
}

/// A JSON string literal.
fn quote(s: &str) -> String {
    serde_json::Value::String(s.to_string()).to_string()
}

fn ms(d: crate::time::Duration) -> f64 {
    d.as_nanos() as f64 / 1e6
}

impl<W: Write + Send + std::fmt::Debug> QlogWriter<W> {
    /// A trace titled `title` from `vantage` (named `name`), written to `out`.
    pub fn new(out: W, title: &str, name: &str, vantage: VantagePoint) -> Self {
        let ty = match vantage {
            VantagePoint::Client => "client",
            VantagePoint::Server => "server",
        };
        let mut w = QlogWriter {
            out: Some(out),
            buf: String::new(),
            error: None,
            events: 0,
        };
        let _ = writeln!(
            w.buf,
            "\u{1e}{{\"qlog_version\":\"0.3\",\"qlog_format\":\"JSON-SEQ\",\"title\":{},\
             \"trace\":{{\"common_fields\":{{\"protocol_type\":[\"TRIBUTARY\"],\
             \"time_format\":\"relative\",\"reference_time\":0}},\
             \"vantage_point\":{{\"name\":{},\"type\":\"{ty}\"}}}}}}",
            quote(title),
            quote(name)
        );
        w
    }

    /// Events written so far.
    pub fn events(&self) -> u64 {
        self.events
    }

    fn record(&mut self, now: Instant, name: &str, data: std::fmt::Arguments<'_>) {
        self.events += 1;
        let _ = writeln!(
            self.buf,
            "\u{1e}{{\"time\":{},\"name\":\"{name}\",\"data\":{{{data}}}}}",
            now.as_nanos() as f64 / 1e6
        );
        if self.buf.len() >= FLUSH_AT {
            self.flush();
        }
    }

    fn flush(&mut self) {
        if let (Some(out), None) = (&mut self.out, &self.error) {
            if let Err(e) = out.write_all(self.buf.as_bytes()) {
                self.error = Some(e);
            }
        }
        self.buf.clear();
    }

    /// Writes what is buffered and returns the output, or the first write error.
    pub fn finish(mut self) -> std::io::Result<W> {
        self.flush();
        if let Some(e) = self.error.take() {
            return Err(e);
        }
        let mut out = self.out.take().expect("output present until finish");
        out.flush()?;
        Ok(out)
    }
}

impl<W: Write + Send + std::fmt::Debug> Drop for QlogWriter<W> {
    fn drop(&mut self) {
        if self.out.is_some() {
            self.flush();
            if let Some(out) = &mut self.out {
                let _ = out.flush();
            }
        }
    }
}

/// The frames of a packet as qlog frame objects: QUIC's names where the meaning matches
/// (`stream` with offset and length for DATA, `ack`, `ping`, `padding`,
/// `connection_close`), the wire format's own otherwise (`docs/wire.md`).
fn frame_list(frames: &[u8]) -> String {
    let mut out = String::new();
    for f in FrameIter::new(frames) {
        let Ok(f) = f else {
            break;
        };
        if !out.is_empty() {
            out.push(',');
        }
        let _ = match f {
            Frame::Data { offset, data } => write!(
                out,
                "{{\"frame_type\":\"stream\",\"offset\":{offset},\"length\":{}}}",
                data.len()
            ),
            Frame::StreamEnd { final_size } => write!(
                out,
                "{{\"frame_type\":\"stream\",\"offset\":{final_size},\"length\":0,\"fin\":true}}"
            ),
            Frame::Ack(a) => {
                let _ = write!(
                    out,
                    "{{\"frame_type\":\"ack\",\"path_id\":{},\"largest\":{},\"ack_delay\":{}",
                    a.path,
                    a.largest,
                    a.ack_delay as f64 / 1000.0
                );
                // ACK_TS: the receive time of `largest` (µs, the receiver's clock), a field
                // of our own (qlog's QUIC schema has none).
                if let Some(t) = a.received_at {
                    let _ = write!(out, ",\"received_at_us\":{t}");
                }
                write!(out, "}}")
            }
            Frame::Ping => write!(out, "{{\"frame_type\":\"ping\"}}"),
            Frame::Padding(n) => write!(out, "{{\"frame_type\":\"padding\",\"length\":{n}}}"),
            Frame::Close { code } => write!(
                out,
                "{{\"frame_type\":\"connection_close\",\"error_code\":{code}}}"
            ),
            Frame::Symbol(_) => write!(out, "{{\"frame_type\":\"symbol\"}}"),
            Frame::Feedback(_) => write!(out, "{{\"frame_type\":\"feedback\"}}"),
            Frame::AckFloor { .. } => write!(out, "{{\"frame_type\":\"ack_floor\"}}"),
            Frame::Message(_) => write!(out, "{{\"frame_type\":\"message\"}}"),
            Frame::Abandon(_) => write!(out, "{{\"frame_type\":\"abandon\"}}"),
            Frame::Scheme { .. } => write!(out, "{{\"frame_type\":\"scheme\"}}"),
            #[allow(unreachable_patterns)]
            _ => write!(out, "{{\"frame_type\":\"unknown\"}}"),
        };
    }
    out
}

/// A [`QlogWriter`] that finishes itself when dropped and records a write error, named by
/// `label` (a file path, say), in a list shared with whoever owns the traces — for tracers
/// handed to a connection, which drops them at its end.
#[derive(Debug)]
pub struct ReportingQlog<W: Write + Send + std::fmt::Debug> {
    w: Option<QlogWriter<W>>,
    label: String,
    errors: std::sync::Arc<std::sync::Mutex<Vec<String>>>,
}

impl<W: Write + Send + std::fmt::Debug> ReportingQlog<W> {
    /// Wraps `w`; on drop, a write error is pushed to `errors` as `"{label}: {error}"`.
    pub fn new(
        w: QlogWriter<W>,
        label: String,
        errors: std::sync::Arc<std::sync::Mutex<Vec<String>>>,
    ) -> Self {
        ReportingQlog {
            w: Some(w),
            label,
            errors,
        }
    }
}

impl<W: Write + Send + std::fmt::Debug> Tracer for ReportingQlog<W> {
    fn event(&mut self, now: Instant, event: &TraceEvent<'_>) {
        if let Some(w) = &mut self.w {
            w.event(now, event);
        }
    }
}

impl<W: Write + Send + std::fmt::Debug> Drop for ReportingQlog<W> {
    fn drop(&mut self) {
        if let Some(w) = self.w.take() {
            if let Err(e) = w.finish() {
                if let Ok(mut v) = self.errors.lock() {
                    v.push(format!("{}: {e}", self.label));
                }
            }
        }
    }
}

impl<W: Write + Send + std::fmt::Debug> Tracer for QlogWriter<W> {
    fn event(&mut self, now: Instant, event: &TraceEvent<'_>) {
        match *event {
            TraceEvent::PacketSent {
                path,
                header,
                frames,
            } => {
                let list = frame_list(frames);
                self.record(
                    now,
                    "transport:packet_sent",
                    format_args!(
                        "\"path_id\":{path},\"header\":{{\"packet_type\":\"1RTT\",\
                         \"packet_number\":{}}},\"raw\":{{\"payload_length\":{}}},\
                         \"frames\":[{list}]",
                        header.pn,
                        frames.len()
                    ),
                )
            }
            TraceEvent::PacketReceived {
                path,
                header,
                frames,
            } => {
                let list = frame_list(frames);
                self.record(
                    now,
                    "transport:packet_received",
                    format_args!(
                        "\"path_id\":{path},\"header\":{{\"packet_type\":\"1RTT\",\
                         \"packet_number\":{}}},\"raw\":{{\"payload_length\":{}}},\
                         \"frames\":[{list}]",
                        header.pn,
                        frames.len()
                    ),
                )
            }
            TraceEvent::PacketLost {
                path,
                pn,
                size,
                kind,
            } => {
                let trigger = match kind {
                    // qlog has no trigger for a loss the scheme declared (FEC: the parity
                    // that could repair it arrived); it is a reordering threshold at the
                    // block boundary.
                    LossKind::Threshold | LossKind::Declared => "reordering_threshold",
                    LossKind::Timeout => "pto_expired",
                };
                self.record(
                    now,
                    "recovery:packet_lost",
                    format_args!(
                        "\"path_id\":{path},\"header\":{{\"packet_type\":\"1RTT\",\
                         \"packet_number\":{pn}}},\"raw\":{{\"length\":{size}}},\
                         \"trigger\":\"{trigger}\""
                    ),
                )
            }
            // No qlog event of the IETF schema says this; custom events carry the
            // implementation's namespace, which viewers list as they are.
            TraceEvent::SpuriousLoss { path, pn } => self.record(
                now,
                "tributary:spurious_loss",
                format_args!(
                    "\"path_id\":{path},\"header\":{{\"packet_type\":\"1RTT\",\
                     \"packet_number\":{pn}}}"
                ),
            ),
            TraceEvent::CongestionUndone { path } => self.record(
                now,
                "tributary:congestion_undone",
                format_args!("\"path_id\":{path}"),
            ),
            TraceEvent::MetricsUpdated { view } => {
                let mut extra = String::new();
                for (k, v) in [
                    ("smoothed_rtt", view.srtt),
                    ("min_rtt", view.min_rtt),
                    ("latest_rtt", view.latest_rtt),
                ] {
                    if let Some(d) = v {
                        let _ = write!(extra, ",\"{k}\":{}", ms(d));
                    }
                }
                self.record(
                    now,
                    "recovery:metrics_updated",
                    format_args!(
                        "\"path_id\":{},\"congestion_window\":{},\"bytes_in_flight\":{},\
                         \"ssthresh\":{},\"packets_in_flight\":{}{extra}",
                        view.id,
                        view.cwnd,
                        view.bytes_in_flight,
                        view.ssthresh,
                        view.packets_in_flight
                    ),
                )
            }
            // Events added later are not traced until this writer learns them.
            #[allow(unreachable_patterns)]
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::Header;

    #[test]
    fn records_are_json_text_sequences() {
        let mut w = QlogWriter::new(Vec::new(), "t \"1\"", "flow", VantagePoint::Client);
        // A PING and 3 bytes of padding.
        let frames = [0x01u8, 0, 0, 0];
        w.event(
            Instant::from_nanos(1_500_000),
            &TraceEvent::PacketSent {
                path: 1,
                header: Header {
                    conn_id: 9,
                    path: 1,
                    pn: 7,
                },
                frames: &frames,
            },
        );
        w.event(
            Instant::from_nanos(2_000_000),
            &TraceEvent::PacketLost {
                path: 1,
                pn: 7,
                size: 33,
                kind: LossKind::Timeout,
            },
        );
        w.event(
            Instant::from_nanos(2_500_000),
            &TraceEvent::SpuriousLoss { path: 1, pn: 7 },
        );
        w.event(
            Instant::from_nanos(2_500_000),
            &TraceEvent::CongestionUndone { path: 1 },
        );
        assert_eq!(w.events(), 4);
        let out = String::from_utf8(w.finish().unwrap()).unwrap();
        let records: Vec<serde_json::Value> = out
            .split('\u{1e}')
            .skip(1)
            .map(|r| {
                assert!(r.ends_with('\n'), "{r:?}");
                serde_json::from_str(r).unwrap()
            })
            .collect();
        assert_eq!(records.len(), 5);
        assert_eq!(records[0]["qlog_format"], "JSON-SEQ");
        assert_eq!(records[0]["title"], "t \"1\"");
        assert_eq!(records[0]["trace"]["vantage_point"]["type"], "client");
        assert_eq!(records[1]["name"], "transport:packet_sent");
        assert_eq!(records[1]["time"], 1.5);
        assert_eq!(records[1]["data"]["header"]["packet_number"], 7);
        assert_eq!(records[1]["data"]["path_id"], 1);
        assert_eq!(records[1]["data"]["raw"]["payload_length"], 4);
        assert_eq!(records[1]["data"]["frames"][0]["frame_type"], "ping");
        assert_eq!(records[2]["data"]["trigger"], "pto_expired");
        assert_eq!(records[3]["name"], "tributary:spurious_loss");
        assert_eq!(records[3]["data"]["header"]["packet_number"], 7);
        assert_eq!(records[3]["data"]["path_id"], 1);
        assert_eq!(records[4]["name"], "tributary:congestion_undone");
        assert_eq!(records[4]["data"]["path_id"], 1);
    }

    /// An ACK_TS frame shows its receive time; a plain ACK has none.
    #[test]
    fn ack_frames_show_the_receive_time_when_they_carry_one() {
        let mut set = crate::ranges::RangeSet::new();
        set.insert(3..9);
        let mut w = QlogWriter::new(Vec::new(), "t", "flow", VantagePoint::Server);
        for ts in [None, Some(123_456)] {
            let mut buf = [0u8; 64];
            let hdr = Header {
                conn_id: 1,
                path: 0,
                pn: 1,
            };
            let mut pw = crate::wire::PacketWriter::new(&mut buf, 64, hdr).unwrap();
            assert!(pw.push_ack(0, &set, 4, 2_000, 0, 0, ts).unwrap());
            let n = pw.finish();
            let (_, body) = crate::wire::parse_packet(&buf[..n]).unwrap();
            w.event(
                Instant::from_nanos(1_000_000),
                &TraceEvent::PacketSent {
                    path: 0,
                    header: hdr,
                    frames: body,
                },
            );
        }
        let out = String::from_utf8(w.finish().unwrap()).unwrap();
        let acks: Vec<serde_json::Value> = out
            .split('\u{1e}')
            .skip(2)
            .map(|r| {
                serde_json::from_str::<serde_json::Value>(r).unwrap()["data"]["frames"][0].clone()
            })
            .collect();
        assert_eq!(acks.len(), 2);
        for a in &acks {
            assert_eq!(
                (a["frame_type"].as_str(), a["largest"].as_u64()),
                (Some("ack"), Some(8))
            );
            assert_eq!(a["ack_delay"], 2.0);
        }
        assert!(acks[0].get("received_at_us").is_none());
        assert_eq!(acks[1]["received_at_us"], 123_456);
    }
}
