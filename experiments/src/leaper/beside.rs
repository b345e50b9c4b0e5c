//! The fields of a summary row that set a policy's run beside the other runs of its workload: the
//! latency-spike threshold over all of them and the run's spikes against it, and the run's QPS
//! outside the flush and compaction windows against the baseline's (the paper's Table 5,
//! 'Overall').
//!
//! They are computed from the runs themselves where one process holds every run of a workload
//! ([`Beside::of_runs`], `leaper-sensitivity`), and from the rows where the runs may come from
//! several cells ([`complete`]: `leaper-online`, whose `cells_by = policy` runs each policy in a
//! cell of its own and fills these fields in once the grid is complete). Both go through
//! [`Beside::of`], so a run made of cells holds the same figures as a whole run.

use lsmlab_harness::rows::Row;
use serde_json::Value;

use super::online::{PolicyRun, WorkloadRuns, ENGINE};
use super::report::{BASELINE, LEAPER};
use super::timeline::median;

/// A summary row's fields that depend on the other runs of its workload.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Beside {
    /// `spike_factor` x the median interval mean latency over every run of the workload. The
    /// mean, not the p95: with one client an interval's p95 is one hit's or one miss's latency
    /// (binary), where its mean moves with every miss (it is the interval's length over its
    /// operations).
    pub spike_threshold_us: f64,
    /// The run's intervals whose mean latency exceeds the threshold.
    pub latency_spikes: u64,
    /// QPS decline outside every window against the baseline's, in percent (positive = slower);
    /// `None` without a baseline run or without time outside the windows.
    pub overhead_pct: Option<f64>,
    /// [`Beside::overhead_pct`] with Leaper's modelled collector time taken out of its time
    /// outside the windows: how much of the decline is the collector's charge and how much the
    /// policy's effect on the cache. Leaper on the single-client clock only, where each
    /// operation's latency holds the charge exactly.
    pub overhead_pct_without_collector: Option<f64>,
}

impl Beside {
    /// The fields of a run whose intervals (those with operations) had mean latencies `means`,
    /// among runs whose intervals had `pooled`, with `qps_outside` operations per second outside
    /// the windows against the baseline's `baseline_qps_outside`. `collector_us` is the modelled
    /// collector charge per operation for Leaper on the single-client clock, `None` otherwise.
    pub fn of(
        means: &[f64],
        pooled: &[f64],
        spike_factor: f64,
        qps_outside: Option<f64>,
        baseline_qps_outside: Option<f64>,
        collector_us: Option<f64>,
    ) -> Beside {
        let spike_threshold_us = spike_factor * median(pooled);
        let base = baseline_qps_outside.filter(|&b| b > 0.0);
        let overhead_pct = base
            .zip(qps_outside)
            .map(|(base, mine)| (1.0 - mine / base) * 100.0);
        // Outside the windows the run served q = ops / s; without the collector's c seconds per
        // operation it would have taken s - ops x c, i.e. served 1 / (1 / q - c).
        let overhead_pct_without_collector = base.zip(qps_outside).zip(collector_us).and_then(
            |((base, mine), c)| {
                let s_per_op = 1.0 / mine - c * 1e-6;
                (s_per_op > 0.0).then(|| (1.0 - 1.0 / s_per_op / base) * 100.0)
            },
        );
        Beside {
            spike_threshold_us,
            latency_spikes: means.iter().filter(|&&m| m > spike_threshold_us).count() as u64,
            overhead_pct,
            overhead_pct_without_collector,
        }
    }

    /// The fields of `run` among the runs of `w`.
    pub fn of_runs(w: &WorkloadRuns, run: &PolicyRun, spike_factor: f64) -> Beside {
        let pooled: Vec<f64> = w.runs.iter().flat_map(|r| r.timeline.interval_means()).collect();
        let baseline = w.runs.iter().find(|r| r.policy.name() == BASELINE);
        Beside::of(
            &run.timeline.interval_means(),
            &pooled,
            spike_factor,
            run.timeline.qps_outside(),
            baseline.and_then(|b| b.timeline.qps_outside()),
            collector_charge(run.policy.name(), w.clients, w.collector_us),
        )
    }

