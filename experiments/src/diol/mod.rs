//! The DIOL experiments (`docs/papers/diol.md#the-project-in-brief`): an IoTDB-like memory level
//! against DIOL's delay memtables for out-of-order time series, on lsmlab's time-series store
//! ([`lsmlab_engine::series`]).
//!
//! - `diol` ([`layouts`]): per workload, O3 ratio, delay model and layout, one run: insert time and
//!   the counted I/O the paper reports (disk reads, points read from disk) beside page reads and
//!   writes, flushes, files and peak memory;
//! - `diol-compaction` ([`compaction`]): the same with the disk compaction DIOL left as future
//!   work, counting what it rewrites;
//! - `diol-sizing` ([`sizing`]): delay-memtable size and count swept against the O3 ratio under a
//!   fixed memory budget (DIOL's proposed dynamic sizing), with the best setting per ratio.
//!
//! What every experiment shares lives here: the stream and store settings ([`Setup`]), scaled so
//! that the memory budget stays the authors' fraction of the data (384 MiB for 100M points of 12
//! bytes) and a delay keeps its size against a memtable, and one measured run (`run_cell`).

mod compaction;
pub(crate) mod layouts;
mod report;
mod sizing;

use crate::plot::FixedStyle;
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use anyhow::{bail, Context};
use lsmlab_engine::series::{
    Layout, M1Pick, SeriesConfig, SeriesStats, SeriesStore, AUTHORS_POINT_BYTES, PAPER_BUDGET_BYTES,
    PAPER_POINTS,
};
use lsmlab_engine::storage::{Device, IoStats, MemDevice};
use lsmlab_workloads::ts::{
    build_ops, generate_stream, load_delays, out_of_order_points, DelayModel, OpsSpec, StreamSpec, TsOp,
    TsWorkload,
};

use crate::config::{check, check_items};
use crate::experiment::{MemoryEstimate, RowBuilder, RunContext, Scale};

/// The paper's name in result files and claims.
pub const PAPER: &str = "DIOL";

/// This paper as the registry lists it (see `lsmlab_harness::paper`).
pub fn paper() -> lsmlab_harness::paper::Paper {
    lsmlab_harness::paper::Paper {
        id: "diol",
        title: PAPER,
        kind: lsmlab_harness::paper::PaperKind::Paper,
        experiments: vec![
            &layouts::DiolLayouts,
            &compaction::DiolCompaction,
            &sizing::DiolSizing,
        ],
        claims: Some(("diol.json", include_str!("../../claims/diol.json"))),
        traces: vec![&crate::trace::DiolTraces],
        styles: const {
            &[
                FixedStyle::colored("iotdb", 9),
                FixedStyle::colored("iotdb-real", 19),
                FixedStyle::colored("diol", 1),
                FixedStyle::colored("diol-expired-ttl", 0),
            ]
        },
        figures: report::figure_specs,
    }
}

/// The delay models by name.
pub const DELAY_MODELS: [&str; 3] = ["diol", "lognormal", "file"];

/// The default file of real delays, relative to the working directory (the repository root).
pub const DEFAULT_DELAY_FILE: &str = "../shared/data/machinery_sensor_delays_ms.txt.gz";

lsmlab_harness::config! {
    /// Settings every DIOL experiment shares (flattened into each config).
    pub struct Setup {
        /// points of the one series, timestamps 1..=points (the paper: 100M)
        pub points: u64,
        /// out-of-order ratios, each in [0, 1) (the paper: 0.1, 0.2, 0.3)
        pub o3_ratios: Vec<f64>,
        /// delay models: diol (the authors' runs-and-singles mixture), lognormal, file (real delays; --data
        /// replaces delay_file)
        pub delay_models: Vec<String>,
        /// memory levels: iotdb (the authors' baseline), iotdb-real (real IoTDB's sequence rule), diol
        pub layouts: Vec<String>,
        /// file of delays (one integer per line, plain or gzip) for the file model; skipped with a note when
        /// absent
        pub delay_file: String,
        /// mu of the lognormal delays (Separation or Not: 4)
        pub lognormal_mu: f64,
        /// sigma of the lognormal delays (Separation or Not: 1.5)
        pub lognormal_sigma: f64,
        /// multiply bounded delays and range lengths by points/100M so they keep their size against a
        /// memtable
        pub scale_delays: bool,
        /// factor on the memory budget (1 = 384 MiB per 100M points, as the authors ran)
        pub memory_scale: f64,
        /// device page size in bytes
        pub page_size: u64,
        /// fraction of the points, back from the newest, that the recent workload reads
        pub recent_window: f64,
        /// DIOL M1 pick rules run: exact-zero-ttl (the authors' code; labelled diol), expired-ttl (labelled
        /// diol-expired-ttl)
        pub diol_m1_picks: Vec<String>,
    }
}

