//! Overrides on the TOML tree: `"flows.f1.scheme" = "n-tcp"`, applied before typed parsing.
//!
//! A dotted path walks tables by key and arrays of tables by the entries' `name` (or by a
//! numeric index). The value then *merges* into what is there: a table merges key by key into
//! an existing table (so `"links.cell" = { delay = "50ms" }` changes only the delay), except a
//! table carrying a `model` or `name` tag, which replaces (a loss model or a scheme is one
//! value); anything else replaces. Missing keys are created, so a parameter the base file
//! leaves at its default can be overridden; a key the schema does not know is then rejected
//! by the typed parse, naming it.

use toml::Value;

/// Applies `value` at the dotted `path` inside `root`.
pub fn apply(root: &mut toml::Table, path: &str, value: Value) -> Result<(), String> {
    let segs: Vec<&str> = path.split('.').collect();
    if segs.iter().any(|s| s.trim().is_empty()) {
        return Err(format!("`{path}` is not a dotted parameter path"));
    }
    let mut cur = root;
    let mut walked = String::new();
    for (i, seg) in segs.iter().enumerate() {
        let last = i + 1 == segs.len();
        let here = if walked.is_empty() {
            seg.to_string()
        } else {
            format!("{walked}.{seg}")
        };
        // Arrays of tables are entered by name.
        let next: &mut Value = match cur.get(*seg) {
            Some(_) => cur.get_mut(*seg).expect("present"),
            None if last => {
                cur.insert(seg.to_string(), value);
                return Ok(());
            }
            None => cur
                .entry(seg.to_string())
                .or_insert_with(|| Value::Table(Default::default())),
        };
        if last {
            return merge(next, value, &here);
        }
        let (nseg, rest_start) = (segs[i + 1], i + 1);
        match next {
            Value::Table(t) => {
                cur = t;
                walked = here;
            }
            Value::Array(arr) => {
                let elem = find_entry(arr, nseg, &here)?;
                let here2 = format!("{here}.{nseg}");
                if rest_start + 1 == segs.len() {
                    return merge(elem, value, &here2);
                }
                match elem {
                    Value::Table(t) => {
                        // Continue after the entry name.
                        return apply(t, &segs[rest_start + 1..].join("."), value)
                            .map_err(|e| format!("{here2}: {e}"));
                    }
                    _ => return Err(format!("`{here2}` is not a table")),
                }
            }
            other => {
                return Err(format!(
                    "`{here}` is a {}, it has no `{nseg}`",
                    other.type_str()
                ))
            }
        }
    }
    unreachable!("the loop returns at the last segment")
}

/// The entry of an array of tables named `name` (or at index `name`).
fn find_entry<'a>(arr: &'a mut [Value], name: &str, at: &str) -> Result<&'a mut Value, String> {
    let pos = arr
        .iter()
        .position(|v| v.get("name").and_then(Value::as_str) == Some(name))
        .or_else(|| name.parse::<usize>().ok().filter(|&i| i < arr.len()));
    match pos {
        Some(i) => Ok(&mut arr[i]),
        None => {
            let known: Vec<&str> = arr
                .iter()
                .filter_map(|v| v.get("name").and_then(Value::as_str))
                .collect();
            Err(format!(
                "no `{at}` entry named `{name}` (known: {})",
                known.join(", ")
            ))
        }
    }
}

/// Merges `src` into `dst` (see the module documentation).
pub fn merge(dst: &mut Value, src: Value, at: &str) -> Result<(), String> {
    match (dst, src) {
        (Value::Table(d), Value::Table(s))
            if !s.contains_key("model") && !s.contains_key("name") =>
        {
            for (k, v) in s {
                match d.get_mut(&k) {
                    Some(dv) => merge(dv, v, &format!("{at}.{k}"))?,
                    None => {
                        d.insert(k, v);
                    }
                }
            }
            Ok(())
        }
        (Value::Array(d), Value::Table(s))
            if d.iter().all(Value::is_table) && !s.contains_key("name") =>
        {
            for (k, v) in s {
                let e = find_entry(d, &k, at)?;
                merge(e, v, &format!("{at}.{k}"))?;
            }
            Ok(())
        }
        (d, s) => {
            *d = s;
            Ok(())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tree() -> toml::Table {
        r#"
        name = "t"
        [[links]]
        name = "wifi"
        rate = "20Mbps"
        loss = { model = "gilbert-elliott", mean = 0.03, burst = 2 }
        [[links]]
        name = "cell"
        rate = "10Mbps"
        [[flows]]
        name = "f1"
        scheme = "mptcp"
        "#
        .parse()
        .unwrap()
    }

    #[test]
    fn sets_by_entry_name_and_index() {
        let mut t = tree();
        apply(&mut t, "flows.f1.scheme", "n-tcp".into()).unwrap();
        apply(&mut t, "links.1.loss", Value::Float(0.02)).unwrap();
        apply(&mut t, "links.cell.delay", "5ms".into()).unwrap();
        assert_eq!(t["flows"][0]["scheme"].as_str(), Some("n-tcp"));
        assert_eq!(t["links"][1]["loss"].as_float(), Some(0.02));
        assert_eq!(t["links"][1]["delay"].as_str(), Some("5ms"));
    }

    #[test]
    fn tables_merge_but_tagged_tables_replace() {
        let mut t = tree();
        let v: toml::Table = "x = { delay = \"7ms\", rate = \"1Mbps\" }".parse().unwrap();
        apply(&mut t, "links.cell", v["x"].clone()).unwrap();
        assert_eq!(t["links"][1]["name"].as_str(), Some("cell"));
        assert_eq!(t["links"][1]["delay"].as_str(), Some("7ms"));
        assert_eq!(t["links"][1]["rate"].as_str(), Some("1Mbps"));
        let v: toml::Table = "x = { model = \"gilbert-elliott\", p = 0.1, r = 0.5 }"
            .parse()
            .unwrap();
        apply(&mut t, "links.wifi.loss", v["x"].clone()).unwrap();
        assert!(t["links"][0]["loss"].get("mean").is_none());
        // Nested tables address arrays of tables by name too.
        let v: toml::Table = "flows = { f1 = { scheme = \"tcp\" } }".parse().unwrap();
        let mut root = Value::Table(t);
        merge(&mut root, Value::Table(v), "").unwrap();
        assert_eq!(root["flows"][0]["scheme"].as_str(), Some("tcp"));
    }

    #[test]
    fn errors_name_the_missing_entry() {
        let mut t = tree();
        let e = apply(&mut t, "links.lte.loss", Value::Float(0.1)).unwrap_err();
        assert_eq!(e, "no `links` entry named `lte` (known: wifi, cell)");
        let e = apply(&mut t, "name.x", Value::Float(0.1)).unwrap_err();
        assert_eq!(e, "`name` is a string, it has no `x`");
        assert!(apply(&mut t, "links..loss", Value::Float(0.1)).is_err());
    }
}
