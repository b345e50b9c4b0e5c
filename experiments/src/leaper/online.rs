//! `leaper-online`: each workload under each warm-up policy on the virtual clock (the paper's
//! §7.3: Figures 1, 10 and 11, Tables 4 and 5). Per workload: a training pass (a bulk-loaded store
//! with no warm-up policy runs the warm-up phase, logging every access: the Leaper model's training
//! data, and the calibration of the interval length), then for each policy a fresh store, the same
//! warm-up and the measured run, with identical op streams. A row per interval (the timeline) and
//! a summary row per workload and policy.

use std::sync::Arc;

use parking_lot::Mutex;
use lsmlab_engine::kvstore::{WarmUpKind, WarmUpPolicy};

use super::driver::{
    calibrate_interval_s, extend_warm_up, measure, open_store, warm_up, Driver, Layout, Measured, Warmup,
};
use super::beside;
use super::learned::{self, LeaperSettings, TrainedLeaper};
use super::report::{self as lr, BASELINE};
use super::variant::Variant;
use super::{check_workloads, pool, ratio_fields, KvSetup, Ratios, RunTimeline, Workload, PAPER};
use crate::config::{check, Config, DeviceKind};
use crate::experiment::{Row, RowBuilder, RunContext, RunOutput, Scale, TypedExperiment};
use lsmlab_workloads::kv::{KeyDist, KvWorkload, TimedOp};

pub(crate) struct LeaperOnline;

lsmlab_harness::config! {
    /// `leaper-online`'s parameters.
    pub struct OnlineConfig {
        /// workloads to run: e-commerce, messaging, synthetic (the paper's Table 2)
        pub workloads: Vec<Workload>,
        /// cache warm-up policies: lru, incremental-warmup (the paper's baseline), prepopulate-flush,
        /// prepopulate-all, leaper
        pub policies: Vec<WarmUpKind>,
        #[serde(flatten)]
        /// The store, clock and run length (flattened: its keys are top-level `--set` keys).
        pub setup: KvSetup,
        #[serde(flatten)]
        /// The Leaper policy's settings (flattened: its keys are top-level `--set` keys).
        pub leaper: LeaperSettings,
        /// also run each workload on fjall (a real LSM store, wall time) with the same spec, seed, ratios and
        /// op counts; true by default when built with the `fjall` cargo feature
        #[serde(default = "fjall_peer_default")]
        pub fjall_peer: bool,
        /// also run each workload with this many closed-loop clients on the queueing clock (rows kind =
        /// clients-interval / clients-summary, beside the default clients run); 0 = off; default 256
        /// (Little's law on the paper's QPS and latencies)
        #[serde(default = "queueing_clients_default")]
        pub queueing_clients: usize,
        /// the policies of the queueing_clients run (default: incremental-warmup, leaper: Table 4's pair)
        #[serde(default = "queueing_policies_default")]
        pub queueing_policies: Vec<WarmUpKind>,
        /// named alternatives run beside the default on every workload (rows kind = variant-interval /
        /// variant-summary, field variant): keys=<key distribution> or shape=table2 (Table 2's table sizes,
        /// the cache and memtables kept in bytes); default keys=scrambled-zipfian, keys=special,
        /// shape=table2; `variants=` (empty) runs none
        #[serde(default = "variants_default")]
        pub variants: Vec<Variant>,
        /// the policies of the variants (default: lru, incremental-warmup, leaper)
        #[serde(default = "variant_policies_default")]
        pub variant_policies: Vec<WarmUpKind>,
        /// how the run splits into cells for --shard and --resume: workload (a cell per workload, whose
        /// training passes run once and whose policies run side by side on two workers) or policy (a cell per
        /// workload and policy run of the default setup, the queueing alternative and each variant, each
        /// repeating its setup's training pass: about 1 to 1.6 hours a cell at paper scale on 2 cores, against
        /// 14 hours or more a workload); default policy at paper scale, workload below
        #[serde(default)]
        pub cells_by: CellsBy,
    }
}

/// How `leaper-online` splits into cells (`cells_by`). Counted figures are the same either way:
/// every training pass and policy run draws from the run's seed and builds its own store.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CellsBy {
    /// A cell per workload (results written before the key existed ran so).
    #[default]
    Workload,
    /// A cell per workload and policy run ([`policy_cells`]).
    Policy,
}

/// The policy whose run the fjall peer is matched with: `lru`, else the first one.
fn peer_policy(policies: &[WarmUpKind]) -> Option<usize> {
    policies
        .iter()
        .position(|&p| p == WarmUpKind::Lru)
        .or((!policies.is_empty()).then_some(0))
}

/// The cells of `cells_by = policy`: per workload, a cell per policy of the default setup (the
/// fjall peer in the cell of the run it is matched with), of the queueing alternative and of each
/// variant. A cell empties the policy lists of the setups it leaves to other cells, so it runs one
/// training pass (two with the Leaper model's training) and one policy run.
fn policy_cells(cfg: &OnlineConfig) -> Vec<crate::cells::Cell> {
    use crate::cells::Cell as GridCell;
    let none = || serde_json::json!([]);
    let pick = |picks: &[(&str, usize)]| GridCell {
        picks: picks.iter().map(|&(k, i)| (k.to_string(), i)).collect(),
        sets: Vec::new(),
    };
    let peer = peer_policy(&cfg.policies);
    let mut cells = Vec::new();
    for w in 0..cfg.workloads.len() {
        for p in 0..cfg.policies.len() {
            cells.push(
                pick(&[("workloads", w), ("policies", p)])
                    .set("queueing_policies", none())
                    .set("variants", none())
                    .set("fjall_peer", (cfg.fjall_peer && peer == Some(p)).into()),
            );
        }
        if queueing_setup(cfg).is_some() {
            for q in 0..cfg.queueing_policies.len() {
                cells.push(
                    pick(&[("workloads", w), ("queueing_policies", q)])
                        .set("policies", none())
                        .set("variants", none())
                        .set("fjall_peer", false.into()),
                );
            }
        }
        for v in 0..cfg.variants.len() {
            for p in 0..cfg.variant_policies.len() {
                cells.push(
                    pick(&[("workloads", w), ("variants", v), ("variant_policies", p)])
                        .set("policies", none())
                        .set("queueing_policies", none())
                        .set("fjall_peer", false.into()),
                );
            }
        }
    }
    cells
}

/// The variants run by default: key locality removed, sysbench 1.0's default distribution, and
/// Table 2's data size: the conditions the Leaper verdicts were found to depend on.
pub fn variants_default() -> Vec<Variant> {
    vec![
        Variant::Keys(KeyDist::ScrambledZipfian),
        Variant::Keys(KeyDist::Special),
        Variant::Table2Shape,
    ]
}

/// The variants' policies: plain LRU (the hit ratio without warm-up) and Table 4's pair.
pub fn variant_policies_default() -> Vec<WarmUpKind> {
    vec![WarmUpKind::Lru, WarmUpKind::IncrementalWarmup, WarmUpKind::Leaper]
}

/// The prefix of the variants' row kinds (`variant-interval`, `variant-summary`).
pub const VARIANT_KIND_PREFIX: &str = "variant-";