/// One memory level to run: its row label, layout and store configuration.
pub(crate) struct Variant {
    pub label: String,
    pub layout: Layout,
    pub config: SeriesConfig,
}

/// The M1 pick called `name`.
fn m1_pick(name: &str) -> Option<M1Pick> {
    [M1Pick::ExactZeroTtl, M1Pick::ExpiredTtl]
        .into_iter()
        .find(|p| p.name() == name)
}

/// Memory a DIOL run needs besides its points (the binary, the delay model, the memtables of the
/// default budget at small sizes), rounded up from the peak RSS of tiny runs.
const RUN_BASE_BYTES: u64 = 16 << 20;

impl Setup {
    /// The run's peak memory: one store at a time holds the series' points on its memory device
    /// (with the pages compaction rewrites), beside the generated arrival stream and operations, so
    /// the peak grows with `points`; `bytes_per_point` is the experiment's measured slope (peak RSS
    /// between 20,000 and 200,000 points at tiny, every layout and workload).
    pub fn memory_estimate(&self, bytes_per_point: u64) -> MemoryEstimate {
        MemoryEstimate {
            bytes: self.points * bytes_per_point + RUN_BASE_BYTES,
            basis: format!(
                "{} points x {bytes_per_point} B, measured per point, + {} MiB",
                self.points,
                RUN_BASE_BYTES >> 20
            ),
        }
    }

    /// The setup at `scale`: the authors' ratios with the point count scaled.
    pub fn defaults(scale: Scale) -> Setup {
        Setup {
            points: match scale {
                Scale::Tiny => 20_000,
                Scale::Small => 500_000,
                Scale::Paper => PAPER_POINTS,
            },
            o3_ratios: vec![0.1, 0.2, 0.3],
            delay_models: DELAY_MODELS.iter().map(|s| s.to_string()).collect(),
            layouts: Layout::ALL.iter().map(|l| l.name().to_string()).collect(),
            delay_file: DEFAULT_DELAY_FILE.into(),
            lognormal_mu: 4.0,
            lognormal_sigma: 1.5,
            scale_delays: true,
            memory_scale: 1.0,
            page_size: 4096,
            recent_window: 0.3,
            diol_m1_picks: vec![
                M1Pick::ExactZeroTtl.name().into(),
                M1Pick::ExpiredTtl.name().into(),
            ],
        }
    }

    /// Refuses a setup no run can use, naming the parameter and the accepted values.
    pub fn validate(&self) -> anyhow::Result<()> {
        check("points", self.points, self.points >= 4, "at least 4")?;
        check_items(
            "o3_ratios",
            &self.o3_ratios,
            |r| (0.0..1.0).contains(r),
            "ratios in [0, 1)",
        )?;
        check_items(
            "delay_models",
            &self.delay_models,
            |m| DELAY_MODELS.contains(&m.as_str()),
            "diol, lognormal or file",
        )?;
        check_items(
            "layouts",
            &self.layouts,
            |l| Layout::parse(l).is_some(),
            "iotdb, iotdb-real or diol",
        )?;
        check(
            "lognormal_sigma",
            self.lognormal_sigma,
            self.lognormal_sigma >= 0.0 && self.lognormal_sigma.is_finite(),
            "a finite non-negative number",
        )?;
        check(
            "lognormal_mu",
            self.lognormal_mu,
            self.lognormal_mu.is_finite(),
            "a finite number",
        )?;
        check(
            "memory_scale",
            self.memory_scale,
            self.memory_scale > 0.0 && self.memory_scale.is_finite(),
            "a positive number",
        )?;
        check(
            "page_size",
            self.page_size,
            (64..=1 << 20).contains(&self.page_size),
            "64 to 1048576 bytes",
        )?;
        check_items(
            "diol_m1_picks",
            &self.diol_m1_picks,
            |p| m1_pick(p).is_some(),
            "exact-zero-ttl or expired-ttl",
        )?;
        check(
            "recent_window",
            self.recent_window,
            self.recent_window > 0.0 && self.recent_window <= 1.0,
            "a fraction in (0, 1]",
        )?;
        Ok(())
    }

