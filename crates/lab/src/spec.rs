//! The typed form of a scenario file (after overrides), deserialized with field paths.

use crate::units::{Dur, Fraction, Rate, Size};
use serde::de::{self, Deserializer, MapAccess, Visitor};
use serde::Deserialize;
use std::fmt;
use tributary_proto::cc::CcConfig;
use tributary_proto::sched::SchedulerConfig;
use tributary_sim::{Direction, LossModel, QueueLimit};

fn one() -> u64 {
    1
}

/// A whole scenario without its `variants` and `sweep` sections.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FileSpec {
    pub name: String,
    #[serde(default)]
    pub description: Option<String>,
    pub duration: Dur,
    #[serde(default = "one")]
    pub seed: u64,
    #[serde(default = "one")]
    pub repetitions: u64,
    #[serde(default)]
    pub sample_interval: Option<Dur>,
    #[serde(default)]
    pub header_overhead: Option<Size>,
    pub links: Vec<LinkSpec>,
    #[serde(default)]
    pub paths: Vec<PathSpec>,
    pub flows: Vec<FlowSpec>,
    #[serde(default)]
    pub events: Vec<EventSpec>,
}

/// `[[links]]`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LinkSpec {
    pub name: String,
    #[serde(default)]
    pub rate: Option<Rate>,
    /// A Mahimahi packet-delivery trace file (instead of `rate`).
    #[serde(default)]
    pub trace: Option<String>,
    pub delay: Dur,
    #[serde(default)]
    pub queue: Option<QueueSpec>,
    #[serde(default)]
    pub loss: Option<LossSpec>,
    #[serde(default)]
    pub reorder: Option<Fraction>,
    #[serde(default)]
    pub reorder_delay: Option<Dur>,
    #[serde(default)]
    pub duplicate: Option<Fraction>,
    #[serde(default)]
    pub corrupt: Option<Fraction>,
    #[serde(default)]
    pub up: Option<bool>,
    #[serde(default)]
    pub reverse: Option<ReverseSpec>,
}

/// `[links.reverse]`: overrides for the ACK direction.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReverseSpec {
    pub rate: Option<Rate>,
    pub trace: Option<String>,
    pub delay: Option<Dur>,
    pub queue: Option<QueueSpec>,
    pub loss: Option<LossSpec>,
    pub reorder: Option<Fraction>,
    pub reorder_delay: Option<Dur>,
    pub duplicate: Option<Fraction>,
    pub corrupt: Option<Fraction>,
    pub up: Option<bool>,
}

/// `[[paths]]`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PathSpec {
    pub name: String,
    pub links: Vec<String>,
}

/// `[[flows]]`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FlowSpec {
    pub name: String,
    pub paths: Vec<String>,
    #[serde(default)]
    pub scheme: Option<toml::Value>,
    #[serde(default)]
    pub cc: Option<CcConfig>,
    #[serde(default)]
    pub scheduler: Option<SchedulerConfig>,
    #[serde(default, alias = "recv_buffer")]
    pub buffer: Option<Size>,
    #[serde(default)]
    pub send_buffer: Option<Size>,
    #[serde(default)]
    pub mss: Option<Size>,
    #[serde(default)]
    pub bytes: Option<Size>,
    #[serde(default)]
    pub start: Option<Dur>,
    #[serde(default)]
    pub count: Option<u32>,
    #[serde(default)]
    pub read_rate: Option<Rate>,
    #[serde(default)]
    pub initial_window: Option<u64>,
    #[serde(default)]
    pub initial_rto: Option<Dur>,
    #[serde(default)]
    pub min_rto: Option<Dur>,
    #[serde(default)]
    pub max_rto: Option<Dur>,
    #[serde(default)]
    pub loss_threshold: Option<u64>,
    #[serde(default)]
    pub ack_every: Option<u32>,
    #[serde(default)]
    pub max_ack_delay: Option<Dur>,
    #[serde(default)]
    pub max_ack_ranges: Option<usize>,
    #[serde(default)]
    pub max_paths: Option<usize>,
    #[serde(default)]
    pub metric_block: Option<Size>,
}

/// `[[events]]`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EventSpec {
    pub at: Dur,
    pub link: String,
    #[serde(default)]
    pub direction: Option<Direction>,
    pub set: EventSet,
}

/// `[events.set]`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EventSet {
    #[serde(default)]
    pub rate: Option<Rate>,
    #[serde(default)]
    pub delay: Option<Dur>,
    #[serde(default)]
    pub loss: Option<LossSpec>,
    #[serde(default)]
    pub up: Option<bool>,
}

/// `[[variants]]`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct VariantSpec {
    pub name: String,
    #[serde(default)]
    pub set: toml::Table,
}

/// `[sweep]` or one of `[[sweep]]`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SweepSpec {
    pub parameter: String,
    pub values: Vec<toml::Value>,
    #[serde(default)]
    pub labels: Option<Vec<String>>,
}

/// The `variants` and `sweep` sections.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MetaSpec {
    #[serde(default)]
    pub variants: Vec<VariantSpec>,
    #[serde(default)]
    pub sweep: OneOrMany<SweepSpec>,
}

/// A table or an array of tables.
#[derive(Debug)]
pub struct OneOrMany<T>(pub Vec<T>);

impl<T> Default for OneOrMany<T> {
    fn default() -> Self {
        OneOrMany(Vec::new())
    }
}

