//! Command-line values that pick a registered strategy (`--scheme`, `--cc`, `--scheduler`):
//! a name, or a TOML inline table with `name` and options, exactly as in scenario files.
//! The accepted names come from the registries, never from a list here.

use tributary_proto::registry::{describe, Choice, Family};

/// Parses `NAME`, `{ name = "NAME", option = value, ... }` or the same without braces.
pub fn parse<F: Family>(s: &str) -> Result<Choice<F>, String> {
    let t = s.trim();
    let t = if t.starts_with('{') {
        t.to_string()
    } else if t.contains('=') {
        format!("{{ {t} }}")
    } else {
        return Choice::named(t);
    };
    let doc: toml::Table = format!("v = {t}")
        .parse()
        .map_err(|e: toml::de::Error| format!("not a TOML inline table: {}", e.message()))?;
    let v = doc
        .get("v")
        .cloned()
        .unwrap_or(toml::Value::Table(toml::Table::new()));
    let json = serde_json::to_value(v).map_err(|e| e.to_string())?;
    Choice::parse(json)
}

/// Help text listing a family's names and summaries.
pub fn help<F: Family>(what: &str) -> String {
    let mut s = format!(
        "{what}: a name or an inline table like '{{ name = \"NAME\", option = value }}'. Known:"
    );
    for d in describe::<F>() {
        s.push_str(&format!("\n  {:<12} {}", d.name, d.summary));
    }
    s
}