    /// points / 100M: the factor the authors' sizes are scaled by.
    pub fn data_scale(&self) -> f64 {
        self.points as f64 / PAPER_POINTS as f64
    }

    /// The factor on delays and range lengths.
    pub fn delay_scale(&self) -> f64 {
        if self.scale_delays {
            self.data_scale()
        } else {
            1.0
        }
    }

    /// The memory-level layouts listed, parsed (the names were checked by `validate`).
    pub fn layouts(&self) -> Vec<Layout> {
        self.layouts.iter().filter_map(|l| Layout::parse(l)).collect()
    }

    /// The memory levels to run: every layout, DIOL once per M1 pick rule (the authors' rule is
    /// labelled `diol` wherever it is listed, the other `diol-expired-ttl`).
    pub(crate) fn variants(&self) -> Vec<Variant> {
        let mut out = Vec::new();
        for layout in self.layouts() {
            let config = self.series_config(layout);
            if layout != Layout::Diol {
                out.push(Variant {
                    label: layout.name().into(),
                    layout,
                    config,
                });
                continue;
            }
            for p in self.diol_m1_picks.iter().filter_map(|p| m1_pick(p)) {
                let mut config = config.clone();
                config.diol.m1_pick = p;
                let label = match p {
                    M1Pick::ExactZeroTtl => "diol".to_string(),
                    other => format!("diol-{}", other.name()),
                };
                out.push(Variant {
                    label,
                    layout,
                    config,
                });
            }
        }
        out
    }

    /// The store's configuration for `layout`: the authors' sizes scaled with the data.
    pub fn series_config(&self, layout: Layout) -> SeriesConfig {
        let scaled = (self.points as f64 * self.memory_scale).round().max(1.0) as u64;
        SeriesConfig::paper_scaled(layout, scaled)
    }

    /// Streams per (o3 ratio, delay model) name, generated once and shared by every layout and
    /// workload. The `file` model reads `--data` (the first file) or `delay_file`; when neither
    /// exists it is skipped with a note.
    /// The cell keys of a DIOL run ([`crate::cells`]): `o3_ratios` and `delay_models`, in the
    /// order of the run's loops (`models_first` when the delay model is the outer loop). Each
    /// (ratio, model) draws its own arrival stream and nothing is computed across them. With
    /// `--data` the file model is added to every run's models ([`Setup::delay_models`]), so the
    /// models then stay in one cell.
    pub fn cell_keys(
        &self,
        data: &[crate::experiment::DataSpec],
        models_first: bool,
    ) -> Vec<(&'static str, usize)> {
        let o3 = ("o3_ratios", self.o3_ratios.len());
        if !crate::trace::trace_paths(data).is_empty() {
            // A replayed trace is the run's one stream (Setup::replay): one whole cell.
            return vec![];
        }
        if !data.is_empty() {
            return vec![o3];
        }
        let models = ("delay_models", self.delay_models.len());
        if models_first {
            vec![models, o3]
        } else {
            vec![o3, models]
        }
    }