/// Clients of the queueing alternative: Little's law on the paper's figures (Figure 11: e-commerce
/// about 100-150 k QPS at about 2-4 ms of latency) puts a few hundred operations in flight.
pub const QUEUEING_CLIENTS: usize = 256;

pub(crate) fn queueing_clients_default() -> usize {
    QUEUEING_CLIENTS
}

pub(crate) fn queueing_policies_default() -> Vec<WarmUpKind> {
    vec![WarmUpKind::IncrementalWarmup, WarmUpKind::Leaper]
}

/// `fjall_peer`'s default: on whenever the `fjall` cargo feature is compiled in.
pub fn fjall_peer_default() -> bool {
    cfg!(feature = "fjall")
}

impl Config for OnlineConfig {
    fn validate(&self) -> anyhow::Result<()> {
        check_workloads(&self.workloads)?;
        check(
            "policies",
            "(empty)",
            !self.policies.is_empty(),
            "at least one policy",
        )?;
        self.setup.validate()?;
        self.leaper.validate()?;
        check(
            "fjall_peer",
            self.fjall_peer,
            !self.fjall_peer || cfg!(feature = "fjall"),
            "false: this lsmlab was built without the `fjall` cargo feature (rebuild with default features to run the fjall peer)",
        )?;
        check(
            "queueing_policies",
            "(empty)",
            self.queueing_clients == 0 || !self.queueing_policies.is_empty(),
            "at least one policy when queueing_clients > 0",
        )?;
        check(
            "variant_policies",
            "(empty)",
            self.variants.is_empty() || !self.variant_policies.is_empty(),
            "at least one policy when variants are run",
        )?;
        for (i, v) in self.variants.iter().enumerate() {
            check(
                "variants",
                v,
                !self.variants[..i].contains(v),
                "each variant once (a repeated one would run again and give duplicate rows)",
            )?;
            for &w in &self.workloads {
                v.apply(&self.setup, w)
                    .map_err(|e| anyhow::anyhow!("parameter `variants`: {v} on {w}: {e:#}"))?;
            }
        }
        check(
            "queueing_clients",
            self.queueing_clients,
            self.queueing_clients <= 1_000_000,
            "0 (off) to 1,000,000 clients",
        )?;
        check(
            "value_bytes",
            self.setup.value_bytes,
            !self.fjall_peer || self.setup.value_bytes >= 16,
            "at least 16 bytes with fjall_peer = true (the fjall peer checks answers by the key and version each value names)",
        )
    }
}

/// Slots the warm-up covers at least (Leaper's features look back 6 slots; the models need a few
/// steps ahead and a held-out tail on top), whatever `warmup_ops` says.
pub const MIN_TRAINING_SLOTS: u64 = 40;

/// The day of the workloads' time of day (and of e-commerce's hot-set shift), in operations: the
/// warm-up spans two days.
pub fn day_ops(setup: &KvSetup) -> u64 {
    (setup.warmup_ops / 2).max(1)
}

/// One measured run of one policy.
pub(crate) struct PolicyRun {
    pub policy: WarmUpKind,
    pub timeline: RunTimeline,
    pub measured: Measured,
    pub ratios: Ratios,
    /// Leaper's own counters (inference time, predictions), when the policy is Leaper.
    pub leaper: Option<learned::RunStats>,
}

/// What one workload's training pass found and the runs it fed.
pub(crate) struct WorkloadRuns {
    pub workload: Workload,
    /// The clock's clients ([`KvSetup::clients`]).
    pub clients: usize,
    pub interval_s: f64,
    /// Leaper's modelled collector cost per operation, microseconds ([`KvSetup::collector_us`]).
    pub collector_us: f64,
    pub training: Warmup,
    pub trained: Option<TrainedLeaper>,
    pub runs: Vec<PolicyRun>,
}

/// The policy object of `kind` (Leaper's from the trained model, with the handle of its counters).
pub(crate) fn policy_for(
    kind: WarmUpKind,
    trained: Option<&TrainedLeaper>,
    seed: u64,
) -> anyhow::Result<(Box<dyn WarmUpPolicy>, Option<learned::StatsHandle>)> {
    match kind.baseline() {
        Some(p) => Ok((p, None)),
        None => {
            let trained =
                trained.ok_or_else(|| anyhow::anyhow!("the Leaper policy needs a trained model"))?;
            let (p, h) = learned::policy(trained, seed)?;
            Ok((p, Some(h)))
        }
    }
}

/// One workload instance to run: a workload under `policies` with its own settings, cache /
/// data ratio and op stream spec (leaper-online's workloads, leaper-sensitivity's cells).
#[derive(Clone)]
pub(crate) struct Cell {
    pub workload: Workload,
    pub setup: KvSetup,
    pub settings: LeaperSettings,
    pub policies: Vec<WarmUpKind>,
    pub cache_ratio: f64,
    pub spec: KvWorkload,
    pub label: String,
    /// Also run the fjall peer (after the run it is matched with, see [`peer_plan_of`]).
    pub peer: bool,
    /// The trace every run of the cell replays instead of `spec`'s generated stream (`--trace`).
    pub trace: Option<Arc<crate::trace::KvTrace>>,
}

impl Cell {
    /// A cell of `workload` at `setup`'s defaults, its spec changed by `spec_for`.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        setup: &KvSetup,
        settings: &LeaperSettings,
        workload: Workload,
        policies: &[WarmUpKind],
        cache_ratio: f64,
        spec_for: &dyn Fn(KvWorkload) -> anyhow::Result<KvWorkload>,
        label: &str,
        peer: bool,
    ) -> anyhow::Result<Cell> {
        Ok(Cell {
            workload,
            setup: setup.clone(),
            settings: settings.clone(),
            policies: policies.to_vec(),
            cache_ratio,
            spec: spec_for(setup.workload_spec(workload, day_ops(setup))?)?,
            label: label.to_string(),
            peer,
            trace: None,
        })
    }
}

/// What a cell's training pass found: the layout, the calibrated interval, the warm-up and its log.
struct Prepared {
    layout: Layout,
    interval_s: f64,
    t2_s: f64,
    training: Warmup,
    /// The warm-up's accesses (the model's training data), until the model is trained.
    log: Mutex<Option<learned::AccessLog>>,
}

