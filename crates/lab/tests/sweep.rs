//! Sweeps at scale: results streamed to a JSON Lines file, resumed after an interruption,
//! run as shards and merged — each must give the same bytes (JSON and CSV) as one
//! uninterrupted run — and the errors that protect results files.

use std::path::{Path, PathBuf};
use std::sync::Mutex;
use tributary_lab::sweep::{
    self, merge, MergeError, Notice, Observer, Outcome, Results, ResultsError, Shard, SweepError,
    SweepOptions, LARGE_SWEEP_RUNS,
};
use tributary_lab::{run, Report, RunOptions, Scenario};

/// Three variants (one coded) × two sweep points × three repetitions = 18 short runs, with
/// copies of a flow (aggregate rows), a finite flow (completion times), time series and coding
/// counters, so the records exercise every part of the report.
const TINY: &str = r#"
name = "tiny"
duration = "3s"
seed = 3
repetitions = 3
sample_interval = "500ms"

[[links]]
name = "a"
rate = "4Mbps"
delay = "10ms"
loss = 0.01

[[links]]
name = "b"
rate = "2Mbps"
delay = "30ms"

[[flows]]
name = "f"
paths = ["a", "b"]
bytes = "150KB"
buffer = "256KiB"

[[flows]]
name = "bg"
paths = ["a"]
scheme = "tcp"
count = 2

[[variants]]
name = "mptcp"

[[variants]]
name = "fmtcp"
set = { "flows.f.scheme" = "fmtcp" }

[[variants]]
name = "n-tcp"
set = { "flows.f.scheme" = "n-tcp" }

[sweep]
parameter = "links.b.loss"
values = [0.0, "2%"]
"#;