    /// The delay models to run, by name: generated, or read from the delay file.
    pub fn delay_models(
        &self,
        ctx: &RunContext,
        notes: &mut Vec<String>,
    ) -> anyhow::Result<Vec<(String, DelayModel)>> {
        let mut names = self.delay_models.clone();
        if !ctx.data.is_empty() && !names.iter().any(|n| n == "file") {
            names.push("file".into());
            notes.push("--data given: the file delay model runs on it.".into());
        }
        let mut out = Vec::new();
        for name in names {
            let model = match name.as_str() {
                "diol" => DelayModel::Diol,
                "lognormal" => DelayModel::Lognormal {
                    mu: self.lognormal_mu,
                    sigma: self.lognormal_sigma,
                },
                "file" => {
                    let path = match ctx.data.first() {
                        Some(d) if d.format.as_deref() == Some(crate::data::DELAYS_FORMAT) => d.path.clone(),
                        Some(d) => bail!(
                            "the DIOL experiments read --data as a file of delays (one integer per line): pass \
                             --format {} with {}",
                            crate::data::DELAYS_FORMAT,
                            d.path.display()
                        ),
                        None => {
                            let p = Path::new(&self.delay_file).to_path_buf();
                            if !p.exists() {
                                notes.push(format!(
                                    "delay model file skipped: {} is absent (pass a file of delays with --data).",
                                    p.display()
                                ));
                                continue;
                            }
                            p
                        }
                    };
                    let delays = load_delays(&path)
                        .with_context(|| format!("reading delays from {}", path.display()))?;
                    let mut sorted = delays.clone();
                    sorted.sort_unstable();
                    notes.push(format!(
                        "delay model file: {} delays from {} (median {}, p90 {}, max {}; one point per unit, so \
                         a delay in ms is that many timestamps late before scaling).",
                        sorted.len(),
                        path.display(),
                        sorted[sorted.len() / 2],
                        sorted[sorted.len() * 9 / 10],
                        sorted[sorted.len() - 1]
                    ));
                    DelayModel::Sample(Arc::new(delays))
                }
                other => bail!("unknown delay model {other}"),
            };
            out.push((name, model));
        }
        Ok(out)
    }

    /// A run's replayed trace (`--trace`, [`crate::trace::read_diol`]): the trace's arrival stream
    /// replaces the generated ones, so the setup is narrowed to its out-of-order ratio and delay
    /// model (the rows' `o3_ratio` and `delay_model` say which stream it was), with the streams
    /// holding it and a note. `None` without a trace.
    pub(crate) fn replay(&self, ctx: &RunContext) -> anyhow::Result<Option<Replay>> {
        let Some(t) = crate::trace::diol_trace(ctx.data, self.points)? else {
            return Ok(None);
        };
        let path = crate::trace::trace_paths(ctx.data)[0].display().to_string();
        let mut setup = self.clone();
        setup.o3_ratios = vec![t.o3_ratio];
        setup.delay_models = vec![t.delay_model.clone()];
        let mut streams = Streams::new();
        let n = out_of_order_points(&t.stream);
        let note = format!(
            "Arrival stream replayed from trace {path} (written by `lsmlab gen diol-{}`: o3 ratio {}, {} points), not \
             generated: the trace's stream replaces the o3_ratios x delay_models grid.",
            t.delay_model, t.o3_ratio, t.points
        );
        streams.map.insert(
            ((t.o3_ratio * 1e6).round() as u64, t.delay_model.clone()),
            (t.stream, n),
        );
        // The model is not drawn from: the stream is there already.
        let models = vec![(t.delay_model, DelayModel::Diol)];
        Ok(Some(Replay {
            setup,
            models,
            streams,
            note,
        }))
    }

    /// The arrival order of the points for out-of-order ratio `o3` under `model`.
    pub fn stream(&self, o3: f64, model: &DelayModel, seed: u64) -> anyhow::Result<Vec<u64>> {
        Ok(generate_stream(
            &StreamSpec {
                points: self.points,
                o3_ratio: o3,
                delay: model.clone(),
                delay_scale: self.delay_scale(),
            },
            seed,
        )?)
    }

    /// The operations of `workload` over `stream`: the number of writes and the whole sequence.
    pub fn ops(&self, stream: &[u64], workload: TsWorkload, seed: u64) -> anyhow::Result<(usize, Vec<TsOp>)> {
        Ok(build_ops(
            stream,
            &OpsSpec {
                workload,
                range_scale: self.delay_scale(),
                recent_window: ((self.points as f64 * self.recent_window).round() as u64).max(1),
            },
            seed,
        )?)
    }

