//! Human units in scenario files and application options: rates, sizes, durations and
//! fractions.
//!
//! - Rates are decimal (SI): `"10Mbps"`, `"1.5Gbps"`, `"800kbps"`, `"9600bps"`; a bare number
//!   is bit/s.
//! - Sizes: `KB`/`MB`/`GB` are decimal (1000, 10⁶, 10⁹ bytes), `KiB`/`MiB`/`GiB` binary (1024,
//!   2²⁰, 2³⁰); `B` or a bare integer is bytes. The papers' "64 KB" receive buffers mean
//!   64·1024 bytes, so the scenario files reproducing them write `"64KiB"`.
//! - Durations: `"100ms"`, `"60s"`, `"2min"`, `"50us"`, `"10ns"` (fractions allowed).
//! - Fractions (probabilities): a number in [0, 1] such as `0.01`, or a percentage `"1%"`.
//!
//! Each type deserializes from TOML strings or numbers; errors quote the input and an example.

use serde::de::{self, Deserializer, Visitor};
use std::fmt;
use tributary_proto::time::Duration;

/// Splits `"12.5 Mbps"` into (12.5, "Mbps").
fn split_number(s: &str) -> Option<(f64, &str)> {
    let t = s.trim();
    let end = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.' || c == '_'))
        .unwrap_or(t.len());
    let (num, unit) = t.split_at(end);
    let num: String = num.chars().filter(|&c| c != '_').collect();
    if num.is_empty() {
        return None;
    }
    let v: f64 = num.parse().ok()?;
    v.is_finite().then_some((v, unit.trim()))
}

/// Parses a rate in bit/s: `"10Mbps"`, `"1.5Gbps"`, `"800kbps"`, `"64000"`.
pub fn parse_rate(s: &str) -> Result<u64, String> {
    let bad = || format!("expected a rate like \"10Mbps\", got \"{s}\"");
    let (v, unit) = split_number(s).ok_or_else(bad)?;
    let scale = match unit {
        "" | "bps" | "bit/s" => 1.0,
        "kbps" | "Kbps" | "kbit/s" => 1e3,
        "Mbps" | "mbps" | "Mbit/s" => 1e6,
        "Gbps" | "gbps" | "Gbit/s" => 1e9,
        _ => return Err(bad()),
    };
    let bps = (v * scale).round();
    if !(1.0..=1e15).contains(&bps) {
        return Err(format!("rate \"{s}\" is out of range (1bps..1000Tbps)"));
    }
    Ok(bps as u64)
}

/// Parses a size in bytes: `"64KB"` (64 000), `"64KiB"` (65 536), `"2MB"`, `"1500B"`, `"1500"`.
pub fn parse_size(s: &str) -> Result<u64, String> {
    let bad = || format!("expected a size like \"64KB\" or \"64KiB\", got \"{s}\"");
    let (v, unit) = split_number(s).ok_or_else(bad)?;
    let scale = match unit {
        "" | "B" => 1.0,
        "KB" | "kB" => 1e3,
        "MB" => 1e6,
        "GB" => 1e9,
        "KiB" => 1024.0,
        "MiB" => 1024.0 * 1024.0,
        "GiB" => 1024.0 * 1024.0 * 1024.0,
        _ => return Err(bad()),
    };
    let b = v * scale;
    if b.fract() != 0.0 || b > 1e18 {
        return Err(format!("size \"{s}\" is not a whole number of bytes"));
    }
    Ok(b as u64)
}

/// Parses a duration: `"100ms"`, `"1.5s"`, `"2min"`.
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    s.parse::<Duration>()
        .map_err(|_| format!("expected a duration like \"100ms\" or \"60s\", got \"{s}\""))
}

/// Parses a fraction in [0, 1]: `"1%"` or `"0.01"`.
pub fn parse_fraction(s: &str) -> Result<f64, String> {
    let bad = || format!("expected a fraction like 0.01 or \"1%\", got \"{s}\"");
    let t = s.trim();
    let v = match t.strip_suffix('%') {
        Some(p) => p.trim().parse::<f64>().map_err(|_| bad())? / 100.0,
        None => t.parse::<f64>().map_err(|_| bad())?,
    };
    check_fraction(v)
}

fn check_fraction(v: f64) -> Result<f64, String> {
    if (0.0..=1.0).contains(&v) {
        Ok(v)
    } else {
        Err(format!("{v} is not a fraction in [0, 1]"))
    }
}

/// A rate in bit/s.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rate(pub u64);

/// A size in bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Size(pub u64);

/// A duration.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Dur(pub Duration);

/// A fraction in [0, 1].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Fraction(pub f64);

/// Visitor accepting a string (parsed by `parse`) or, if `from_int`/`from_float` are given,
/// a number.
struct UnitVisitor<T> {
    expecting: &'static str,
    parse: fn(&str) -> Result<T, String>,
    from_int: Option<fn(i64) -> Result<T, String>>,
    from_float: Option<fn(f64) -> Result<T, String>>,
}

impl<T> Visitor<'_> for UnitVisitor<T> {
    type Value = T;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str(self.expecting)
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<T, E> {
        (self.parse)(v).map_err(E::custom)
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<T, E> {
        match self.from_int {
            Some(f) => f(v).map_err(E::custom),
            None => Err(E::custom(format!(
                "expected {}, got the bare number {v} (add a unit)",
                self.expecting
            ))),
        }
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<T, E> {
        self.visit_i64(i64::try_from(v).map_err(|_| E::custom("number too large"))?)
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<T, E> {
        match (self.from_float, self.from_int) {
            (Some(f), _) => f(v).map_err(E::custom),
            (None, Some(fi)) if v.fract() == 0.0 && v.abs() < 9e15 => {
                fi(v as i64).map_err(E::custom)
            }
            _ => Err(E::custom(format!("expected {}, got {v}", self.expecting))),
        }
    }
}

fn non_negative(v: i64) -> Result<u64, String> {
    u64::try_from(v).map_err(|_| format!("{v} is negative"))
}

impl serde::Serialize for Rate {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_u64(self.0)
    }
}

impl serde::Serialize for Size {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_u64(self.0)
    }
}

