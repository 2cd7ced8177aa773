//! Computes `TRIBUTARY_BUILD`: a digest of the workspace's sources (every crate's `src/` and
//! `Cargo.toml`, and `Cargo.lock`), written into results files so that a sweep is resumed or
//! merged only with results of the same code (`sweep::Header::build`). Two builds of the same
//! sources get the same digest, on any machine; any change to a source file changes it.

use std::collections::hash_map::DefaultHasher;
use std::hash::Hasher;
use std::path::{Path, PathBuf};

fn files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let p = e.path();
        if p.is_dir() {
            files(&p, out);
        } else {
            out.push(p);
        }
    }
}

fn main() {
    let manifest = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").expect("set by cargo"));
    let root = manifest.join("../..");
    let mut inputs = Vec::new();
    let crates = root.join("crates");
    if let Ok(entries) = std::fs::read_dir(&crates) {
        for e in entries.flatten() {
            let c = e.path();
            if c.is_dir() {
                println!("cargo:rerun-if-changed={}", c.join("src").display());
                println!("cargo:rerun-if-changed={}", c.join("Cargo.toml").display());
                files(&c.join("src"), &mut inputs);
                inputs.push(c.join("Cargo.toml"));
            }
        }
    }
    for f in ["Cargo.lock", "Cargo.toml"] {
        println!("cargo:rerun-if-changed={}", root.join(f).display());
        inputs.push(root.join(f));
    }
    // Paths relative to the root, sorted: the digest does not depend on where the tree is.
    let mut rel: Vec<(String, PathBuf)> = inputs
        .into_iter()
        .filter(|p| p.is_file())
        .map(|p| {
            let r = p
                .strip_prefix(&root)
                .unwrap_or(&p)
                .to_string_lossy()
                .into_owned();
            (r, p)
        })
        .collect();
    rel.sort();
    // SipHash with fixed keys: deterministic for a given toolchain, which is all a build id
    // needs (another toolchain is another build).
    let mut h = DefaultHasher::new();
    for (r, p) in &rel {
        let bytes = std::fs::read(p).unwrap_or_default();
        h.write_usize(r.len());
        h.write(r.as_bytes());
        h.write_usize(bytes.len());
        h.write(&bytes);
    }
    let id = if rel.is_empty() {
        "unknown".to_string()
    } else {
        format!("{:016x}", h.finish())
    };
    println!("cargo:rustc-env=TRIBUTARY_BUILD={id}");
}