    /// The ratios that drive the effect, for every result's notes.
    pub fn ratio_notes(&self) -> Vec<String> {
        let mut notes = vec![format!(
            "Scale: {} points against the authors' 100M (factor {}). Memory budget kept at the authors' fraction of the \
             data: 384 MiB per 100M points of {AUTHORS_POINT_BYTES} bytes (their memtables count a point as \
             sizeof(uint64_t) + sizeof(int)) x memory_scale {}; memtable sizes scale with it, memtable counts do not.{}",
            self.points,
            self.data_scale(),
            self.memory_scale,
            if self.scale_delays {
                " Bounded delays (the mixture's U[1,2000] branches, lognormal and file delays) and range lengths are \
                 multiplied by the same factor (at least 1), so a delay keeps its size against a memtable; the \
                 mixture's U[1,N] branch is relative to N already."
                    .to_string()
            } else {
                " Delays and range lengths are the authors' absolute values (scale_delays = false).".to_string()
            }
        )];
        for layout in self.layouts() {
            let c = self.series_config(layout);
            let (n, d) = capacities(&c);
            notes.push(format!(
                "{}: {} memtable bytes in all = {} points when full ({:.1}% of the data; the authors: {:.1}%); a normal \
                 memtable holds {n} points, a delay memtable {d}{}.",
                layout.name(),
                c.budget_bytes(),
                c.budget_points(),
                100.0 * c.budget_points() as f64 / self.points as f64,
                100.0 * SeriesConfig::paper(layout).budget_points() as f64 / PAPER_POINTS as f64,
                match layout {
                    Layout::Diol => format!(
                        " (1 + {} + {} normal, 1 + {} + {} delay: delay memory holds {} points)",
                        c.diol.normal_m1,
                        c.diol.normal_m2,
                        c.diol.delay_m1,
                        c.diol.delay_m2,
                        d * (1 + c.diol.delay_m1 + c.diol.delay_m2) as u64
                    ),
                    _ => format!(" (2 active + {} sealed)", c.iotdb.immutable_limit),
                }
            ));
        }
        notes
    }

    /// Derived settings for the result's `config.derived`.
    pub fn derived(&self) -> serde_json::Map<String, serde_json::Value> {
        let mut m = serde_json::Map::new();
        m.insert("data_scale".into(), self.data_scale().into());
        m.insert("delay_scale".into(), self.delay_scale().into());
        m.insert(
            "paper_budget_fraction".into(),
            (PAPER_BUDGET_BYTES as f64 / (PAPER_POINTS * AUTHORS_POINT_BYTES) as f64).into(),
        );
        for layout in self.layouts() {
            let c = self.series_config(layout);
            let (n, d) = capacities(&c);
            m.insert(
                format!("{}_budget_points", layout.name()),
                c.budget_points().into(),
            );
            m.insert(format!("{}_normal_memtable_points", layout.name()), n.into());
            m.insert(format!("{}_delay_memtable_points", layout.name()), d.into());
        }
        m
    }
}

/// Points a full normal and a full delay memtable of `c` hold.
pub fn capacities(c: &SeriesConfig) -> (u64, u64) {
    match c.layout {
        Layout::Iotdb | Layout::IotdbReal => {
            let x = c.capacity(c.iotdb.memtable_bytes, c.iotdb.fill);
            (x, x)
        }
        Layout::Diol => (
            c.capacity(c.diol.normal_bytes, c.diol.normal_fill),
            c.capacity(c.diol.delay_bytes, c.diol.delay_fill),
        ),
    }
}

/// What one run measured.
pub(crate) struct Measured {
    pub stats: SeriesStats,
    pub io: IoStats,
    /// Wall time of the timed phase (the second half, reads included), as the authors timed it.
    pub insert_ms: f64,
    pub files: (usize, usize),
    pub point_reads: u64,
    pub range_reads: u64,
}