impl<'de, T: Deserialize<'de>> Deserialize<'de> for OneOrMany<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<T>(std::marker::PhantomData<T>);
        impl<'de, T: Deserialize<'de>> Visitor<'de> for V<T> {
            type Value = OneOrMany<T>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a table or an array of tables")
            }
            fn visit_map<A: MapAccess<'de>>(self, m: A) -> Result<Self::Value, A::Error> {
                T::deserialize(de::value::MapAccessDeserializer::new(m)).map(|t| OneOrMany(vec![t]))
            }
            fn visit_seq<A: de::SeqAccess<'de>>(self, s: A) -> Result<Self::Value, A::Error> {
                Vec::<T>::deserialize(de::value::SeqAccessDeserializer::new(s)).map(OneOrMany)
            }
        }
        d.deserialize_any(V(std::marker::PhantomData))
    }
}

/// A queue limit: an integer (packets), `"100p"`/`"100 packets"`, or a size (`"64KB"`).
#[derive(Debug, Clone, Copy)]
pub struct QueueSpec(pub QueueLimit);

impl<'de> Deserialize<'de> for QueueSpec {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = QueueSpec;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a queue limit: packets (100 or \"100p\") or bytes (\"64KB\")")
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<QueueSpec, E> {
                match u64::try_from(v) {
                    Ok(n) if n > 0 => Ok(QueueSpec(QueueLimit::Packets(n))),
                    _ => Err(E::custom(format!(
                        "queue must be at least 1 packet, got {v}"
                    ))),
                }
            }
            fn visit_str<E: de::Error>(self, s: &str) -> Result<QueueSpec, E> {
                let t = s.trim();
                let pk = ["packets", "pkts", "p"]
                    .iter()
                    .find_map(|suf| t.strip_suffix(suf));
                if let Some(n) = pk {
                    return match n.trim().parse::<u64>() {
                        Ok(n) if n > 0 => Ok(QueueSpec(QueueLimit::Packets(n))),
                        _ => Err(E::custom(format!(
                            "expected a queue limit like 100, \"100p\" or \"64KB\", got \"{s}\""
                        ))),
                    };
                }
                match crate::units::parse_size(t) {
                    Ok(b) if b > 0 => Ok(QueueSpec(QueueLimit::Bytes(b))),
                    _ => Err(E::custom(format!(
                        "expected a queue limit like 100, \"100p\" or \"64KB\", got \"{s}\""
                    ))),
                }
            }
        }
        d.deserialize_any(V)
    }
}

/// Loss: a fraction (Bernoulli) or a table with a `model`.
#[derive(Debug, Clone, Copy)]
pub struct LossSpec(pub LossModel);

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct LossTable {
    model: String,
    p: Option<Fraction>,
    r: Option<Fraction>,
    loss_good: Option<Fraction>,
    loss_bad: Option<Fraction>,
    mean: Option<Fraction>,
    burst: Option<f64>,
}

impl LossTable {
    fn into_model(self) -> Result<LossModel, String> {
        match self.model.as_str() {
            "none" => Ok(LossModel::None),
            "bernoulli" => {
                let p = self.p.or(self.mean).ok_or("bernoulli needs `p`")?;
                Ok(LossModel::Bernoulli { p: p.0 })
            }
            "gilbert-elliott" => {
                let lg = self.loss_good.map_or(0.0, |f| f.0);
                let lb = self.loss_bad.map_or(1.0, |f| f.0);
                match (self.p, self.r, self.mean, self.burst) {
                    (Some(p), Some(r), None, None) => Ok(LossModel::GilbertElliott {
                        p: p.0,
                        r: r.0,
                        loss_good: lg,
                        loss_bad: lb,
                    }),
                    (None, None, Some(mean), Some(burst)) => {
                        let mean = mean.0;
                        if burst.is_nan() || burst < 1.0 {
                            return Err(format!(
                                "burst = {burst}: mean burst length must be >= 1 packet"
                            ));
                        }
                        if !(lg <= mean && mean < lb) {
                            return Err(format!(
                                "mean = {mean} must lie within [loss_good, loss_bad) = [{lg}, {lb})"
                            ));
                        }
                        // Bad state lasts 1/r packets on average; the stationary loss
                        // (p·lb + r·lg)/(p + r) = mean gives p.
                        let r = 1.0 / burst;
                        let p = r * (mean - lg) / (lb - mean);
                        if p > 1.0 {
                            return Err(format!(
                                "mean = {mean} with burst = {burst} needs P(Good→Bad) = {p} > 1"
                            ));
                        }
                        Ok(LossModel::GilbertElliott {
                            p,
                            r,
                            loss_good: lg,
                            loss_bad: lb,
                        })
                    }
                    _ => Err(
                        "gilbert-elliott needs either `p` and `r`, or `mean` and `burst`".into(),
                    ),
                }
            }
            other => Err(format!(
                "unknown loss model `{other}` (known: none, bernoulli, gilbert-elliott)"
            )),
        }
    }
}

impl<'de> Deserialize<'de> for LossSpec {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = LossSpec;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a loss fraction (0.01 or \"1%\") or a table with a `model`")
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<LossSpec, E> {
                self.visit_f64(v as f64)
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<LossSpec, E> {
                if !(0.0..=1.0).contains(&v) {
                    return Err(E::custom(format!("{v} is not a fraction in [0, 1]")));
                }
                Ok(LossSpec(bernoulli(v)))
            }
            fn visit_str<E: de::Error>(self, s: &str) -> Result<LossSpec, E> {
                crate::units::parse_fraction(s)
                    .map(|p| LossSpec(bernoulli(p)))
                    .map_err(E::custom)
            }
            fn visit_map<A: MapAccess<'de>>(self, m: A) -> Result<LossSpec, A::Error> {
                let t = LossTable::deserialize(de::value::MapAccessDeserializer::new(m))?;
                t.into_model().map(LossSpec).map_err(de::Error::custom)
            }
        }
        d.deserialize_any(V)
    }
}

fn bernoulli(p: f64) -> LossModel {
    if p == 0.0 {
        LossModel::None
    } else {
        LossModel::Bernoulli { p }
    }
}