fn dir(test: &str) -> PathBuf {
    let d = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join("sweep")
        .join(test);
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn tiny() -> Scenario {
    Scenario::parse(TINY, "tiny").unwrap()
}

/// Records every notice and counts progress.
#[derive(Default)]
struct Record {
    notices: Mutex<Vec<Notice>>,
    started: Mutex<Option<usize>>,
    finished: Mutex<usize>,
}

impl Observer for Record {
    fn notice(&self, n: &Notice) {
        self.notices.lock().unwrap().push(n.clone());
    }
    fn start(&self, runs: usize) {
        *self.started.lock().unwrap() = Some(runs);
    }
    fn progress(&self) {
        *self.finished.lock().unwrap() += 1;
    }
}

fn opts(jobs: usize, shard: Option<Shard>, results: Results) -> SweepOptions {
    SweepOptions {
        run: RunOptions {
            jobs: Some(jobs),
            ..RunOptions::default()
        },
        shard,
        results,
    }
}

fn complete(o: Outcome) -> Report {
    match o {
        Outcome::Complete(r) => r,
        Outcome::Shard { .. } => panic!("expected a complete report"),
    }
}

fn lines(p: &Path) -> Vec<String> {
    std::fs::read_to_string(p)
        .unwrap()
        .lines()
        .map(String::from)
        .collect()
}

fn shard(i: u64, n: u64) -> Shard {
    Shard { index: i, count: n }
}

#[test]
fn streamed_resumed_and_sharded_sweeps_give_the_bytes_of_one_run() {
    let s = tiny();
    let d = dir("identical");
    let whole = run::run(
        &s,
        &RunOptions {
            jobs: Some(2),
            ..RunOptions::default()
        },
        &|| {},
    )
    .unwrap();
    let (json, csv) = (whole.to_json(), whole.to_csv());

    // Streamed: one header line and one line per run; the report is the same.
    let full = d.join("full.jsonl");
    let obs = Record::default();
    let streamed = complete(
        sweep::sweep(
            &s,
            &opts(
                2,
                None,
                Results::Create {
                    path: full.clone(),
                    force: false,
                },
            ),
            &obs,
        )
        .unwrap(),
    );
    assert_eq!(streamed.to_json(), json);
    assert_eq!(streamed.to_csv(), csv);
    assert_eq!(*obs.started.lock().unwrap(), Some(18));
    assert_eq!(*obs.finished.lock().unwrap(), 18);
    let l = lines(&full);
    assert_eq!(l.len(), 19);
    assert!(l.iter().any(|l| l.contains(r#""scheme":{"name":"fmtcp""#)));
    assert!(l[0].starts_with(
        r#"{"format":"tributary-results","format_version":1,"scenario":"tiny","fingerprint":""#
    ));
    let c = sweep::read(&full).unwrap();
    assert_eq!(c.records.len(), 18);
    assert!(c.notices.is_empty());

    // An interruption: four runs kept, the fifth cut off mid-line. Resuming runs the other
    // fourteen (the cut one again) and reports the same bytes; the file ends complete.
    let cut = d.join("cut.jsonl");
    let mut text = l[..5].join("\n");
    text.push('\n');
    text.push_str(&l[5][..l[5].len() / 2]);
    std::fs::write(&cut, &text).unwrap();
    let obs = Record::default();
    let resumed = complete(
        sweep::sweep(
            &s,
            &opts(1, None, Results::Resume { path: cut.clone() }),
            &obs,
        )
        .unwrap(),
    );
    assert_eq!(resumed.to_json(), json);
    assert_eq!(resumed.to_csv(), csv);
    assert_eq!(*obs.started.lock().unwrap(), Some(14));
    let notices = obs.notices.lock().unwrap().clone();
    assert!(
        notices
            .iter()
            .any(|n| matches!(n, Notice::TruncatedTail { line: 6, .. })),
        "{notices:?}"
    );
    assert!(
        notices.iter().any(|n| matches!(
            n,
            Notice::Resumed {
                found: 4,
                todo: 14,
                ..
            }
        )),
        "{notices:?}"
    );
    let c = sweep::read(&cut).unwrap();
    assert_eq!(c.records.len(), 18);
    assert!(
        c.notices.is_empty(),
        "the cut line was removed: {:?}",
        c.notices
    );
    // Resuming a complete file runs nothing and reports the same.
    let obs = Record::default();
    let again = complete(
        sweep::sweep(
            &s,
            &opts(2, None, Results::Resume { path: cut.clone() }),
            &obs,
        )
        .unwrap(),
    );
    assert_eq!(again.to_json(), json);
    assert_eq!(*obs.started.lock().unwrap(), Some(0));

    // Shards, with different thread counts, merged in any order.
    for n in [1u64, 3, 5] {
        let mut files = Vec::new();
        for i in 0..n {
            let p = d.join(format!("s{i}of{n}.jsonl"));
            let o = sweep::sweep(
                &s,
                &opts(
                    1 + i as usize % 2,
                    Some(shard(i, n)),
                    Results::Create {
                        path: p.clone(),
                        force: false,
                    },
                ),
                &sweep::Silent,
            )
            .unwrap();
            let expect = (0..18).filter(|k| k % n as usize == i as usize).count();
            assert!(matches!(o, Outcome::Shard { runs, .. } if runs == expect));
            assert_eq!(lines(&p).len(), 1 + expect);
            files.push(p);
        }
        files.reverse();
        let (merged, notices) = merge(&files).unwrap();
        assert!(notices.is_empty());
        assert_eq!(merged.to_json(), json, "{n} shards");
        assert_eq!(merged.to_csv(), csv, "{n} shards");
    }
    // A whole-plan file merges on its own.
    assert_eq!(
        merge(std::slice::from_ref(&full)).unwrap().0.to_json(),
        json
    );
}

/// Writes shards i/n of the tiny scenario (with `seed`) into `d`.
fn shards(d: &Path, n: u64, seed: Option<u64>) -> Vec<PathBuf> {
    let s = tiny();
    (0..n)
        .map(|i| {
            let p = d.join(format!("seed{seed:?}-{i}of{n}.jsonl"));
            let mut o = opts(
                2,
                Some(shard(i, n)),
                Results::Create {
                    path: p.clone(),
                    force: false,
                },
            );
            o.run.seed = seed;
            sweep::sweep(&s, &o, &sweep::Silent).unwrap();
            p
        })
        .collect()
}

#[test]
fn merge_refuses_missing_overlapping_and_mismatched_slices() {
    let d = dir("merge-errors");
    let three = shards(&d, 3, None);

    // A shard not given: named, with its run count.
    let e = merge(&three[..2]).unwrap_err();
    assert!(
        matches!(
            e,
            MergeError::Missing {
                missing: 6,
                total: 18,
                ..
            }
        ),
        "{e}"
    );
    let m = e.to_string();
    assert!(m.contains("no file given for shard 2/3 (6 runs)"), "{m}");

    // A shard cut off by an interruption: its missing runs are listed one by one.
    let cut = d.join("cut.jsonl");
    let l = lines(&three[1]);
    std::fs::write(&cut, format!("{}\n{}\n{}", l[0], l[1], &l[2][..10])).unwrap();
    let e = merge(&[three[0].clone(), cut.clone(), three[2].clone()]).unwrap_err();
    let m = e.to_string();
    assert!(matches!(e, MergeError::Missing { missing: 5, .. }), "{m}");
    // Shard 1/3 holds runs 1, 4, 7, 10, 13, 16; the first line kept is one of them.
    let kept: usize = serde_json::from_str::<serde_json::Value>(&l[1]).unwrap()["run"]
        .as_u64()
        .unwrap() as usize;
    for k in (1..18).step_by(3).filter(|&k| k != kept) {
        assert!(m.contains(&format!("run {k} (variant")), "run {k}: {m}");
    }
    assert!(m.contains("from shard 1/3"), "{m}");

    // The same shard twice, and shards of two layouts that overlap.
    let e = merge(&[
        three[0].clone(),
        three[1].clone(),
        three[1].clone(),
        three[2].clone(),
    ])
    .unwrap_err();
    assert!(matches!(e, MergeError::Overlap { .. }), "{e}");
    assert!(e.to_string().contains("is in both"), "{e}");
    let two = shards(&d, 2, None);
    let e = merge(&[three[0].clone(), two[0].clone(), two[1].clone()]).unwrap_err();
    assert!(matches!(e, MergeError::Overlap { .. }), "{e}");

    // Another seed: a different sweep, and the message says how.
    let other = shards(&d, 3, Some(4));
    let e = merge(&[three[0].clone(), three[1].clone(), other[2].clone()]).unwrap_err();
    let m = e.to_string();
    assert!(matches!(e, MergeError::Mismatch { .. }), "{m}");
    assert!(
        m.contains(&format!("seed 4 ({}: 3)", three[0].display())),
        "{m}"
    );

    // Another network with the same name, seed and runs: only the fingerprint tells.
    let edited = Scenario::parse(&TINY.replace("\"4Mbps\"", "\"5Mbps\""), "edited").unwrap();
    let p = d.join("edited.jsonl");
    sweep::sweep(
        &edited,
        &opts(
            2,
            Some(shard(2, 3)),
            Results::Create {
                path: p.clone(),
                force: false,
            },
        ),
        &sweep::Silent,
    )
    .unwrap();
    let e = merge(&[three[0].clone(), three[1].clone(), p]).unwrap_err();
    assert!(e.to_string().contains("fingerprint"), "{e}");

    // Not results files; a damaged line that is not the last.
    let notes = d.join("notes.jsonl");
    std::fs::write(&notes, "hello\n").unwrap();
    let e = merge(&[notes]).unwrap_err();
    assert!(
        matches!(e, MergeError::Results(ResultsError::NotResults { .. })),
        "{e}"
    );
    let empty = d.join("empty.jsonl");
    std::fs::write(&empty, "").unwrap();
    assert!(matches!(
        merge(&[empty]).unwrap_err(),
        MergeError::Results(ResultsError::NoHeader { .. })
    ));
    let damaged = d.join("damaged.jsonl");
    std::fs::write(
        &damaged,
        format!("{}\n{}\n{{\"run\":\n{}\n", l[0], l[1], l[2]),
    )
    .unwrap();
    let e = merge(&[damaged]).unwrap_err();
    assert!(
        matches!(
            e,
            MergeError::Results(ResultsError::Corrupt { line: 3, .. })
        ),
        "{e}"
    );
    // A record moved into the wrong shard's file.
    let wrong = d.join("wrong.jsonl");
    let l0 = lines(&three[0]);
    std::fs::write(&wrong, format!("{}\n{}\n", l[0], l0[1])).unwrap();
    let e = merge(&[wrong]).unwrap_err();
    assert!(
        e.to_string().contains("does not belong in shard 1/3"),
        "{e}"
    );
    assert!(matches!(merge(&[]).unwrap_err(), MergeError::NoFiles));

    // Hand-edited files that would not fit in one report: clear errors, never a panic.
    let edit = |line: &str, f: &dyn Fn(&mut serde_json::Value)| -> String {
        let mut v: serde_json::Value = serde_json::from_str(line).unwrap();
        f(&mut v);
        v.to_string()
    };
    let write = |name: &str, lines: &[String]| -> PathBuf {
        let p = d.join(name);
        std::fs::write(&p, lines.join("\n") + "\n").unwrap();
        p
    };
    let l2 = lines(&three[2]);
    let mut fewer_paths = l2.clone();
    fewer_paths[1] = edit(&l2[1], &|v| {
        v["record"]["flows"][0]["paths"]
            .as_array_mut()
            .unwrap()
            .pop();
    });
    let p = write("fewer-paths.jsonl", &fewer_paths);
    let e = merge(&[three[0].clone(), three[1].clone(), p]).unwrap_err();
    assert!(matches!(e, MergeError::Inconsistent(_)), "{e}");
    let mut fewer_flows = l2.clone();
    fewer_flows[1] = edit(&l2[1], &|v| {
        v["record"]["flows"].as_array_mut().unwrap().pop();
    });
    let e = merge(&[write("fewer-flows.jsonl", &fewer_flows)]).unwrap_err();
    assert!(
        e.to_string().contains("flows; its flow groups need 3"),
        "{e}"
    );
    for (name, f) in [
        (
            "no-groups",
            &(|v: &mut serde_json::Value| v["layout"]["groups"] = serde_json::json!([]))
                as &dyn Fn(&mut serde_json::Value),
        ),
        ("zero-shards", &|v: &mut serde_json::Value| {
            v["shard"]["count"] = 0.into()
        }),
        ("huge", &|v: &mut serde_json::Value| {
            v["layout"]["repetitions"] = u64::MAX.into();
        }),
    ] {
        let mut bad = l2.clone();
        bad[0] = edit(&l2[0], f);
        let e = merge(&[write(&format!("{name}.jsonl"), &bad)]).unwrap_err();
        assert!(
            matches!(
                e,
                MergeError::Results(ResultsError::Corrupt { line: 1, .. })
            ),
            "{name}: {e}"
        );
    }
}

#[test]
fn results_files_are_never_overwritten_or_mixed_without_being_told() {
    let s = tiny();
    let d = dir("protect");
    let p = d.join("mine.jsonl");
    std::fs::write(&p, "precious\n").unwrap();
    let create = |force| {
        opts(
            2,
            None,
            Results::Create {
                path: p.clone(),
                force,
            },
        )
    };
    let e = sweep::sweep(&s, &create(false), &sweep::Silent).unwrap_err();
    assert!(
        matches!(e, SweepError::Results(ResultsError::Exists { .. })),
        "{e}"
    );
    assert_eq!(std::fs::read_to_string(&p).unwrap(), "precious\n");
    // Resuming a file that is not a results file leaves it alone too.
    let e = sweep::sweep(
        &s,
        &opts(2, None, Results::Resume { path: p.clone() }),
        &sweep::Silent,
    )
    .unwrap_err();
    assert!(
        e.to_string().contains("not a tributary results file"),
        "{e}"
    );
    assert_eq!(std::fs::read_to_string(&p).unwrap(), "precious\n");
    // --force replaces it.
    sweep::sweep(&s, &create(true), &sweep::Silent).unwrap();
    assert_eq!(lines(&p).len(), 19);
    let before = std::fs::read(&p).unwrap();
    // Resuming with other options, or as a shard, is refused and changes nothing.
    let mut other = opts(2, None, Results::Resume { path: p.clone() });
    other.run.repetitions = Some(2);
    let e = sweep::sweep(&s, &other, &sweep::Silent).unwrap_err();
    assert!(e.to_string().contains("3 repetitions (now: 2)"), "{e}");
    let e = sweep::sweep(
        &s,
        &opts(2, Some(shard(0, 2)), Results::Resume { path: p.clone() }),
        &sweep::Silent,
    )
    .unwrap_err();
    assert!(
        e.to_string()
            .contains("the whole plan, not a shard (now: shard 0/2)"),
        "{e}"
    );
    assert_eq!(std::fs::read(&p).unwrap(), before);
    // A file started by another build of tributary (other sources): the fingerprint cannot
    // tell, the build digest in the header does. Resuming it, or merging it with this
    // build's results, is refused and changes nothing.
    let text = String::from_utf8(before.clone()).unwrap();
    let ours = format!("\"build\":\"{}\"", sweep::BUILD);
    assert!(text.lines().next().unwrap().contains(&ours), "{text}");
    let foreign = d.join("foreign.jsonl");
    std::fs::write(
        &foreign,
        text.replacen(&ours, "\"build\":\"0123456789abcdef\"", 1),
    )
    .unwrap();
    let foreign_bytes = std::fs::read(&foreign).unwrap();
    let e = sweep::sweep(
        &s,
        &opts(
            2,
            None,
            Results::Resume {
                path: foreign.clone(),
            },
        ),
        &sweep::Silent,
    )
    .unwrap_err();
    assert!(
        e.to_string()
            .contains("written by another build of tributary (sources 0123456789abcdef"),
        "{e}"
    );
    assert_eq!(std::fs::read(&foreign).unwrap(), foreign_bytes);
    // A file without a build (written before builds were recorded) is resumed unchecked.
    let old = d.join("old.jsonl");
    std::fs::write(&old, text.replacen(&format!(",{ours}"), "", 1)).unwrap();
    assert!(!std::fs::read_to_string(&old).unwrap().contains("\"build\""));
    sweep::sweep(
        &s,
        &opts(2, None, Results::Resume { path: old }),
        &sweep::Silent,
    )
    .unwrap();
    // A shard needs a file.
    assert!(matches!(
        sweep::sweep(
            &s,
            &opts(2, Some(shard(0, 2)), Results::Memory),
            &sweep::Silent
        ),
        Err(SweepError::ShardWithoutFile)
    ));

    // --resume of a file that does not exist starts it; of one cut off inside its header
    // starts it again.
    let new = d.join("new.jsonl");
    let obs = Record::default();
    sweep::sweep(
        &s,
        &opts(2, Some(shard(1, 4)), Results::Resume { path: new.clone() }),
        &obs,
    )
    .unwrap();
    assert!(matches!(
        obs.notices.lock().unwrap()[0],
        Notice::Started { .. }
    ));
    assert_eq!(lines(&new).len(), 1 + 5);
    let header_only = lines(&new)[0].clone();
    std::fs::write(&new, &header_only[..40]).unwrap();
    let obs = Record::default();
    sweep::sweep(
        &s,
        &opts(2, Some(shard(1, 4)), Results::Resume { path: new.clone() }),
        &obs,
    )
    .unwrap();
    assert!(obs
        .notices
        .lock()
        .unwrap()
        .iter()
        .any(|n| matches!(n, Notice::TruncatedTail { line: 1, .. })));
    assert_eq!(lines(&new).len(), 1 + 5);
    assert_eq!(lines(&new)[0], header_only);
}

/// A scenario of `runs` very short runs (one variant).
fn many(runs: usize) -> Scenario {
    Scenario::parse(
        &format!(
            r#"
name = "many"
duration = "200ms"
repetitions = {runs}

[[links]]
name = "l"
rate = "1Mbps"
delay = "5ms"

[[flows]]
name = "f"
paths = ["l"]
scheme = "tcp"
"#
        ),
        "many",
    )
    .unwrap()
}

#[test]
fn sweeps_over_the_threshold_warn_with_an_estimate_first() {
    let at = Record::default();
    sweep::sweep(
        &many(LARGE_SWEEP_RUNS),
        &opts(2, None, Results::Memory),
        &at,
    )
    .unwrap();
    assert!(at.notices.lock().unwrap().is_empty());

    let over = Record::default();
    let r = complete(
        sweep::sweep(
            &many(LARGE_SWEEP_RUNS + 1),
            &opts(2, None, Results::Memory),
            &over,
        )
        .unwrap(),
    );
    assert_eq!(r.runs.len(), LARGE_SWEEP_RUNS + 1);
    let n = over.notices.lock().unwrap().clone();
    assert_eq!(n.len(), 3, "{n:?}");
    match &n[0] {
        Notice::LargeSweep {
            runs,
            simulated_s,
            pilots,
            streaming,
            ..
        } => {
            assert_eq!(*runs, LARGE_SWEEP_RUNS + 1);
            assert!((simulated_s - 0.2 * (LARGE_SWEEP_RUNS + 1) as f64).abs() < 1e-9);
            assert_eq!(*pilots, 1);
            assert!(!streaming);
        }
        other => panic!("{other:?}"),
    }
    match &n[1] {
        Notice::Estimate(e) => {
            assert_eq!(e.remaining_runs, LARGE_SWEEP_RUNS);
            assert_eq!(e.rates.len(), 1);
            assert!(e.remaining_s > 0.0 && e.total_s() >= e.elapsed_s);
        }
        other => panic!("{other:?}"),
    }
    assert!(
        matches!(&n[2], Notice::Finished { ran, estimated_s: Some(_), .. } if *ran == LARGE_SWEEP_RUNS + 1)
    );
    // Only the runs this invocation executes count: a shard of the same sweep stays quiet.
    let d = dir("threshold");
    let quiet = Record::default();
    sweep::sweep(
        &many(LARGE_SWEEP_RUNS + 1),
        &opts(
            2,
            Some(shard(0, 2)),
            Results::Create {
                path: d.join("half.jsonl"),
                force: false,
            },
        ),
        &quiet,
    )
    .unwrap();
    assert!(quiet.notices.lock().unwrap().is_empty());
}