/// Loads the untimed first half, then runs the timed phase; the value of a point is twice its
/// time, as the authors insert it.
pub(crate) fn run_cell(
    cfg: SeriesConfig,
    page_size: u64,
    stream: &[u64],
    ops: &(usize, Vec<TsOp>),
) -> anyhow::Result<Measured> {
    let dev: Arc<dyn Device> = Arc::new(MemDevice::new(page_size as usize));
    let mut s = SeriesStore::new(cfg, dev)?;
    for &t in &stream[..ops.0] {
        s.insert(0, t, 2 * t as i64)?;
    }
    let (mut point_reads, mut range_reads) = (0, 0);
    let start = Instant::now();
    for op in &ops.1 {
        match *op {
            TsOp::Insert(t) => s.insert(0, t, 2 * t as i64)?,
            TsOp::Get(k) => {
                std::hint::black_box(s.get(0, k)?);
                point_reads += 1;
            }
            TsOp::Range(a, b) => {
                std::hint::black_box(s.range(0, a, b)?);
                range_reads += 1;
            }
        }
    }
    let insert_ms = start.elapsed().as_secs_f64() * 1e3;
    Ok(Measured {
        stats: s.stats(),
        io: s.io(),
        insert_ms,
        files: s.files(),
        point_reads,
        range_reads,
    })
}

/// The row fields every DIOL experiment reports for one run.
pub(crate) fn base_row(
    workload: &str,
    o3: f64,
    delay_model: &str,
    layout: &str,
    points: u64,
    m: &Measured,
    stream_o3_points: u64,
) -> RowBuilder {
    RowBuilder::new()
        .str("workload", workload)
        .num("o3_ratio", o3)
        .str("delay_model", delay_model)
        .str("layout", layout)
        .int("points", points)
        .num("insert_ms", m.insert_ms)
        .int("disk_reads", m.stats.disk_reads)
        .int("disk_read_points", m.stats.disk_read_points)
        .int("page_reads", m.io.page_reads)
        .int("page_writes", m.io.page_writes)
        .int("flushes", m.stats.flushes)
        .int("files_final", (m.files.0 + m.files.1) as u64)
        .int("delay_files_final", m.files.1 as u64)
        .int("memory_peak_bytes", m.stats.memory_peak_bytes)
        .int("point_reads", m.point_reads)
        .int("range_reads", m.range_reads)
        .int("lookup_page_reads", m.stats.lookup_page_reads)
        .int("delayed_inserts", m.stats.delayed_inserts)
        .int("stream_o3_points", stream_o3_points)
        .int("memory_compaction_points", m.stats.memory_compaction_points)
        .int("flush_pages_written", m.stats.flush_pages_written)
}

/// What a run replays from a trace ([`Setup::replay`]).
pub(crate) struct Replay {
    pub setup: Setup,
    pub models: Vec<(String, DelayModel)>,
    pub streams: Streams,
    pub note: String,
}

/// Arrival streams keyed by (o3 ratio in per-mille, model name): a replayed trace's stream, or
/// generated when a run asks for it.
pub(crate) struct Streams {
    map: BTreeMap<(u64, String), (Vec<u64>, u64)>,
}

impl Streams {
    pub fn new() -> Streams {
        Streams { map: BTreeMap::new() }
    }

    /// The stream and its measured out-of-order points, handed over: the caller drops it when its
    /// cell is done, so a run holds one stream at a time (8 bytes a point; at paper scale the nine
    /// streams of the default grid, kept, would be 7.2 GB). Every experiment asks for each (ratio,
    /// model) once.
    pub fn take(
        &mut self,
        setup: &Setup,
        o3: f64,
        name: &str,
        model: &DelayModel,
        seed: u64,
    ) -> anyhow::Result<(Vec<u64>, u64)> {
        let key = ((o3 * 1e6).round() as u64, name.to_string());
        if let Some(held) = self.map.remove(&key) {
            return Ok(held);
        }
        let s = setup.stream(o3, model, seed)?;
        let n = out_of_order_points(&s);
        Ok((s, n))
    }
}

impl Default for Streams {
    fn default() -> Self {
        Streams::new()
    }
}

