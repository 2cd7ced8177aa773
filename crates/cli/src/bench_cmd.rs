//! `tributary bench`: simulator speed (delivered packets per wall-clock second, one core).

use clap::Args;
use tributary_sim::bench::{cases, measure, Measurement};

/// Arguments of `tributary bench`.
#[derive(Args)]
pub struct BenchArgs {
    /// Timed runs per case (the median and the best are reported).
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
    println!(
        "{:<26} {:>9} {:>10} {:>14} {:>14}",
        "case", "packets", "events", "median pkt/s", "best pkt/s"
    );
    for case in cases() {
        if a.filter
            .as_ref()
            .is_some_and(|f| !case.name.contains(f.as_str()))
        {
            continue;
        }
        let mut ms: Vec<Measurement> = Vec::new();
        for _ in 0..a.runs {
            ms.push(measure(&case)?);
        }
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