    /// Writes the fields into a summary row (an absent figure removes its field).
    pub fn write(&self, row: &mut Row) {
        let mut put = |key: &str, value: Option<Value>| match value {
            Some(v) => {
                row.insert(key.to_string(), v);
            }
            None => {
                row.remove(key);
            }
        };
        let num = |v: f64| serde_json::Number::from_f64(v).map(Value::Number);
        put("overhead_pct", self.overhead_pct.and_then(num));
        put(
            "overhead_pct_without_collector",
            self.overhead_pct_without_collector.and_then(num),
        );
        put("latency_spikes", Some(self.latency_spikes.into()));
        put("spike_threshold_us", num(self.spike_threshold_us));
    }
}

/// The collector charge [`Beside::overhead_pct_without_collector`] takes out: Leaper's, on the
/// single-client clock.
fn collector_charge(policy: &str, clients: usize, collector_us: f64) -> Option<f64> {
    (policy == LEAPER && clients == 1).then_some(collector_us)
}

/// Which runs a summary row is set beside: lsmlab's rows of one kind family (the default run's,
/// the queueing alternative's `clients-`, the variants' `variant-`), workload and variant.
fn group_of(row: &Row) -> Option<(String, String, String)> {
    let text = |key: &str| row.get(key).and_then(Value::as_str);
    if text("engine") != Some(ENGINE) {
        return None;
    }
    let kind = text("kind")?;
    let family = kind
        .strip_suffix("summary")
        .or_else(|| kind.strip_suffix("interval"))?;
    Some((
        family.to_string(),
        text("workload")?.to_string(),
        text("variant").unwrap_or("").to_string(),
    ))
}

fn is_summary(row: &Row) -> bool {
    row.get("kind")
        .and_then(Value::as_str)
        .is_some_and(|k| k.ends_with("summary"))
}