/// The training pass of a cell: a bulk-loaded store with no warm-up policy runs the warm-up phase,
/// logging every access when the cell runs the `leaper` policy (the model's training data; a cell
/// without it keeps no log), calibrates the interval and extends the warm-up to cover the slots
/// the model needs.
#[allow(clippy::expect_used)] // LRU is a baseline policy by definition
fn prepare(cell: &Cell, ctx: &RunContext) -> anyhow::Result<Prepared> {
    let setup = &cell.setup;
    let layout: Layout = setup.layout(cell.cache_ratio);
    let cost = setup.cost_model();
    ctx.progress.message(format!("bulk-loading {} records", crate::progress::thousands(setup.records)));
    let store = open_store(
        setup,
        &layout,
        &cell.spec,
        WarmUpKind::Lru.baseline().expect("lru is a baseline"),
    )?;
    let mut driver = Driver::new(store, &cell.spec, ctx.seed, cost, false)?
        .replaying(cell.trace.as_deref())?
        .with_queue(setup.queue(0.0));
    // One record per operation of the warm-up (100 million at paper scale): kept only for a model.
    let mut log = cell
        .policies
        .contains(&WarmUpKind::Leaper)
        .then(learned::AccessLog::default);
    let mut record = |t: f64, op: &TimedOp| {
        if let Some(log) = log.as_mut() {
            log.record(t, &op.op);
        }
    };
    let mut training = warm_up(&mut driver, setup.warmup_ops, ctx.progress, &mut record)?;
    let interval_s = if setup.interval_s > 0.0 {
        setup.interval_s
    } else {
        calibrate_interval_s(
            &training,
            setup.background_ops_per_run,
            setup.intervals,
            layout.memtable_bytes,
            (lsmlab_engine::kvstore::SLOT_SIZE + setup.value_bytes) as u64,
        )
    };
    anyhow::ensure!(
        interval_s > 0.0,
        "the calibrated interval is empty: the warm-up ran no operation that took time"
    );
    // The model needs slots enough to train and test on: the warm-up goes on until it covers
    // MIN_TRAINING_SLOTS, and every policy's warm-up then runs as many operations.
    let slot_s = cell.settings.slot_intervals * interval_s;
    extend_warm_up(
        &mut driver,
        &mut training,
        MIN_TRAINING_SLOTS as f64 * slot_s,
        ctx.progress,
        &mut record,
    )?;
    Ok(Prepared {
        layout,
        interval_s,
        t2_s: setup.t2_intervals * interval_s,
        training,
        log: Mutex::new(log),
    })
}

/// Trains the Leaper model of a prepared cell (and frees the log).
fn train_cell(cell: &Cell, prep: &Prepared, ctx: &RunContext) -> anyhow::Result<TrainedLeaper> {
    let log = prep
        .log
        .lock()
        .take()
        .ok_or_else(|| anyhow::anyhow!("the warm-up's log was already used"))?;
    // Without a compaction in the warm-up, alpha is one block read and written at the
    // background bandwidth.
    let cost_alpha = cell.setup.cost_model().background_s(1, 1);
    learned::train(
        log,
        &prep.training,
        &cell.settings,
        prep.interval_s,
        prep.t2_s,
        &cell.spec,
        ctx.seed,
        cost_alpha,
    )
}

/// One policy's measured run on a fresh store with the same warm-up.
fn run_policy(
    cell: &Cell,
    prep: &Prepared,
    policy: WarmUpKind,
    trained: Option<&TrainedLeaper>,
    ctx: &RunContext,
) -> anyhow::Result<PolicyRun> {
    let setup = &cell.setup;
    let (object, handle) = policy_for(policy, trained, ctx.seed)?;
    let store = open_store(setup, &prep.layout, &cell.spec, object)?;
    let data_bytes = store.data_bytes();
    let mut driver = Driver::new(
        store,
        &cell.spec,
        ctx.seed,
        setup.cost_model(),
        policy == WarmUpKind::Leaper,
    )?
    .replaying(cell.trace.as_deref())?
    .with_queue(setup.queue(0.0));
    warm_up(&mut driver, prep.training.ops, ctx.progress, &mut |_, _| {})?;
    let before = handle.as_ref().map(learned::read);
    let (timeline, measured) = measure(
        &mut driver,
        setup.intervals as f64 * prep.interval_s,
        prep.interval_s,
        prep.t2_s,
        ctx.progress,
    )?;
    let leaper = handle.as_ref().map(|h| learned::read(h).since(before.as_ref()));
    Ok(PolicyRun {
        policy,
        ratios: Ratios {
            cache_data: (prep.layout.cache_pages as f64 * setup.page_size as f64) / data_bytes.max(1) as f64,
            memtable_data: prep.layout.memtable_bytes as f64 / data_bytes.max(1) as f64,
            background_ops: measured.background_ops(),
            compaction_cache: measured.blocks_per_compaction() / prep.layout.cache_pages.max(1) as f64,
            cached_inputs_per_compaction: measured.cached_inputs_per_compaction(),
        },
        timeline,
        measured,
        leaper,
    })
}

/// A piece of a cell's work, for the [`pool`].
enum Job {
    Prepare(usize),
    Train(usize),
    Policy(usize, usize),
    Peer(usize),
}

/// A cell's state while its jobs run.
#[derive(Default)]
struct CellState {
    prep: Option<Arc<Prepared>>,
    trained: Option<Arc<TrainedLeaper>>,
    runs: Vec<Option<PolicyRun>>,
    peer: Option<(Vec<Row>, String)>,
    error: Option<anyhow::Error>,
}

/// What one cell gave: its runs, and the fjall peer's rows and note when it ran.
pub(crate) struct CellOutput {
    pub runs: WorkloadRuns,
    pub peer: Option<(Vec<Row>, String)>,
}

/// The memory one job of `cells` needs outside the run's memory estimate: on the file device, a
/// store's page file, which the OS page cache must hold or every cache miss of the run reads the
/// disk, beside the store's own memory. The memory device's pages are in the estimate: 0.
fn page_cache_job_bytes(cells: &[Cell]) -> u64 {
    cells
        .iter()
        .filter(|c| c.setup.device == DeviceKind::File)
        .map(|c| page_file_bytes(c).saturating_add(c.setup.records.saturating_mul(super::FILE_STORE_BYTES_PER_RECORD)))
        .max()
        .unwrap_or(0)
}

/// A file-device store's page file as bulk-loaded: its initial data blocks.
fn page_file_bytes(cell: &Cell) -> u64 {
    cell.setup.layout(cell.cache_ratio).data_blocks * cell.setup.page_size as u64
}

/// How far a store's page file grows past its bulk-loaded size in a measured run on the file
/// device: a timed compaction keeps its inputs until it is installed, and a cascade of merges
/// keeps every merge's inputs until its last merge ends. Measured on the synthetic workload
/// (plain LRU and prepopulate-all): 11.4 to 39.1 GB at paper scale (3.43x), 1.14 to 3.91 GB at
/// 5,000,000 records (3.42x); rounded up (`docs/scale.md#leaper-at-paper-scale`).
pub const PAGE_FILE_GROWTH: f64 = 3.5;

/// The disk the page files of `cells` need at once with `workers` jobs side by side: the folder
/// they go in (the largest file-device cell's), one grown file's bytes and how many there are at
/// once; `None` when no cell is on the file device.
fn page_file_disk(cells: &[Cell], workers: usize) -> Option<(std::path::PathBuf, u64, u64)> {
    let largest = cells
        .iter()
        .filter(|c| c.setup.device == DeviceKind::File)
        .max_by_key(|c| page_file_bytes(c))?;
    let one = (page_file_bytes(largest) as f64 * PAGE_FILE_GROWTH).ceil() as u64;
    // Each job (a training pass, a policy run) opens its own store, those of one cell included.
    Some((largest.setup.file_dir(), one, workers.max(1) as u64))
}