/// The notes every DIOL result carries about what is counted and how.
pub fn method_notes() -> Vec<String> {
    vec![
        "Counted quantities are primary: disk_reads = lookups (point or range) that read at least one page from disk \
         (the authors count a lookup that found data on disk); disk_read_points = points in the queried time range \
         read from disk pages, every version (their diskReadData); page_reads / page_writes = the device's counted \
         4 KiB-page I/O over the whole run; flushes = memtables flushed; files_final = files left (delay_files_final \
         of them delay or unsequence files); memory_peak_bytes = most points held in memtables at once x 12 bytes."
            .into(),
        "insert_ms is wall time of the timed phase (the stream's second half with its reads), as the authors timed \
         it; the first half is loaded untimed. It is recorded beside the counts and varies between runs and machines."
            .into(),
        "Deviations from the authors' C++ (lsmlab_engine::series docs): flushes are synchronous; reads also search the \
         active memtables; range reads search every memtable (the C++ compares memtable ids with timestamps in its \
         level filters and so skips memory for almost every range); all TTL-expired M2 memtables are flushed at once; \
         a late point arrives after the in-order point whose time (not whose rank) is its time plus its delay."
            .into(),
        "DIOL's M1 pick: the authors' code merges the M1 normal memtable whose TTL is exactly 0; in steady state that \
         is always the one sealed three seals earlier, so the first two normal memtables are never picked and stay in \
         memory for the whole run, serving every read of the series' oldest points. Rows labelled diol run that rule; \
         diol-expired-ttl picks the memtable whose TTL ran out first, so the comparison shows what the quirk is worth."
            .into(),
    ]
}

#[cfg(test)]
mod tests {
    use super::compaction::DiolCompaction;
    use super::layouts::DiolLayouts;
    use super::sizing::DiolSizing;
    use super::*;
    use crate::experiment::{DataSpec, Row, RunOutput, TypedExperiment};
    use crate::progress::Progress;

    fn run<E: TypedExperiment>(e: &E, cfg: &E::Config, data: &[DataSpec]) -> anyhow::Result<RunOutput> {
        let progress = Progress::silent();
        let ctx = RunContext {
            scale: Scale::Tiny,
            seed: 7,
            data,
            progress: &progress,
        };
        e.run(cfg, &ctx)
    }

    fn n(r: &Row, k: &str) -> u64 {
        r.get(k)
            .and_then(|v| v.as_u64())
            .unwrap_or_else(|| panic!("row lacks {k}: {r:?}"))
    }

    fn s(r: &Row, k: &str) -> String {
        r.get(k).and_then(|v| v.as_str()).unwrap_or_default().to_string()
    }

    fn small_setup(setup: &mut Setup) {
        setup.points = 6000;
        setup.delay_models = vec!["diol".into(), "lognormal".into()];
    }

    #[test]
    fn layout_rows_carry_the_fields_and_counts_agree() {
        let mut cfg = DiolLayouts.defaults(Scale::Tiny);
        small_setup(&mut cfg.setup);
        let out = run(&DiolLayouts, &cfg, &[]).unwrap();
        // 4 workloads x 3 ratios x 2 models x 4 variants (diol twice: two M1 picks).
        assert_eq!(out.rows.len(), 4 * 3 * 2 * 4);
        for r in &out.rows {
            for k in [
                "points",
                "disk_reads",
                "disk_read_points",
                "page_reads",
                "page_writes",
                "flushes",
                "files_final",
                "memory_peak_bytes",
            ] {
                n(r, k);
            }
            assert!(r.get("insert_ms").and_then(|v| v.as_f64()).is_some());
            let reads = n(r, "point_reads") + n(r, "range_reads");
            assert!(n(r, "disk_reads") <= reads, "{r:?}");
            assert!(n(r, "page_reads") >= n(r, "disk_reads"));
            assert_eq!(
                n(r, "page_writes"),
                n(r, "flush_pages_written"),
                "no compaction here"
            );
            if s(r, "workload") == "A" {
                assert_eq!(reads, 0);
                assert_eq!(n(r, "page_reads"), 0);
            } else {
                assert!(reads > 0, "{r:?}");
            }
            assert!(n(r, "flushes") >= n(r, "files_final"));
        }
        let notes = out.notes.join("\n");
        assert!(notes.contains("26.8% of the data") && notes.contains("delay memory holds"));
    }

