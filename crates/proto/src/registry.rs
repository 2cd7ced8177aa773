//! Registries: every family of strategies (schemes, congestion controllers, schedulers, and the
//! simulator's applications) is one table of [`Entry`]s — name, one-line summary, options —
//! read by the scenario loader, the command line, `--help` texts and the docs table. Adding a
//! strategy is one module plus one line in its family's table; nothing else lists names.
//!
//! A configuration picks a strategy by value: a [`Choice`] holds the entry and the typed
//! configuration object (the *factory*) its options produced. It is written as a bare name
//! (`"lia"`) or as a table with `name` and options (`{ name = "fmtcp", delta = 0.01 }`), and
//! serialises back the same way, with every option present (defaults filled in), so two
//! choices are equal exactly when they configure the same thing.
//!
//! A strategy outside the crate's tables can still be used programmatically:
//! [`Choice::custom`] wraps any factory (it cannot be named in a scenario file).

use serde_json::{Map, Value};
use std::fmt;
use std::sync::Arc;

/// Options of a strategy: the table it was written with, without `name`.
pub type Options = Map<String, Value>;

/// One documented option of an entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OptionDoc {
    /// Option key.
    pub key: &'static str,
    /// What it does.
    pub doc: &'static str,
}

/// One registered strategy.
pub struct Entry<F: ?Sized + 'static> {
    /// Name used in scenario files and on the command line.
    pub name: &'static str,
    /// Other accepted spellings.
    pub aliases: &'static [&'static str],
    /// One-line description (the docs table and `--help` show it).
    pub summary: &'static str,
    /// The options it takes (defaults come from the factory built without options).
    pub options: &'static [OptionDoc],
    /// Builds the factory from options; the error names the offending option.
    pub make: fn(Options) -> Result<Arc<F>, String>,
}

impl<F: ?Sized> fmt::Debug for Entry<F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Entry").field("name", &self.name).finish()
    }
}

impl<F: ?Sized> Entry<F> {
    /// True if `name` is this entry's name or one of its aliases.
    pub fn answers_to(&self, name: &str) -> bool {
        self.name == name || self.aliases.contains(&name)
    }
}

/// What every factory can tell about itself.
pub trait Factory: Send + Sync + fmt::Debug {
    /// The options this factory was built with, every option present.
    fn options(&self) -> Options;
}

/// A family of strategies and its table.
pub trait Family: 'static {
    /// The configuration objects the entries build.
    type Factory: ?Sized + Factory;
    /// What a member is called in messages ("scheme", "congestion controller", ...).
    const KIND: &'static str;
    /// The family's table.
    fn entries() -> &'static [Entry<Self::Factory>];
    /// The name used when a configuration does not choose.
    fn default_name() -> &'static str;
}

/// Serialises a typed configuration into [`Options`] (for [`Factory::options`]).
pub fn options_of<T: serde::Serialize>(value: &T) -> Options {
    match serde_json::to_value(value) {
        Ok(Value::Object(m)) => m,
        _ => Options::new(),
    }
}

/// Deserialises a typed configuration from options; the message names the option.
pub fn from_options<T: serde::de::DeserializeOwned>(options: Options) -> Result<T, String> {
    serde_json::from_value(Value::Object(options)).map_err(|e| e.to_string())
}

/// Checks that a strategy without options got none.
pub fn no_options(options: &Options) -> Result<(), String> {
    match options.keys().next() {
        None => Ok(()),
        Some(k) => Err(format!("takes no options, got `{k}`")),
    }
}

/// A chosen strategy: its registry entry and its configured factory.
pub struct Choice<F: Family> {
    name: &'static str,
    factory: Arc<F::Factory>,
}