/// Refuses to start cells whose page files would not fit on their folder's filesystem
/// ([`page_file_disk`]): a full disk would fail the run hours in. Off when
/// [`lsmlab_harness::runner::NO_DISK_CHECK`] is set.
fn check_page_file_disk(cells: &[Cell], workers: usize) -> anyhow::Result<()> {
    use lsmlab_harness::runner::{available_disk, check_disk, NO_DISK_CHECK};
    if std::env::var_os(NO_DISK_CHECK).is_some() {
        return Ok(());
    }
    let Some((dir, one, files)) = page_file_disk(cells, workers) else {
        return Ok(());
    };
    let basis = format!(
        "{files} page file{} side by side, each growing to about {PAGE_FILE_GROWTH} times its bulk-loaded data as timed compactions keep their inputs",
        if files > 1 { "s" } else { "" }
    );
    check_disk(
        "device=file: the stores' page files",
        one.saturating_mul(files),
        &basis,
        &dir,
        available_disk(&dir),
    )
}

/// How many of `cells`' jobs run side by side: the [`pool`]'s workers, or one on the file device
/// when two stores with their page files would not fit in the memory available (measured at
/// paper scale on a 24 GiB machine: two policy runs side by side kept two 11.4 GB page files and
/// 10.0 GiB of their own memory, read the disk at 130-145 MB/s, and the run the progress showed did
/// 37,000-48,000 operations per second against 176,000 for one warm-up alone). The note says so
/// when it applies.
fn cell_workers(cells: &[Cell]) -> (usize, Option<String>) {
    let job = page_cache_job_bytes(cells);
    let available = lsmlab_harness::runner::available_memory();
    let workers = pool::workers_within(job, available);
    let note = (workers < pool::workers()).then(|| {
        format!(
            "device=file: jobs ran one at a time, not {} side by side: each store with its page file needs about {:.1} GiB and {:.1} GiB was available, so side by side the page cache could not hold the files (wall times only; counted figures do not depend on it).",
            pool::workers(),
            job as f64 / f64::from(1u32 << 30),
            available.unwrap_or(0) as f64 / f64::from(1u32 << 30)
        )
    });
    (workers, note)
}

/// Runs every cell on the [`pool`]'s workers ([`cell_workers`], whose note goes to `notes`): per
/// cell the training pass, then the model's training (then the Leaper run) beside the other
/// policies' runs (then the fjall peer after the run it is matched with). Counted results are
/// those of running the cells one after another.
#[allow(clippy::expect_used)] // job order: a cell's training pass runs before its policies and its peer
pub(crate) fn run_cells(
    cells: &[Cell],
    ctx: &RunContext,
    notes: &mut Vec<String>,
) -> anyhow::Result<Vec<anyhow::Result<CellOutput>>> {
    let (workers, note) = cell_workers(cells);
    check_page_file_disk(cells, workers)?;
    if let Some(note) = note {
        ctx.progress.message(note.clone());
        notes.push(note);
    }
    let states: Vec<Mutex<CellState>> = cells
        .iter()
        .map(|c| {
            Mutex::new(CellState {
                runs: c.policies.iter().map(|_| None).collect(),
                ..CellState::default()
            })
        })
        .collect();
    let lock = |i: usize| states[i].lock();
    let work = |job: Job, follow: &mut Vec<Job>| {
        let i = match job {
            Job::Prepare(i) | Job::Train(i) | Job::Policy(i, _) | Job::Peer(i) => i,
        };
        if lock(i).error.is_some() {
            return;
        }
        let cell = &cells[i];
        let prep = lock(i).prep.clone();
        let result: anyhow::Result<()> = (|| {
            match job {
                Job::Prepare(_) => {
                    ctx.progress.begin(format!("{}: training pass", cell.label));
                    let prep = Arc::new(prepare(cell, ctx)?);
                    let leaper = cell.policies.contains(&WarmUpKind::Leaper);
                    if leaper {
                        follow.push(Job::Train(i));
                    } else {
                        prep.log.lock().take();
                    }
                    for (p, &kind) in cell.policies.iter().enumerate() {
                        if kind != WarmUpKind::Leaper {
                            follow.push(Job::Policy(i, p));
                        }
                    }
                    lock(i).prep = Some(prep);
                }
                Job::Train(_) => {
                    let prep = prep.expect("a cell is trained after its training pass");
                    ctx.progress
                        .begin(format!("{}: training the Leaper model", cell.label));
                    let trained = train_cell(cell, &prep, ctx)?;
                    lock(i).trained = Some(Arc::new(trained));
                    for (p, &kind) in cell.policies.iter().enumerate() {
                        if kind == WarmUpKind::Leaper {
                            follow.push(Job::Policy(i, p));
                        }
                    }
                }
                Job::Policy(_, p) => {
                    let prep = prep.expect("a policy runs after its cell's training pass");
                    let kind = cell.policies[p];
                    ctx.progress.begin(format!("{}: {kind}", cell.label));
                    let trained = lock(i).trained.clone();
                    let run = run_policy(cell, &prep, kind, trained.as_deref(), ctx)?;
                    let mut st = lock(i);
                    if cell.peer && peer_policy(&cell.policies) == Some(p) {
                        follow.push(Job::Peer(i));
                    }
                    st.runs[p] = Some(run);
                }
                Job::Peer(_) => {
                    let prep = prep.expect("the peer runs after its cell's training pass");
                    let p = peer_policy(&cell.policies).expect("a peer is matched with a run");
                    let plan = {
                        let st = lock(i);
                        let run = st.runs[p].as_ref().expect("the matched run is done");
                        peer_plan_of(&cell.setup, prep.training.ops, run)
                    };
                    let label = format!("{}: fjall peer", cell.label);
                    let out = run_fjall_peer(&cell.setup, cell.workload, &plan, &label, ctx)?;
                    lock(i).peer = Some(out);
                }
            }
            Ok(())
        })();
        if let Err(e) = result {
            lock(i).error = Some(e);
        }
    };
    pool::run_jobs(
        workers,
        (0..cells.len()).map(Job::Prepare).collect(),
        &work,
    );
    Ok(states
        .into_iter()
        .zip(cells)
        .map(|(st, cell)| {
            let st = st.into_inner();
            if let Some(e) = st.error {
                return Err(e);
            }
            let prep = st
                .prep
                .ok_or_else(|| anyhow::anyhow!("{}: the training pass did not run", cell.label))?;
            let runs = st
                .runs
                .into_iter()
                .zip(&cell.policies)
                .map(|(r, p)| r.ok_or_else(|| anyhow::anyhow!("{}: {p} did not run", cell.label)))
                .collect::<anyhow::Result<Vec<_>>>()?;
            let trained = match st.trained {
                Some(t) => Some(
                    Arc::try_unwrap(t)
                        .map_err(|_| anyhow::anyhow!("{}: the model is still in use", cell.label))?,
                ),
                None => None,
            };
            Ok(CellOutput {
                runs: WorkloadRuns {
                    workload: cell.workload,
                    clients: cell.setup.clients,
                    interval_s: prep.interval_s,
                    collector_us: cell.setup.collector_us,
                    training: prep.training.clone(),
                    trained,
                    runs,
                },
                peer: st.peer,
            })
        })
        .collect())
}

/// What a result says of a replayed trace: where its operations came from.
pub(crate) fn replay_note(t: &crate::trace::KvTrace, seed: u64) -> String {
    format!(
        "{}: operations replayed from trace {} (written by `lsmlab gen leaper-{}`{}: {} operations), not generated; \
         the run's workloads are the traces' (a fjall peer, which draws its own stream, is not run, and \
         neither are the variants, whose keys or record counts a trace fixes).",
        t.workload,
        t.path.display(),
        t.workload,
        match t.seed {
            Some(s) if s != seed => format!(" with seed {s}, the run's is {seed}"),
            Some(s) => format!(" with seed {s}"),
            None => String::new(),
        },
        t.ops
    )
}