impl serde::Serialize for Dur {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.0.serialize(s)
    }
}

impl serde::Serialize for Fraction {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_f64(self.0)
    }
}

impl<'de> serde::Deserialize<'de> for Rate {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(UnitVisitor {
            expecting: "a rate like \"10Mbps\"",
            parse: |s| parse_rate(s).map(Rate),
            from_int: Some(|v| match non_negative(v)? {
                0 => Err("rate must be positive".into()),
                v => Ok(Rate(v)),
            }),
            from_float: None,
        })
    }
}

impl<'de> serde::Deserialize<'de> for Size {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(UnitVisitor {
            expecting: "a size like \"64KB\"",
            parse: |s| parse_size(s).map(Size),
            from_int: Some(|v| non_negative(v).map(Size)),
            from_float: None,
        })
    }
}

impl<'de> serde::Deserialize<'de> for Dur {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(UnitVisitor {
            expecting: "a duration like \"100ms\"",
            parse: |s| parse_duration(s).map(Dur),
            from_int: None,
            from_float: None,
        })
    }
}

impl<'de> serde::Deserialize<'de> for Fraction {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(UnitVisitor {
            expecting: "a fraction like 0.01 or \"1%\"",
            parse: |s| parse_fraction(s).map(Fraction),
            from_int: Some(|v| check_fraction(v as f64).map(Fraction)),
            from_float: Some(|v| check_fraction(v).map(Fraction)),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates() {
        assert_eq!(parse_rate("10Mbps"), Ok(10_000_000));
        assert_eq!(parse_rate("1.5Gbps"), Ok(1_500_000_000));
        assert_eq!(parse_rate("800kbps"), Ok(800_000));
        assert_eq!(parse_rate("9600bps"), Ok(9600));
        assert_eq!(parse_rate("2 Mbit/s"), Ok(2_000_000));
        assert_eq!(parse_rate("64000"), Ok(64_000));
        for bad in ["", "Mbps", "10 parsecs", "-1Mbps", "0bps", "1e3Mbps"] {
            assert!(parse_rate(bad).is_err(), "{bad} accepted");
        }
        assert_eq!(
            parse_rate("10 parsecs").unwrap_err(),
            "expected a rate like \"10Mbps\", got \"10 parsecs\""
        );
    }

    #[test]
    fn sizes() {
        assert_eq!(parse_size("64KB"), Ok(64_000));
        assert_eq!(parse_size("64kB"), Ok(64_000));
        assert_eq!(parse_size("64KiB"), Ok(65_536));
        assert_eq!(parse_size("2MB"), Ok(2_000_000));
        assert_eq!(parse_size("2MiB"), Ok(2 << 20));
        assert_eq!(parse_size("1GiB"), Ok(1 << 30));
        assert_eq!(parse_size("1.5KB"), Ok(1500));
        assert_eq!(parse_size("1500B"), Ok(1500));
        assert_eq!(parse_size("1_500"), Ok(1500));
        assert!(parse_size("1.5B").is_err());
        assert_eq!(
            parse_size("64 parsecs").unwrap_err(),
            "expected a size like \"64KB\" or \"64KiB\", got \"64 parsecs\""
        );
    }

    #[test]
    fn durations_and_fractions() {
        assert_eq!(parse_duration("100ms"), Ok(Duration::from_millis(100)));
        assert_eq!(parse_duration("60s"), Ok(Duration::from_secs(60)));
        assert_eq!(parse_duration("1.5s"), Ok(Duration::from_millis(1500)));
        assert!(parse_duration("100").is_err());
        assert_eq!(parse_fraction("1%"), Ok(0.01));
        assert_eq!(parse_fraction("0.5 %"), Ok(0.005));
        assert_eq!(parse_fraction("0.25"), Ok(0.25));
        assert!(parse_fraction("150%").is_err());
        assert!(parse_fraction("lots").is_err());
    }

    #[test]
    fn numbers_and_round_trips() {
        #[derive(serde::Deserialize, serde::Serialize, Debug, PartialEq)]
        struct T {
            r: Rate,
            s: Size,
            f: Fraction,
            g: Fraction,
            d: Dur,
        }
        let v = serde_json::json!({"r": 1000, "s": 1500, "f": 0.5, "g": 0, "d": "1.5s"});
        let t: T = serde_json::from_value(v).unwrap();
        assert_eq!(
            (t.r, t.s, t.f, t.g, t.d),
            (
                Rate(1000),
                Size(1500),
                Fraction(0.5),
                Fraction(0.0),
                Dur(Duration::from_millis(1500))
            )
        );
        // What a value serialises to parses back to the same value.
        let back: T = serde_json::from_value(serde_json::to_value(&t).unwrap()).unwrap();
        assert_eq!(back, t);
        let e = serde_json::from_value::<T>(
            serde_json::json!({"r": 1000, "s": 1500, "f": 2.0, "g": 0, "d": "1s"}),
        )
        .err()
        .unwrap();
        assert!(e.to_string().contains("not a fraction"), "{e}");
    }
}