impl<F: Family> Choice<F> {
    /// The entry registered under `name` (or an alias).
    pub fn entry(name: &str) -> Option<&'static Entry<F::Factory>> {
        F::entries().iter().find(|e| e.answers_to(name))
    }

    /// Every registered name, in table order.
    pub fn names() -> Vec<&'static str> {
        F::entries().iter().map(|e| e.name).collect()
    }

    /// The entry `name` built with `options`.
    pub fn with_options(name: &str, options: Options) -> Result<Self, String> {
        let Some(e) = Self::entry(name) else {
            return Err(format!(
                "unknown {} `{name}` (known: {})",
                F::KIND,
                Self::names().join(", ")
            ));
        };
        let factory = (e.make)(options).map_err(|m| format!("{} `{}`: {m}", F::KIND, e.name))?;
        Ok(Choice {
            name: e.name,
            factory,
        })
    }

    /// The entry `name` configured by a typed configuration (serialised into its options, so
    /// it goes through the same checks as a scenario file).
    pub fn of<T: serde::Serialize>(name: &str, config: &T) -> Result<Self, String> {
        Self::with_options(name, options_of(config))
    }

    /// The entry `name` with its default options.
    pub fn named(name: &str) -> Result<Self, String> {
        Self::with_options(name, Options::new())
    }

    /// A bare name, or a table with `name` and options.
    pub fn parse(value: Value) -> Result<Self, String> {
        match value {
            Value::String(s) => Self::named(&s),
            Value::Object(mut m) => {
                let name = match m.remove("name") {
                    Some(Value::String(s)) => s,
                    Some(other) => {
                        return Err(format!("{} `name` must be a string, got {other}", F::KIND))
                    }
                    None => {
                        return Err(format!(
                            "a {} table needs a `name` (known: {})",
                            F::KIND,
                            Self::names().join(", ")
                        ))
                    }
                };
                Self::with_options(&name, m)
            }
            other => Err(format!(
                "expected a {} name or a table with `name`, got {other}",
                F::KIND
            )),
        }
    }

    /// A factory that is not in the table (usable programmatically, not by name in files).
    pub fn custom(name: &'static str, factory: Arc<F::Factory>) -> Self {
        Choice { name, factory }
    }

    /// The registered name.
    pub fn name(&self) -> &'static str {
        self.name
    }

    /// The configured factory.
    pub fn factory(&self) -> &F::Factory {
        &self.factory
    }

    /// Options with defaults filled in.
    pub fn options(&self) -> Options {
        self.factory.options()
    }
}

impl<F: Family> Clone for Choice<F> {
    fn clone(&self) -> Self {
        Choice {
            name: self.name,
            factory: Arc::clone(&self.factory),
        }
    }
}

impl<F: Family> Default for Choice<F> {
    fn default() -> Self {
        Self::named(F::default_name()).unwrap_or_else(|e| panic!("default {}: {e}", F::KIND))
    }
}

impl<F: Family> PartialEq for Choice<F> {
    fn eq(&self, other: &Self) -> bool {
        self.name == other.name && self.options() == other.options()
    }
}

impl<F: Family> fmt::Debug for Choice<F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let o = self.options();
        if o.is_empty() {
            write!(f, "{}", self.name)
        } else {
            write!(f, "{} {}", self.name, Value::Object(o))
        }
    }
}

impl<F: Family> fmt::Display for Choice<F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self, f)
    }
}

impl<F: Family> serde::Serialize for Choice<F> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let o = self.options();
        if o.is_empty() {
            return s.serialize_str(self.name);
        }
        let mut m = Map::with_capacity(o.len() + 1);
        m.insert("name".into(), Value::String(self.name.into()));
        m.extend(o);
        Value::Object(m).serialize(s)
    }
}

impl<'de, F: Family> serde::Deserialize<'de> for Choice<F> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let v = Value::deserialize(d)?;
        Self::parse(v).map_err(serde::de::Error::custom)
    }
}

/// One row of a family's documentation table.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Described {
    /// Name.
    pub name: &'static str,
    /// Aliases.
    pub aliases: Vec<&'static str>,
    /// Summary.
    pub summary: &'static str,
    /// (option, default value, meaning).
    pub options: Vec<(&'static str, String, &'static str)>,
}

/// Every entry of a family with its options' default values.
pub fn describe<F: Family>() -> Vec<Described> {
    F::entries()
        .iter()
        .map(|e| {
            let defaults = (e.make)(Options::new())
                .map(|f| f.options())
                .unwrap_or_default();
            Described {
                name: e.name,
                aliases: e.aliases.to_vec(),
                summary: e.summary,
                options: e
                    .options
                    .iter()
                    .map(|o| {
                        let d = defaults
                            .get(o.key)
                            .map_or_else(String::new, |v| v.to_string());
                        (o.key, d, o.doc)
                    })
                    .collect(),
            }
        })
        .collect()
}

/// A family's table in Markdown (`| name | what | options (default) |`), as the docs show it.
pub fn markdown<F: Family>() -> String {
    let mut s = String::from("| name | what | options (default) |\n|---|---|---|\n");
    for d in describe::<F>() {
        let mut name = format!("`{}`", d.name);
        for a in &d.aliases {
            name.push_str(&format!(" (`{a}`)"));
        }
        let opts = if d.options.is_empty() {
            "—".to_string()
        } else {
            d.options
                .iter()
                .map(|(k, v, doc)| format!("`{k}` ({v}): {doc}"))
                .collect::<Vec<_>>()
                .join("; ")
        };
        s.push_str(&format!("| {name} | {} | {opts} |\n", d.summary));
    }
    s
}