/// The `engine` dimension of lsmlab's own rows (the fjall peer's rows say `fjall`).
pub const ENGINE: &str = "lsmlab";

/// The dimensions of a run's rows.
fn dims(workload: Workload, run: &PolicyRun, interval_s: f64, clients: usize) -> RowBuilder {
    ratio_fields(
        RowBuilder::new()
            .str("workload", workload.as_str())
            .str("policy", run.policy.name())
            .str("engine", ENGINE)
            .int("clients", clients as u64)
            .num("interval_s", interval_s),
        &run.ratios,
    )
}

/// A run's summary row, without the fields that set it beside the workload's other runs
/// ([`beside::Beside`]: the spike threshold and spikes, the overheads), which need every run of the
/// workload.
pub(crate) fn summary_row(w: &WorkloadRuns, run: &PolicyRun) -> Row {
    let tl = &run.timeline;
    let all = tl.summary();
    let inside = tl.in_windows.latency.summary();
    let mut row = dims(w.workload, run, w.interval_s, w.clients)
        .str("kind", "summary")
        .int("ops", tl.all.ops)
        .num("run_s", tl.end_s)
        .num("hit_ratio", tl.all.hit_ratio().unwrap_or(0.0))
        .num("miss_ratio", 1.0 - tl.all.hit_ratio().unwrap_or(0.0))
        .num("qps", tl.qps())
        .num("p95_us", all.p95_us)
        .num("p99_us", all.p99_us)
        .int("cache_hits", tl.all.hits)
        .int("cache_misses", tl.all.misses)
        .int("ops_in_windows", tl.in_windows.ops)
        .num("window_s", tl.window_s())
        .opt_num("hit_ratio_in_windows", tl.in_windows.hit_ratio())
        .num("qps_in_windows", tl.qps_in_windows().unwrap_or(0.0))
        .num("p95_in_windows_us", inside.p95_us)
        .num("p99_in_windows_us", inside.p99_us)
        .int("cache_misses_in_windows", tl.in_windows.misses)
        .opt_num("misses_per_op_in_windows", tl.in_windows.misses_per_op())
        .opt_num(
            "miss_ratio_in_windows",
            tl.in_windows.hit_ratio().map(|h| 1.0 - h),
        )
        .opt_num("qps_outside_windows", tl.qps_outside())
        .int("invalidations", run.measured.invalidations)
        .num("mean_us", all.mean_us)
        .int("prefetched_blocks", run.measured.admitted)
        .int("prefetch_hits", tl.prefetch_hits)
        .int("policy_evictions", run.measured.policy_evictions)
        .int("flushes", run.measured.flushes)
        .int("compactions", run.measured.compactions)
        .int("moves", run.measured.moves)
        .opt_num("hit_ratio_with_index_filter", tl.all.hit_ratio_with_meta())
        .opt_num(
            "hit_ratio_with_index_filter_in_windows",
            tl.in_windows.hit_ratio_with_meta(),
        )
        .int("index_filter_hits", tl.all.meta_hits)
        .int("index_filter_misses", tl.all.meta_misses)
        .opt_num("reads_without_io_ratio", tl.all.reads_without_io_ratio())
        .num("wall_s", run.measured.wall_s);
    if let Some(l) = &run.leaper {
        row = l.fields(row);
    }
    row.build()
}

/// The rows of one workload: every run's intervals, then every run's summary (without the
/// fields [`beside::complete`] fills in).
pub(crate) fn workload_rows(w: &WorkloadRuns) -> Vec<Row> {
    let mut rows = Vec::new();
    for run in &w.runs {
        rows.extend(
            run.timeline
                .interval_rows(&dims(w.workload, run, w.interval_s, w.clients)),
        );
    }
    for run in &w.runs {
        rows.push(summary_row(w, run));
    }
    rows
}

/// The note on a workload's calibration and training pass.
pub(crate) fn workload_note(w: &WorkloadRuns, setup: &KvSetup) -> String {
    let bg: Vec<String> = w
        .runs
        .iter()
        .map(|r| format!("{} {}", r.policy.name(), r.ratios.background_ops))
        .collect();
    let mut note = format!(
        "{}: warm-up of {} operations ({} flushes and compactions, {:.3} virtual s); interval {} = {:.3} ms of \
         virtual time, so a run of {} intervals lasts {:.3} s; background operations per run: {}.",
        w.workload,
        w.training.ops,
        w.training.background_ops,
        w.training.secs,
        if setup.interval_s > 0.0 { "(set)" } else { "(calibrated)" },
        w.interval_s * 1e3,
        setup.intervals,
        w.interval_s * setup.intervals as f64,
        bg.join(", ")
    );
    if let Some(t) = &w.trained {
        note += " ";
        note += &t.note();
    }
    note
}

/// The fjall peer's op counts matched with `matched`'s run after a warm-up of `warmup_ops`.
pub(crate) fn peer_plan_of(setup: &KvSetup, warmup_ops: u64, matched: &PolicyRun) -> crate::peer::rows::PeerPlan {
    crate::peer::rows::PeerPlan::new(
        warmup_ops,
        matched.policy.name(),
        matched.timeline.all.ops,
        setup.intervals,
    )
}

/// The fjall peer of one workload: fjall on the same workload spec, seed, cache/data and
/// memtable/data ratios, warm-up ops and (about) the same measured ops as lsmlab's runs, in the
/// same number of intervals of a fixed op count. Rows (`engine = fjall`, `policy = fjall`) and a
/// note with the measured dip alignment. Its phases report progress as `label, <phase>`.
#[cfg(feature = "fjall")]
pub(crate) fn run_fjall_peer(
    setup: &KvSetup,
    workload: Workload,
    plan: &crate::peer::rows::PeerPlan,
    label: &str,
    ctx: &RunContext,
) -> anyhow::Result<(Vec<Row>, String)> {
    let spec = setup.workload_spec(workload, day_ops(setup))?;
    let run = crate::peer::FjallRun::with_fractions(
        spec,
        ctx.seed,
        setup.cache_ratio,
        setup.memtable_ratio,
        plan.warmup_ops,
        plan.measured_ops,
        plan.interval_ops,
    )?;
    let timeline = crate::peer::fjall::run_fjall(&run, ctx.progress, label)?;
    let rows = crate::peer::rows::rows(workload.as_str(), &timeline);
    let note = crate::peer::rows::note(workload.as_str(), plan, &timeline);
    Ok((rows, note))
}

/// Without the `fjall` feature, `fjall_peer = true` is refused by validation; this is not reached.
#[cfg(not(feature = "fjall"))]
pub fn run_fjall_peer(
    _setup: &KvSetup,
    _workload: Workload,
    _plan: &crate::peer::rows::PeerPlan,
    _label: &str,
    _ctx: &RunContext,
) -> anyhow::Result<(Vec<Row>, String)> {
    anyhow::bail!("parameter `fjall_peer` = `true`: this lsmlab was built without the `fjall` cargo feature")
}