    #[test]
    fn the_file_model_reads_delays_given_with_data_and_rejects_other_formats() {
        let path = std::env::temp_dir().join(format!("lsmlab-diol-delays-{}.txt", std::process::id()));
        std::fs::write(&path, "2000\n70000\n65000\n").unwrap();
        let mut cfg = DiolLayouts.defaults(Scale::Tiny);
        cfg.setup.points = 3000;
        cfg.setup.delay_models = vec!["diol".into()];
        cfg.workloads = vec!["A".into()];
        let spec = |format: &str| DataSpec {
            path: path.clone(),
            format: Some(format.into()),
            columns: None,
            skip_malformed: false,
        };
        let out = run(&DiolLayouts, &cfg, &[spec("delays")]).unwrap();
        assert!(out.rows.iter().any(|r| s(r, "delay_model") == "file"));
        assert!(out.notes.iter().any(|n| n.contains("3 delays from")));
        let err = run(&DiolLayouts, &cfg, &[spec("csv")]).unwrap_err().to_string();
        assert!(err.contains("--format delays"), "{err}");
        // An absent default file skips the model with a note instead of failing.
        cfg.setup.delay_models = vec!["file".into()];
        cfg.setup.delay_file = "/nonexistent/delays.txt.gz".into();
        let out = run(&DiolLayouts, &cfg, &[]).unwrap();
        assert!(out.rows.is_empty() && out.notes.iter().any(|n| n.contains("skipped")));
    }

    #[test]
    fn compaction_runs_count_rewrites_only_when_on() {
        let mut cfg = DiolCompaction.defaults(Scale::Tiny);
        small_setup(&mut cfg.setup);
        cfg.setup.o3_ratios = vec![0.3];
        let out = run(&DiolCompaction, &cfg, &[]).unwrap();
        let mut compacted = false;
        for r in &out.rows {
            let written = n(r, "compaction_pages_written");
            assert_eq!(n(r, "page_writes"), n(r, "flush_pages_written") + written);
            if s(r, "compaction") == "off" {
                assert_eq!(written, 0);
                assert_eq!(n(r, "delay_files_trigger"), 0);
            }
            compacted |= written > 0;
            if written > 0 {
                assert!(n(r, "delay_files_final") < n(r, "delay_files_trigger"));
            }
        }
        assert!(compacted, "DIOL's small delay files reach a trigger at O3 30%");
    }

    #[test]
    fn sizing_reports_the_best_setting_per_ratio_and_objective() {
        let mut cfg = DiolSizing.defaults(Scale::Tiny);
        cfg.setup.points = 6000;
        let out = run(&DiolSizing, &cfg, &[]).unwrap();
        let best: Vec<&Row> = out.rows.iter().filter(|r| s(r, "kind") == "best").collect();
        assert_eq!(best.len(), cfg.setup.o3_ratios.len() * 3);
        for b in best {
            let o3 = b["o3_ratio"].as_f64().unwrap();
            let objective = s(b, "objective");
            let min = out
                .rows
                .iter()
                .filter(|r| s(r, "kind") == "cell" && r["o3_ratio"].as_f64() == Some(o3))
                .map(|r| n(r, &objective))
                .min()
                .unwrap();
            assert_eq!(b["value"].as_f64(), Some(min as f64));
        }
        assert!(out.rows.iter().any(|r| s(r, "kind") == "reference"));
    }

    #[test]
    fn streams_and_budgets_scale_with_the_points() {
        let mut setup = Setup::defaults(Scale::Small);
        setup.points = 1_000_000;
        for layout in Layout::ALL {
            let c = setup.series_config(layout);
            let frac = c.budget_points() as f64 / setup.points as f64;
            let paper = SeriesConfig::paper(layout).budget_points() as f64 / PAPER_POINTS as f64;
            assert!((frac - paper).abs() < 0.005, "{layout:?}: {frac} vs {paper}");
        }
        assert_eq!(setup.delay_scale(), 0.01);
        setup.scale_delays = false;
        assert_eq!(setup.delay_scale(), 1.0);
    }
}