/// Fills [`Beside`]'s fields into every lsmlab summary row of `rows` that lacks them, from the
/// interval rows of its workload's runs and the baseline's summary row (`leaper-online`'s rows,
/// default, queueing and variant alike). A row that has them keeps them: a cell by workload
/// computed them itself (under `--repeat`, per repetition, then averaged with their intervals),
/// where a cell by policy leaves them to this, which under `--repeat` reads the repetitions' mean
/// rows. `spike_factor` and `collector_us` are the run's (the queueing and variant setups change
/// neither). Called again it gives the same rows.
pub(crate) fn complete(rows: &mut [Row], spike_factor: f64, collector_us: f64) {
    use std::collections::BTreeMap;
    type Group = (String, String, String);
    let mut pooled: BTreeMap<Group, Vec<f64>> = BTreeMap::new();
    let mut means: BTreeMap<(Group, String), Vec<f64>> = BTreeMap::new();
    let mut baseline: BTreeMap<Group, Option<f64>> = BTreeMap::new();
    let num = |row: &Row, key: &str| row.get(key).and_then(Value::as_f64);
    let policy = |row: &Row| row.get("policy").and_then(Value::as_str).unwrap_or("").to_string();
    for row in rows.iter() {
        let Some(group) = group_of(row) else { continue };
        if is_summary(row) {
            if policy(row) == BASELINE {
                baseline.insert(group, num(row, "qps_outside_windows"));
            }
            continue;
        }
        let (Some(ops), Some(mean)) = (num(row, "ops"), num(row, "mean_us")) else {
            continue;
        };
        if ops > 0.0 {
            pooled.entry(group.clone()).or_default().push(mean);
            means.entry((group, policy(row))).or_default().push(mean);
        }
    }
    for row in rows.iter_mut() {
        let Some(group) = group_of(row) else { continue };
        if !is_summary(row) || row.contains_key("spike_threshold_us") {
            continue;
        }
        let clients = num(row, "clients").unwrap_or(0.0) as usize;
        let p = policy(row);
        let beside = Beside::of(
            means.get(&(group.clone(), p.clone())).map_or(&[][..], Vec::as_slice),
            pooled.get(&group).map_or(&[][..], Vec::as_slice),
            spike_factor,
            num(row, "qps_outside_windows"),
            baseline.get(&group).copied().flatten(),
            collector_charge(&p, clients, collector_us),
        );
        beside.write(row);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use lsmlab_harness::rows::RowBuilder;

    /// A row of lsmlab's single-client run of `policy` on synthetic.
    fn row(kind: &str, policy: &str) -> RowBuilder {
        RowBuilder::new()
            .str("kind", kind)
            .str("workload", "synthetic")
            .str("policy", policy)
            .str("engine", ENGINE)
            .int("clients", 1)
    }

    fn interval(kind: &str, policy: &str, ops: u64, mean_us: f64) -> Row {
        row(kind, policy).int("ops", ops).num("mean_us", mean_us).build()
    }

    fn summary(kind: &str, policy: &str, qps_outside: f64) -> Row {
        row(kind, policy).num("qps_outside_windows", qps_outside).build()
    }

    #[test]
    fn spikes_and_overheads_follow_their_definitions() {
        // Pooled means 100, 100, 100, 300, 100, 100: median 100, threshold 200 at factor 2.
        let b = Beside::of(&[100.0, 300.0], &[100.0, 100.0, 100.0, 300.0, 100.0, 100.0], 2.0, Some(900.0), Some(1000.0), None);
        assert_eq!(b.spike_threshold_us, 200.0);
        assert_eq!(b.latency_spikes, 1);
        assert!((b.overhead_pct.unwrap() - 10.0).abs() < 1e-12);
        assert_eq!(b.overhead_pct_without_collector, None, "no collector charge asked");
        // 900 ops/s is 1,111.1 us per operation; without 111.1 us of collector, 1,000 us: 0 %.
        let c = Beside::of(&[], &[1.0], 2.0, Some(900.0), Some(1000.0), Some(1e6 / 900.0 - 1000.0));
        assert!(c.overhead_pct_without_collector.unwrap().abs() < 1e-9, "{c:?}");
        // A collector charge of every microsecond of an operation leaves no time: no figure.
        let d = Beside::of(&[], &[1.0], 2.0, Some(1e6), Some(1e6), Some(1.0));
        assert_eq!(d.overhead_pct_without_collector, None);
        // No baseline, or a baseline with no time outside the windows: no overhead.
        assert_eq!(Beside::of(&[], &[], 2.0, Some(1.0), None, None).overhead_pct, None);
        assert_eq!(Beside::of(&[], &[], 2.0, Some(1.0), Some(0.0), None).overhead_pct, None);
    }

    #[test]
    fn complete_sets_each_summary_beside_its_own_group_and_is_idempotent() {
        let mut rows = vec![
            interval("interval", BASELINE, 10, 100.0),
            interval("interval", BASELINE, 10, 100.0),
            interval("interval", LEAPER, 10, 100.0),
            interval("interval", LEAPER, 10, 500.0),
            interval("interval", LEAPER, 0, 900.0), // no operations: not a mean
            summary("summary", LEAPER, 800.0),
            summary("summary", BASELINE, 1000.0),
            // The queueing alternative's rows are another group: no baseline there.
            interval("clients-interval", LEAPER, 10, 5.0),
            summary("clients-summary", LEAPER, 10.0),
        ];
        let mut peer = summary("summary", "fjall", 1.0);
        peer.insert("engine".into(), "fjall".into());
        rows.push(peer.clone());
        complete(&mut rows, 2.0, 50.0);
        let get = |i: usize, k: &str| rows[i].get(k).cloned();
        assert_eq!(get(5, "spike_threshold_us"), Some(200.0.into()));
        assert_eq!(get(5, "latency_spikes"), Some(1.into()));
        let overhead = get(5, "overhead_pct").and_then(|v| v.as_f64()).unwrap();
        assert!((overhead - 20.0).abs() < 1e-9, "{overhead}");
        // 800 ops/s = 1,250 us each, 1,200 without the collector's 50: 833.3 ops/s, 16.7 % slower.
        let without = get(5, "overhead_pct_without_collector").and_then(|v| v.as_f64()).unwrap();
        assert!((without - (1.0 - 1e6 / 1200.0 / 1000.0) * 100.0).abs() < 1e-9, "{without}");
        assert_eq!(get(6, "overhead_pct"), Some(0.0.into()));
        assert_eq!(get(6, "latency_spikes"), Some(0.into()));
        assert_eq!(get(6, "overhead_pct_without_collector"), None, "the baseline has no collector");
        assert_eq!(get(8, "spike_threshold_us"), Some(10.0.into()));
        assert_eq!(get(8, "overhead_pct"), None);
        assert_eq!(rows[9], peer, "a peer engine's rows are left alone");
        let once = rows.clone();
        complete(&mut rows, 2.0, 50.0);
        assert_eq!(rows, once);
        // A row that has the fields keeps them (a cell by workload computed them itself).
        rows[5].insert("latency_spikes".into(), 7.into());
        complete(&mut rows, 2.0, 50.0);
        assert_eq!(rows[5]["latency_spikes"], 7);
    }
}