/// The prefix of the queueing alternative's row kinds (`clients-interval`, `clients-summary`).
pub const QUEUEING_KIND_PREFIX: &str = "clients-";

/// The setup of the queueing alternative, when `queueing_clients` asks for one other than the
/// default run's and it has policies to run (a cell of `cells_by = policy` may leave them to
/// others).
pub fn queueing_setup(cfg: &OnlineConfig) -> Option<KvSetup> {
    let runs = cfg.queueing_clients > 0 && !cfg.queueing_policies.is_empty();
    (runs && cfg.queueing_clients != cfg.setup.clients).then(|| KvSetup {
        clients: cfg.queueing_clients,
        ..cfg.setup.clone()
    })
}

/// Every column of leaper-online's lsmlab rows, defined.
pub fn columns_note() -> String {
    format!(
        "Rows: kind = interval (one per interval and run) and kind = summary (one per workload and policy); the \
         queueing alternative's rows are the same with kind = {QUEUEING_KIND_PREFIX}interval / {QUEUEING_KIND_PREFIX}summary. \
         Every lsmlab row: workload, policy, engine = lsmlab, clients (the clock's closed-loop clients), interval_s \
         (virtual seconds per interval), cache_data_ratio, memtable_data_ratio, background_ops, \
         compaction_cache_ratio (input data blocks per compaction of the measured run / cache pages: how much of \
         the cache one compaction's inputs amount to), cached_inputs_per_compaction (input blocks the cache held \
         when a compaction began, before the policy acted: the cached blocks each compaction retires). Interval rows: \
         interval (0-based), start_s (virtual), ops (operations started in it), qps = ops / interval_s, hit_ratio = \
         cache_hits / (cache_hits + cache_misses) over the data-block reads of those operations (absent when none \
         read a block), mean_us / p95_us / p99_us of their modelled latencies, in_flush / in_compaction = the interval \
         overlaps a flush's / compaction's T1, in_window = a compaction's T1 + T2, cache_hits, cache_misses, \
         prefetch_hits, flushes_started, compactions_started, invalidations (cached blocks of retired runs \
         dropped), prefetched_blocks (output blocks a policy had the cache admit). Summary rows: ops, run_s, \
         hit_ratio and miss_ratio = 1 - hit_ratio (data blocks), qps, p95_us, p99_us, cache_hits, cache_misses; \
         *_in_windows = over the operations that started inside a compaction's T1 + T2 window (the paper's \
         Table 4: 'during and after compactions'): ops_in_windows, window_s (the windows' total length, overlaps \
         merged), hit_ratio_in_windows, qps_in_windows = ops_in_windows / window_s, p95_in_windows_us, \
         p99_in_windows_us, cache_misses_in_windows, misses_per_op_in_windows = cache_misses_in_windows / \
         ops_in_windows (what the claims judge: a raw count over a fixed virtual time charges the faster \
         policy for the operations it served more; every policy runs the same operation stream), \
         miss_ratio_in_windows = 1 - hit_ratio_in_windows; qps_outside_windows = operations outside every flush and \
         compaction window / that time; overhead_pct = (1 - qps_outside_windows / {BASELINE}'s) x 100 (positive \
         = slower; the paper's Table 5 'Overall'); overhead_pct_without_collector = the same for leaper with \
         its modelled collector time (collector_us per operation, single-client clock) taken out of its time \
         outside the windows, i.e. the policy's cache effect alone; invalidations; mean_us = mean modelled \
         latency; latency_spikes = intervals whose mean latency exceeds spike_threshold_us (see the \
         latency-spike note); prefetched_blocks; prefetch_hits = first hits on \
         prefetched blocks; policy_evictions = cached blocks a policy evicted itself (Leaper's phase 1); \
         flushes, compactions (non-trivial), moves (trivial moves); wall_s = the run's wall time on this machine. \
         Hit-ratio definitions reported beside hit_ratio (which counts data blocks only): \
         hit_ratio_with_index_filter (and _in_windows) counts filter-block and index-page lookups as block \
         lookups too, as RocksDB's block-cache hit ratio does with cache_index_and_filter_blocks = true (a run's \
         filter block or index page misses the first time a lookup needs it, then hits: pinned, as RocksDB's \
         pin_l0_filter_and_index_blocks_in_cache and high-priority index blocks keep them; accounting only, \
         nothing priced on the clock), with index_filter_hits / index_filter_misses its counts; \
         reads_without_io_ratio = the share of point and range reads that read nothing from the device \
         (answered by the memtable or by cached blocks only: an operation-level hit ratio, what a row cache \
         in front of the blocks would at best serve). Leaper's summary row also carries: leaper_predictions \
         (key ranges scored by the model over the run), leaper_hot_ranges (those predicted hot), \
         leaper_t1_evictions (cached input blocks phase 1 evicted as cold), leaper_admitted (output blocks \
         phase 2 or the flush prefetch admitted), inference_ms = wall time of the model's predictions per \
         flush or compaction (measured on this machine, varies between runs), inference_nodes = tree nodes \
         those predictions visited per flush or compaction (counted, deterministic), inference_virtual_ms = \
         inference_nodes x {} ns per node, in ms (the modelled inference time per flush or compaction, which \
         the leaper-inference claim judges against the paper's 1-21 ms). Identical op streams per policy: each \
         policy runs as far into the stream as its virtual time allows. The training passes, the models' \
         training and the policies' runs go on up to two worker threads; each builds its own store, stream and \
         clock, so counted and virtual figures do not depend on them (wall times do).",
        learned::NODE_NS
    )
}

impl TypedExperiment for LeaperOnline {
    type Config = OnlineConfig;

    fn meta(&self) -> crate::experiment::Meta {
        crate::experiment::Meta {
            name: "leaper-online",
            paper: PAPER,
            about: "Leaper online: hit ratio, QPS and p95 per interval under each cache warm-up policy, Table 4 in compaction windows, overhead outside them",
            figures: lr::online_figures,
            report: lr::online_report,
        }
    }

    fn memory_estimate(
        &self,
        config: &OnlineConfig,
        _data: &[crate::experiment::DataSpec],
    ) -> Option<crate::experiment::MemoryEstimate> {
        Some(super::memory_estimate(
            &config.setup,
            super::ONLINE_BYTES_PER_RECORD,
            super::ONLINE_BYTES_PER_WARMUP_OP,
            config.leaper.max_training_rows,
            super::Training::BesideStore,
            "leaper-online",
        ))
    }

    /// One cell per workload (`cells_by = workload`): a workload's training passes, calibration,
    /// models and runs (its default, queueing and variant setups, and its fjall peer) use nothing
    /// of another's, and each run draws from the run's seed, so the cells' rows are the whole
    /// run's. At paper scale a workload takes 14 hours or more on 2 cores, so there the default is
    /// a cell per workload and policy run (`cells_by = policy`, [`policy_cells`]): each repeats
    /// its setup's training pass (deterministic, so the same), and the fields that set a run
    /// beside the others of its workload are filled in once the grid is complete
    /// ([`TypedExperiment::complete_rows`]). Replayed traces stay one cell (the traces name the
    /// workloads).
    fn cells(&self, cfg: &OnlineConfig, data: &[crate::experiment::DataSpec]) -> Vec<crate::cells::Cell> {
        if !crate::trace::trace_paths(data).is_empty() {
            return vec![crate::cells::Cell::whole()];
        }
        match cfg.cells_by {
            CellsBy::Workload => crate::cells::Cell::grid(&[("workloads", cfg.workloads.len())]),
            CellsBy::Policy => policy_cells(cfg),
        }
    }

