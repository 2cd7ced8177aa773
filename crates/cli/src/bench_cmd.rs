//! `tributary bench`: simulator speed (delivered packets per wall-clock second, one core).

use clap::Args;
use tributary_sim::bench::{cases, measure, Measurement};

/// Arguments of `tributary bench`.
#[derive(Args)]
pub struct BenchArgs {
    /// Timed runs per case (the median and the best are reported). The cases run in rounds,
    /// one run of each per round, so that a slow spell of the machine does not fall on one
    /// case only.
    #[arg(long, default_value_t = 5)]
    pub runs: usize,
    /// Only cases whose name contains this.
    #[arg(long)]
    pub filter: Option<String>,
    /// Also write the measurements as JSON to this file.
    #[arg(long)]
    pub json: Option<std::path::PathBuf>,
}

pub fn bench(a: BenchArgs) -> anyhow::Result<()> {
    anyhow::ensure!(a.runs >= 1, "--runs must be at least 1");
    let mut out = Vec::new();
    let chosen: Vec<_> = cases()
        .into_iter()
        .filter(|c| {
            a.filter
                .as_ref()
                .is_none_or(|f| c.name.contains(f.as_str()))
        })
        .collect();
    anyhow::ensure!(
        !chosen.is_empty(),
        "no benchmark case matches --filter {:?}",
        a.filter.as_deref().unwrap_or_default()
    );
    println!(
        "{:<26} {:>9} {:>10} {:>14} {:>14}",
        "case", "packets", "events", "median pkt/s", "best pkt/s"
    );
    // Rounds, each running every chosen case once: on a shared or throttled machine a slow
    // spell then slows runs of every case rather than all runs of one, so the cases' medians
    // stay comparable with each other.
    let mut ms: Vec<Vec<Measurement>> = vec![Vec::with_capacity(a.runs); chosen.len()];
    for _ in 0..a.runs {
        for (case, m) in chosen.iter().zip(&mut ms) {
            m.push(measure(case)?);
        }
    }
    for (case, ms) in chosen.iter().zip(&ms) {
        let mut rates: Vec<f64> = ms.iter().map(Measurement::packets_per_second).collect();
        rates.sort_by(f64::total_cmp);
        let median = rates[rates.len() / 2];
        let best = rates[rates.len() - 1];
        println!(
            "{:<26} {:>9} {:>10} {:>14.0} {:>14.0}",
            case.name, ms[0].packets, ms[0].events, median, best
        );
        out.push(serde_json::json!({
            "case": case.name,
            "description": case.description,
            "packets": ms[0].packets,
            "events": ms[0].events,
            "median_packets_per_second": median,
            "best_packets_per_second": best,
            "runs": ms,
        }));
    }
    if let Some(p) = a.json {
        std::fs::write(&p, serde_json::to_string_pretty(&out)?)
            .map_err(|e| anyhow::anyhow!("cannot write {}: {e}", p.display()))?;
    }
    Ok(())
}
