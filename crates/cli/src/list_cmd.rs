//! `tributary list`: the registries — every scheme, congestion controller, scheduler and
//! application with its options and defaults (the docs tables are this command's
//! `--markdown` output).

use clap::{Args, ValueEnum};
use tributary_proto::cc::Controllers;
use tributary_proto::registry::{describe, markdown, Family};
use tributary_proto::sched::Schedulers;
use tributary_proto::scheme::Schemes;
use tributary_sim::Applications;

/// A registry.
#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum Which {
    /// Recovery and coding schemes (`scheme = ...`).
    Schemes,
    /// Congestion controllers (`cc = ...`).
    Cc,
    /// Path schedulers (`scheduler = ...`).
    Schedulers,
    /// Simulated applications (`app = ...`).
    Apps,
}

/// Arguments of `tributary list`.
#[derive(Args, Debug)]
pub struct ListArgs {
    /// Which registry (all when omitted).
    pub which: Option<Which>,
    /// Print Markdown tables (as in docs/scenarios.md).
    #[arg(long)]
    pub markdown: bool,
}

fn show<F: Family>(title: &str, md: bool) {
    if md {
        println!("{}", markdown::<F>());
        return;
    }
    println!("{title}:");
    for d in describe::<F>() {
        let alias = if d.aliases.is_empty() {
            String::new()
        } else {
            format!(" (also {})", d.aliases.join(", "))
        };
        println!("  {}{alias}: {}", d.name, d.summary);
        for (k, v, doc) in &d.options {
            println!("      {k} = {v}: {doc}");
        }
    }
    println!();
}

pub fn list(a: ListArgs) -> anyhow::Result<()> {
    let all = a.which.is_none();
    if all || matches!(a.which, Some(Which::Schemes)) {
        show::<Schemes>("schemes", a.markdown);
    }
    if all || matches!(a.which, Some(Which::Cc)) {
        show::<Controllers>("congestion controllers", a.markdown);
    }
    if all || matches!(a.which, Some(Which::Schedulers)) {
        show::<Schedulers>("schedulers", a.markdown);
    }
    if all || matches!(a.which, Some(Which::Apps)) {
        show::<Applications>("applications", a.markdown);
    }
    Ok(())
}