    fn repeat_refusal(&self) -> Option<&'static str> {
        Some(
            "its interval rows carry flags (in_flush, in_compaction, in_window) that move with the seed, so \
             the rows of two repetitions do not pair up; run it once per --seed instead and set the results \
             side by side (lsmlab compare A.json B.json)",
        )
    }

    /// The spike thresholds and spikes, and the overheads against the baseline, over every run of
    /// a workload ([`beside::complete`]); a `cells_by = policy` cell leaves them to this.
    fn complete_rows(&self, cfg: &OnlineConfig, rows: &mut Vec<Row>) -> anyhow::Result<()> {
        beside::complete(rows, cfg.setup.spike_factor, cfg.setup.collector_us);
        Ok(())
    }

    fn defaults(&self, scale: Scale) -> OnlineConfig {
        OnlineConfig {
            workloads: Workload::ALL.to_vec(),
            policies: WarmUpKind::ALL.to_vec(),
            setup: KvSetup::defaults(scale),
            leaper: LeaperSettings::defaults(scale),
            fjall_peer: fjall_peer_default(),
            queueing_clients: QUEUEING_CLIENTS,
            queueing_policies: queueing_policies_default(),
            variants: variants_default(),
            variant_policies: variant_policies_default(),
            cells_by: if scale == Scale::Paper {
                CellsBy::Policy
            } else {
                CellsBy::Workload
            },
        }
    }

    fn run(&self, cfg: &OnlineConfig, ctx: &RunContext) -> anyhow::Result<RunOutput> {
        // Replayed traces (`--trace`) replace the generated streams: the run's workloads become the
        // traces' (their fjall peer, which draws its own stream, is not run).
        let traces = crate::trace::kv_traces(ctx.data, &|w| cfg.setup.workload_spec(w, day_ops(&cfg.setup)))?;
        let mut replayed;
        let cfg = if traces.is_empty() {
            cfg
        } else {
            replayed = cfg.clone();
            replayed.workloads = traces.iter().map(|t| t.workload).collect();
            replayed.fjall_peer = false;
            // A variant changes how keys are drawn or how many records there are: a trace fixes both.
            replayed.variants = Vec::new();
            &replayed
        };
        let trace_of = |w: Workload| traces.iter().find(|t| t.workload == w).cloned();
        let peer_steps = usize::from(cfg.fjall_peer) * crate::peer::FJALL_PEER_STEPS;
        let queueing = queueing_setup(cfg);
        let queueing_steps = if queueing.is_some() {
            cfg.queueing_policies.len() + 2
        } else {
            0
        };
        let variant_steps = cfg.variants.len() * (cfg.variant_policies.len() + 2);
        // A `cells_by = policy` cell of the queueing alternative or a variant runs no default policy.
        let default_steps = if cfg.policies.is_empty() {
            0
        } else {
            cfg.policies.len() + 2 + peer_steps
        };
        ctx.progress
            .set_total(cfg.workloads.len() * (default_steps + queueing_steps + variant_steps));
        let mut out = RunOutput {
            notes: cfg.setup.notes(),
            ..RunOutput::default()
        };
        out.notes.extend(learned::notes(&cfg.leaper));
        out.notes.extend(traces.iter().map(|t| replay_note(t, ctx.seed)));
        let mut cells = cfg
            .workloads
            .iter()
            .filter(|_| !cfg.policies.is_empty())
            .map(|&workload| {
                Cell::new(
                    &cfg.setup,
                    &cfg.leaper,
                    workload,
                    &cfg.policies,
                    cfg.setup.cache_ratio,
                    &|spec| Ok(spec),
                    workload.as_str(),
                    cfg.fjall_peer,
                )
                .map(|c| Cell {
                    trace: trace_of(workload),
                    ..c
                })
            })
            .collect::<anyhow::Result<Vec<_>>>()?;
        let defaults = cells.len();
        if let Some(q) = &queueing {
            for &workload in &cfg.workloads {
                cells.push(Cell {
                    trace: trace_of(workload),
                    ..Cell::new(
                        q,
                        &cfg.leaper,
                        workload,
                        &cfg.queueing_policies,
                        q.cache_ratio,
                        &|spec| Ok(spec),
                        &format!("{workload} clients={}", q.clients),
                        false,
                    )?
                });
            }
        }
        let queueing_end = cells.len();
        let mut variant_of = Vec::new();
        for &v in &cfg.variants {
            for &workload in &cfg.workloads {
                let setup = v.apply(&cfg.setup, workload)?;
                cells.push(Cell {
                    trace: trace_of(workload),
                    ..Cell::new(
                        &setup,
                        &cfg.leaper,
                        workload,
                        &cfg.variant_policies,
                        setup.cache_ratio,
                        &|spec| Ok(spec),
                        &format!("{workload} {v}"),
                        false,
                    )?
                });
                variant_of.push(v);
            }
        }
        let mut queueing_rows = Vec::new();
        let mut queueing_notes = Vec::new();
        let mut variant_rows = Vec::new();
        let mut variant_notes = Vec::new();
        for (i, out_cell) in run_cells(&cells, ctx, &mut out.notes)?.into_iter().enumerate() {
            let CellOutput { runs: w, peer } = out_cell?;
            if i >= queueing_end {
                let v = variant_of[i - queueing_end];
                let setup = &cells[i].setup;
                variant_rows.extend(workload_rows(&w).into_iter().map(|mut r| {
                    let kind = r.get("kind").and_then(|k| k.as_str()).unwrap_or("").to_string();
                    r.insert("kind".into(), format!("{VARIANT_KIND_PREFIX}{kind}").into());
                    r.insert("variant".into(), v.to_string().into());
                    r
                }));
                variant_notes.push(format!("{v}: {}", workload_note(&w, setup)));
                continue;
            }
            if i >= defaults {
                let setup = &cells[i].setup;
                queueing_rows.extend(workload_rows(&w).into_iter().map(|mut r| {
                    let kind = r.get("kind").and_then(|k| k.as_str()).unwrap_or("").to_string();
                    r.insert("kind".into(), format!("{QUEUEING_KIND_PREFIX}{kind}").into());
                    r
                }));
                queueing_notes.push(format!(
                    "clients = {}: {}",
                    setup.clients,
                    workload_note(&w, setup)
                ));
                continue;
            }
            out.rows.extend(workload_rows(&w));
            out.notes.push(workload_note(&w, &cfg.setup));
            if let Some((rows, note)) = peer {
                out.rows.extend(rows);
                out.notes.push(note);
            }
        }
        out.rows.extend(queueing_rows);
        if let Some(q) = &queueing {
            out.notes.push(format!(
                "Queueing alternative (rows kind = {QUEUEING_KIND_PREFIX}interval and {QUEUEING_KIND_PREFIX}summary, \
                 field clients = {}): each workload again under {} with clients = {} instead of 1, its own training \
                 pass, calibration (interval_s, so that a run still holds about {} background operations), model and \
                 runs. {} The claims and Table 4 read the default rows (clients = 1); these rows show what queueing \
                 does to the same comparison.",
                q.clients,
                cfg.queueing_policies
                    .iter()
                    .map(|p| p.name())
                    .collect::<Vec<_>>()
                    .join(", "),
                q.clients,
                q.background_ops_per_run,
                q.clients_note(),
            ));
            out.notes.extend(queueing_notes);
        }
        out.rows.extend(variant_rows);
        if !cfg.variants.is_empty() {
            out.notes.push(format!(
                "Variants (rows kind = {VARIANT_KIND_PREFIX}interval and {VARIANT_KIND_PREFIX}summary, field variant):                  each workload again under {} with one condition changed, its own training pass, calibration, model                  and runs: {}. The claims read the default rows; these rows show which verdicts move with the                  condition.",
                cfg.variant_policies
                    .iter()
                    .map(|p| p.name())
                    .collect::<Vec<_>>()
                    .join(", "),
                cfg.variants
                    .iter()
                    .map(|v| format!("{v} = {}", v.describe()))
                    .collect::<Vec<_>>()
                    .join("; "),
            ));
            out.notes.extend(variant_notes);
        }
        match cfg.cells_by {
            CellsBy::Workload => {
                beside::complete(&mut out.rows, cfg.setup.spike_factor, cfg.setup.collector_us);
            }
            CellsBy::Policy => out.notes.push(
                "cells_by = policy: each policy's run was a cell of its own, after a training pass of its \
                 setup (the same pass in every cell of a workload and setup: it draws from the run's seed). \
                 spike_threshold_us, latency_spikes, overhead_pct and overhead_pct_without_collector set a run \
                 beside the other runs of its workload, so they are filled in once every cell has run (by the \
                 run's last cell, or by lsmlab merge; under --repeat from the repetitions' mean rows); a shard's \
                 own result lacks them."
                    .to_string(),
            ),
        }
        out.notes.push(columns_note());
        if cfg.fjall_peer {
            out.notes.push(
                "fjall peer rows: engine = fjall and policy = fjall (lsmlab's rows: engine = lsmlab). kind = \
                 interval (interval, ops, hit_ratio, ops_per_s and p95_us in wall time, in_flush, in_compaction, \
                 in_window = either, cache_hits / cache_misses = data blocks found in / read into fjall's cache, \
                 flushes, compactions, moves, retired_tables) and kind = summary (hit_ratio, qps and p95_us / \
                 p99_us in wall time, flushes, compactions, hit_ratio_in_windows / hit_ratio_outside_windows over \
                 the window intervals and the others, dips / dips_in_or_after_window / window_or_next_share: the \
                 hit-ratio dips and how many fall in or right after a window interval). They are shown beside \
                 lsmlab's lru, never in Table 4 or the policy figures."
                    .to_string(),
            );
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cell(setup: &KvSetup) -> Cell {
        let settings = LeaperSettings::defaults(Scale::Paper);
        let policies = [WarmUpKind::Lru, WarmUpKind::Leaper];
        Cell::new(setup, &settings, Workload::Synthetic, &policies, setup.cache_ratio, &Ok, "c", false)
            .unwrap()
    }

    #[test]
    fn by_policy_a_cell_runs_one_policy_and_the_peer_runs_beside_lru_only() {
        let mut cfg = LeaperOnline.defaults(Scale::Paper);
        assert_eq!(cfg.cells_by, CellsBy::Policy);
        assert_eq!(LeaperOnline.defaults(Scale::Small).cells_by, CellsBy::Workload);
        cfg.fjall_peer = true;
        let cells = LeaperOnline.cells(&cfg, &[]);
        // Per workload: 5 policies, the queueing pair, 3 variants x 3 policies.
        assert_eq!(cells.len(), 3 * (5 + 2 + 9));
        let map = crate::config::to_map(&cfg).unwrap();
        let mut peers = Vec::new();
        for cell in &cells {
            let narrowed: OnlineConfig = crate::config::from_map(&cell.narrow(&map).unwrap()).unwrap();
            assert_eq!(narrowed.workloads.len(), 1);
            let runs = narrowed.policies.len()
                + usize::from(queueing_setup(&narrowed).is_some()) * narrowed.queueing_policies.len()
                + narrowed.variants.len() * narrowed.variant_policies.len();
            assert_eq!(runs, 1, "{}", cell.label(&map));
            if narrowed.fjall_peer {
                peers.push(cell.label(&map));
            }
        }
        assert_eq!(
            peers,
            ["e-commerce", "messaging", "synthetic"].map(|w| format!("workloads={w} policies=lru"))
        );
        let labels: std::collections::BTreeSet<String> = cells.iter().map(|c| c.label(&map)).collect();
        assert_eq!(labels.len(), cells.len(), "every cell's label is its own");
    }

    #[test]
    fn paper_scale_runs_its_file_device_jobs_one_at_a_time_on_a_24_gib_machine() {
        let paper = KvSetup::defaults(Scale::Paper);
        assert_eq!(paper.device, DeviceKind::File);
        // 50,000,000 records of 200 B values, 18 to a 4 KiB block (16 B header, 16 B slots): the
        // page file of the initial data, and the store's own memory beside it.
        let blocks = paper.records.div_ceil(18);
        let job = page_cache_job_bytes(&[cell(&paper)]);
        assert_eq!(job, blocks * 4096 + paper.records * super::super::FILE_STORE_BYTES_PER_RECORD);
        let gib = 1u64 << 30;
        assert_eq!(pool::workers_within(job, Some(23 * gib)), 1);
        assert_eq!(pool::workers_within(job, Some(64 * gib)), pool::workers());
        // The memory device's pages are in the run's memory estimate: nothing more is asked.
        let small = KvSetup::defaults(Scale::Small);
        assert_eq!(small.device, DeviceKind::Mem);
        assert_eq!(page_cache_job_bytes(&[cell(&small)]), 0);
        assert_eq!(page_cache_job_bytes(&[cell(&small), cell(&paper)]), job, "the largest job");
    }

    #[test]
    fn the_page_files_disk_is_their_grown_size_per_job_side_by_side() {
        let paper = KvSetup::defaults(Scale::Paper);
        let file = paper.records.div_ceil(18) * 4096;
        let grown = (file as f64 * PAGE_FILE_GROWTH).ceil() as u64;
        let one = page_file_disk(&[cell(&paper)], 1).unwrap();
        assert_eq!(one, (paper.file_dir(), grown, 1), "one job at a time");
        // Two workers: two stores at once, of one cell's policies or of two cells.
        let two = page_file_disk(&[cell(&paper)], 2).unwrap();
        assert_eq!(two, (paper.file_dir(), grown, 2));
        // About 40 GB per paper-scale store: refused by name where less is free.
        assert!(grown > 39_000_000_000 && grown < 41_000_000_000, "{grown}");
        let small = KvSetup::defaults(Scale::Small);
        assert_eq!(page_file_disk(&[cell(&small)], 2), None, "the memory device needs no disk");
        check_page_file_disk(&[cell(&small)], 2).unwrap();
    }
}
