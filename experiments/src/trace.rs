//! Operation traces: `lsmlab gen WORKLOAD --out FILE` writes the operation stream an experiment
//! runs as CSV, so another system can replay exactly what lsmlab ran, and `lsmlab run --trace FILE`
//! replays one instead of generating it.
//!
//! A trace is plain text: a first line `# lsmlab-trace/1 {...}` whose JSON says what the stream is
//! (workload, the experiment whose stream it is, scale, seed, the parameters that shaped it and, for
//! a RUM stream, the dataset's name and extent), then a CSV header with the column names, then one
//! operation per line. Lines are written as they are generated (never the whole stream in memory
//! twice) into a temporary file renamed into place once complete.
//!
//! The format is the harness's (`lsmlab_harness::trace`); the streams are the papers', one
//! [`TraceFamily`] each (listed by [`workloads`], registered with its paper), and each says who
//! replays it:
//! - `rum-<dataset>` (gowalla, chicago, berlinmod): the location records the RUM-tree experiments
//!   replay, in time order (LSM RUM-tree paper Section 6: each record is an insert of a new object
//!   or an update of a known one, replayed in time order). Columns `op,oid,time,x,y`; `op` is
//!   `insert` for an object's first record and `update` after. `x`, `y` are printed in Rust's
//!   shortest round-trip form, so they read back bit for bit. Replayed by every rum-* experiment
//!   under the dataset name and extent it records ([`load_rum_traces`]).
//! - `leaper-<workload>` (synthetic, e-commerce, messaging): the key-value stream every Leaper
//!   policy draws from (Leaper Table 2). Columns `seq,day,time_of_day,op,key,hi`: `op` is
//!   get, scan (keys `key..=hi`), update or insert; a write stores the value of version `seq + 1`.
//!   The stream is endless and a run's length is decided on its virtual clock, so `gen` writes
//!   `--ops N`, by default [`LEAPER_DEFAULT_WARMUPS`] warm-up phases. Replayed by leaper-online and
//!   leaper-model: each trace's workload replaces the config's `workloads` (every policy's run,
//!   the training pass and the queueing alternative read the trace from its start, line by line);
//!   a trace whose `records`, `value_bytes` or day length (`warmup_ops / 2`) differ from the run's
//!   is refused naming the `--set` that fixes it (they shape the bulk-loaded data and the values
//!   written); a trace that ends before the run is done stops it. The fjall peer draws its own
//!   stream, so it is not run on a replay. leaper-sensitivity varies the stream per cell and
//!   replays none.
//! - `ycsb-a` .. `ycsb-f`: the run phase of a YCSB core workload as oep7-ycsb runs it (warm-up and
//!   measured operations). Columns `op,key,field,len,value`: read, update (field, value),
//!   insert, scan (len records from key), rmw (read-modify-write of field with value); values are
//!   hex-encoded bytes. Replayed by oep7-ycsb: the traces' workloads replace the config's (in
//!   YCSB's order, on the same loads); `records`, `operations` and `warmup_operations`
//!   (`scan_operations` for E) must be the run's.
//! - `diol-<delay model>` (diol, lognormal, file): the arrival stream of one series at one
//!   out-of-order ratio (`--set o3_ratios=R`), as the DIOL experiments insert it. Columns
//!   `arrival,time`: the arrival order from 0 and the point's generation time (its timestamp,
//!   1..=points, each once). Replayed by `diol`: the trace's stream replaces the o3 ratio x delay
//!   model grid, its rows labelled with the trace's ratio and model (so they match the generated
//!   run's rows at that ratio and model); `points` must be the run's; one trace per run.
//!
//! Every line of a trace is checked before a run starts ([`check_for`], before the run is resolved): a
//! bad one is an error naming the file, the line and the field, so a bad trace writes no result.
//! A Leaper or YCSB trace is read one line at a time, never held; a RUM or DIOL trace is read into
//! the dataset or arrival stream the experiment holds anyway.

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context};
use lsmlab_engine::geom::{Point, Rect};
use lsmlab_workloads::{Record, Trajectories};
use serde_json::{json, Value};

use crate::config::Overlay;
use crate::experiment::{DataSpec, RunContext};
use crate::progress::Progress;

/// The `--format` a replayed trace carries among a run's data files.
pub use crate::data::TRACE_FORMAT;

pub use lsmlab_harness::trace::{
    must_match, param_u64, read_header, trace_paths, write_header as header, Fields, GenRequest, Lines,
    TraceFamilies, TraceFamily, MAGIC, MAX_LINE,
};

/// The registered papers' trace families ([`crate::registry::trace_families`]), as the harness
/// dispatches over them.
pub fn families() -> TraceFamilies<'static> {
    crate::registry::trace_families()
}

/// Every workload `lsmlab gen` writes, with what it is.
pub fn workloads() -> Vec<(&'static str, &'static str)> {
    families().workloads()
}

/// Writes the trace of `req.workload` to `out` atomically; returns the operations written.
pub fn generate(req: &GenRequest, out: &Path) -> anyhow::Result<u64> {
    families().generate(req, out)
}

/// Checks that every trace is one `experiment` replays and reads each whole, before anything runs.
pub fn check_for(experiment: &str, traces: &[PathBuf]) -> anyhow::Result<()> {
    families().check_for(experiment, traces)
}

/// Reads a trace whole, checking every line (what `lsmlab run` does before anything runs).
pub fn check(path: &Path) -> anyhow::Result<()> {
    families().check(path)
}

/// The `workload` of a trace's description, one of a known family.
pub fn workload_of(path: &Path, meta: &Value) -> anyhow::Result<String> {
    families().workload_of(path, meta)
}

/// `rum-<dataset>` traces: replayed by every rum-* experiment.
pub struct RumTraces;

impl TraceFamily for RumTraces {
    fn name(&self) -> &'static str {
        "rum"
    }

    fn replayers(&self) -> &'static str {
        "rum-* experiments"
    }

    fn workloads(&self) -> Vec<(&'static str, &'static str)> {
        vec![
            (
                "rum-gowalla",
                "RUM-tree update stream of the gowalla dataset (rum-* experiments)",
            ),
            (
                "rum-chicago",
                "RUM-tree update stream of the chicago dataset (rum-* experiments)",
            ),
            (
                "rum-berlinmod",
                "RUM-tree update stream of the berlinmod dataset (rum-* experiments)",
            ),
        ]
    }

    fn replayed_by(&self, experiment: &str) -> bool {
        experiment.starts_with("rum-")
    }

    fn generate(&self, req: &GenRequest, mut w: &mut dyn Write) -> anyhow::Result<u64> {
        let dataset = req.workload.strip_prefix("rum-").unwrap_or(req.workload);
        gen_rum(req, dataset, &mut w)
    }

    fn check(&self, path: &Path) -> anyhow::Result<()> {
        read_rum(path).map(drop)
    }
}

/// `leaper-<workload>` traces: replayed by leaper-online and leaper-model.
pub struct LeaperTraces;

impl TraceFamily for LeaperTraces {
    fn name(&self) -> &'static str {
        "leaper"
    }

    fn replayers(&self) -> &'static str {
        "leaper-online and leaper-model"
    }

    fn workloads(&self) -> Vec<(&'static str, &'static str)> {
        vec![
            (
                "leaper-synthetic",
                "Leaper key-value stream, synthetic workload (leaper-* experiments)",
            ),
            (
                "leaper-e-commerce",
                "Leaper key-value stream, e-commerce workload (leaper-* experiments)",
            ),
            (
                "leaper-messaging",
                "Leaper key-value stream, messaging workload (leaper-* experiments)",
            ),
        ]
    }

    fn replayed_by(&self, experiment: &str) -> bool {
        matches!(experiment, "leaper-online" | "leaper-model")
    }

    fn refusal(&self, experiment: &str) -> Option<String> {
        (experiment == "leaper-sensitivity").then(|| {
            "its cells each draw a different stream (zipf, range share), which one trace cannot hold; \
             leaper-online and leaper-model replay leaper-<workload> traces"
                .to_string()
        })
    }

    fn generate(&self, req: &GenRequest, mut w: &mut dyn Write) -> anyhow::Result<u64> {
        let workload = req.workload.strip_prefix("leaper-").unwrap_or(req.workload);
        gen_leaper(req, workload, &mut w)
    }

    fn check(&self, path: &Path) -> anyhow::Result<()> {
        KvTrace::open(path)?.check()
    }
}

/// `ycsb-a` .. `ycsb-f` traces: replayed by oep7-ycsb.
pub struct YcsbTraces;

impl TraceFamily for YcsbTraces {
    fn name(&self) -> &'static str {
        "ycsb"
    }

    fn replayers(&self) -> &'static str {
        "oep7-ycsb"
    }

    fn workloads(&self) -> Vec<(&'static str, &'static str)> {
        vec![
            ("ycsb-a", "YCSB workload A run phase (oep7-ycsb)"),
            ("ycsb-b", "YCSB workload B run phase (oep7-ycsb)"),
            ("ycsb-c", "YCSB workload C run phase (oep7-ycsb)"),
            ("ycsb-d", "YCSB workload D run phase (oep7-ycsb)"),
            ("ycsb-e", "YCSB workload E run phase (oep7-ycsb)"),
            ("ycsb-f", "YCSB workload F run phase (oep7-ycsb)"),
        ]
    }

    fn replayed_by(&self, experiment: &str) -> bool {
        experiment == "oep7-ycsb"
    }

    fn generate(&self, req: &GenRequest, mut w: &mut dyn Write) -> anyhow::Result<u64> {
        gen_ycsb(req, &mut w)
    }

    fn check(&self, path: &Path) -> anyhow::Result<()> {
        YcsbTrace::open(path)?.check()
    }
}

/// `diol-<delay model>` traces: replayed by `diol`.
pub struct DiolTraces;

impl TraceFamily for DiolTraces {
    fn name(&self) -> &'static str {
        "diol"
    }

    fn replayers(&self) -> &'static str {
        "diol"
    }

    fn workloads(&self) -> Vec<(&'static str, &'static str)> {
        vec![
            (
                "diol-diol",
                "DIOL arrival stream, the authors' delay mixture, one o3 ratio (diol)",
            ),
            (
                "diol-lognormal",
                "DIOL arrival stream, lognormal delays, one o3 ratio (diol)",
            ),
            (
                "diol-file",
                "DIOL arrival stream, delays drawn from delay_file, one o3 ratio (diol)",
            ),
        ]
    }

    fn replayed_by(&self, experiment: &str) -> bool {
        experiment == "diol"
    }

    fn refusal(&self, experiment: &str) -> Option<String> {
        matches!(experiment, "diol-compaction" | "diol-sizing").then(|| {
            "its streams are not replayed from traces; `diol` replays a diol-<delay model> trace".to_string()
        })
    }

    fn generate(&self, req: &GenRequest, mut w: &mut dyn Write) -> anyhow::Result<u64> {
        let model = req.workload.strip_prefix("diol-").unwrap_or(req.workload);
        gen_diol(req, model, &mut w)
    }

    fn check(&self, path: &Path) -> anyhow::Result<()> {
        read_diol(path).map(drop)
    }
}

/// The columns of a RUM trace.
pub const RUM_COLUMNS: [&str; 5] = ["op", "oid", "time", "x", "y"];

/// The resolved config of `experiment` at the request's scale under its `--set`s and `extra`.
fn resolved(
    experiment: &str,
    req: &GenRequest,
    extra: &[String],
) -> anyhow::Result<crate::config::ConfigMap> {
    let e = crate::registry::find(experiment)?;
    let mut sets = req.sets.to_vec();
    sets.extend(extra.iter().cloned());
    crate::runner::resolve_config(e, req.scale, &Overlay { file: None, sets })
}

fn gen_rum(req: &GenRequest, dataset: &str, w: &mut impl Write) -> anyhow::Result<u64> {
    let map = resolved("rum-update", req, &[format!("datasets={dataset}")])?;
    let cfg: crate::rum::update::UpdateConfig = crate::config::from_map(&map)?;
    let progress = Progress::silent();
    let ctx = RunContext {
        scale: req.scale,
        seed: req.seed,
        data: &[],
        progress: &progress,
    };
    let (mut sets, _) = cfg.index.load_datasets(&ctx)?;
    let t = sets.pop().context("no dataset generated")?;
    let e = t.extent;
    let meta = json!({
        "workload": req.workload, "experiment": "rum-*", "scale": req.scale.to_string(), "seed": req.seed,
        "dataset": t.name, "extent": [e.min.x, e.min.y, e.max.x, e.max.y],
        "params": {"records": map.get("records"), "objects": map.get("objects")},
    });
    header(w, &meta, &RUM_COLUMNS)?;
    let mut seen = std::collections::HashSet::with_capacity(t.records.len().min(1 << 20));
    for r in &t.records {
        let op = if seen.insert(r.oid) { "insert" } else { "update" };
        writeln!(w, "{op},{},{},{},{}", r.oid, r.time, r.point.x, r.point.y)?;
    }
    Ok(t.records.len() as u64)
}

fn gen_leaper(req: &GenRequest, workload: &str, w: &mut impl Write) -> anyhow::Result<u64> {
    let map = resolved("leaper-online", req, &[format!("workloads={workload}")])?;
    let cfg: crate::leaper::online::OnlineConfig = crate::config::from_map(&map)?;
    let setup = &cfg.setup;
    let kind: crate::leaper::Workload = serde_json::from_value(json!(workload))?;
    let spec = setup.workload_spec(kind, crate::leaper::online::day_ops(setup))?;
    let n = req.ops.unwrap_or(LEAPER_DEFAULT_WARMUPS * setup.warmup_ops);
    let meta = json!({
        "workload": req.workload, "experiment": "leaper-*", "scale": req.scale.to_string(), "seed": req.seed,
        "params": {"records": spec.records, "value_bytes": setup.value_bytes, "day_ops": spec.day_ops,
                   "zipf": spec.zipf, "key_dist": spec.keys.name(), "ops": n},
    });
    header(w, &meta, &["seq", "day", "time_of_day", "op", "key", "hi"])?;
    use lsmlab_workloads::kv::KvOp;
    for op in spec.stream(req.seed)?.take(n as usize) {
        let (kind, key, hi) = match op.op {
            KvOp::Get(k) => ("get", k, String::new()),
            KvOp::Scan { lo, hi } => ("scan", lo, hi.to_string()),
            KvOp::Update(k) => ("update", k, String::new()),
            KvOp::Insert(k) => ("insert", k, String::new()),
        };
        writeln!(w, "{},{},{},{kind},{key},{hi}", op.seq, op.day, op.time_of_day)?;
    }
    Ok(n)
}

fn gen_ycsb(req: &GenRequest, w: &mut impl Write) -> anyhow::Result<u64> {
    let map = resolved("oep7-ycsb", req, &[])?;
    let cfg: crate::oep7::ycsb::YcsbConfig = crate::config::from_map(&map)?;
    let workload: lsmlab_workloads::ycsb::Workload =
        req.workload.parse().map_err(|e| anyhow::anyhow!("{e}"))?;
    // As oep7-ycsb runs it: warm-up then measured operations on `records` loaded records (A, B,
    // C, F and D run on the first load, whose key count only D's inserts grow; E on a reload).
    let (operations, warmup) = if workload == lsmlab_workloads::ycsb::Workload::E {
        (cfg.scan_operations, cfg.scan_operations / 2)
    } else {
        (cfg.operations, cfg.warmup_operations)
    };
    let n = warmup + operations;
    let records = cfg.setup.records;
    let meta = json!({
        "workload": req.workload, "experiment": "oep7-ycsb", "scale": req.scale.to_string(), "seed": req.seed,
        "params": {"records": records, "warmup_operations": warmup, "operations": operations},
    });
    header(w, &meta, &["op", "key", "field", "len", "value"])?;
    let mut stream = lsmlab_workloads::ycsb::Stream::new(workload, records, n, req.seed)?;
    use lsmlab_workloads::ycsb::Op;
    for _ in 0..n {
        match stream.next_op() {
            Op::Read { key } => writeln!(w, "read,{key},,,")?,
            Op::Insert { key } => writeln!(w, "insert,{key},,,")?,
            Op::Scan { start, len } => writeln!(w, "scan,{start},,{len},")?,
            Op::Update { key, field, value } => writeln!(w, "update,{key},{field},,{}", hex(&value))?,
            Op::ReadModifyWrite { key, field, value } => writeln!(w, "rmw,{key},{field},,{}", hex(&value))?,
        }
    }
    Ok(n)
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Reads a `rum-<dataset>` trace back into the dataset it was written from (name, extent and
/// records in order). Any bad line is an error naming the file, the line and the field.
pub fn read_rum(path: &Path) -> anyhow::Result<Trajectories> {
    let (meta, columns) = read_header(path)?;
    let p = path.display();
    if columns != RUM_COLUMNS {
        bail!(
            "{p}:2: the columns are `{}`, a RUM trace has `{}`",
            columns.join(","),
            RUM_COLUMNS.join(",")
        );
    }
    let name = meta["dataset"]
        .as_str()
        .with_context(|| format!("{p}:1: the description lacks `dataset`"))?
        .to_string();
    let extent: Vec<f64> = meta["extent"]
        .as_array()
        .map(|a| a.iter().filter_map(Value::as_f64).collect())
        .unwrap_or_default();
    let [x0, y0, x1, y1] = extent[..] else {
        bail!("{p}:1: the description's `extent` is not four numbers");
    };
    if !(x0.is_finite() && y0.is_finite() && x1 > x0 && y1 > y0 && x1.is_finite() && y1.is_finite()) {
        bail!("{p}:1: the description's `extent` [{x0}, {y0}, {x1}, {y1}] is not a box of positive area");
    }
    let mut lines = Lines::open(path)?;
    let mut records = Vec::new();
    let mut seen = std::collections::HashSet::new();
    let mut last_time = i64::MIN;
    while let Some((n, line)) = lines.next_line()? {
        let fields: Vec<&str> = line.split(',').collect();
        if fields.len() != RUM_COLUMNS.len() {
            bail!(
                "{p}:{n}: {} fields, expected {} ({})",
                fields.len(),
                RUM_COLUMNS.len(),
                RUM_COLUMNS.join(",")
            );
        }
        let bad = |col: usize, what: &str| {
            anyhow::anyhow!(
                "{p}:{n}: field `{}`: `{}` is not {what}",
                RUM_COLUMNS[col],
                fields[col]
            )
        };
        let oid: u64 = fields[1]
            .trim()
            .parse()
            .map_err(|_| bad(1, "an object id (an integer >= 0)"))?;
        let time: i64 = fields[2]
            .trim()
            .parse()
            .map_err(|_| bad(2, "a time (an integer)"))?;
        let num = |col: usize| -> anyhow::Result<f64> {
            let v: f64 = fields[col].trim().parse().map_err(|_| bad(col, "a number"))?;
            if !v.is_finite() {
                return Err(bad(col, "a finite number"));
            }
            Ok(v)
        };
        let (x, y) = (num(3)?, num(4)?);
        let first = seen.insert(oid);
        match (fields[0].trim(), first) {
            ("insert", true) | ("update", false) => {}
            ("insert", false) => {
                bail!("{p}:{n}: field `op`: insert of object {oid}, which an earlier line inserted")
            }
            ("update", true) => {
                bail!("{p}:{n}: field `op`: update of object {oid}, which no earlier line inserted")
            }
            (other, _) => bail!("{p}:{n}: field `op`: `{other}` is not insert or update"),
        }
        if time < last_time {
            bail!("{p}:{n}: field `time`: {time} is before the previous line's {last_time} (records are in time order)");
        }
        last_time = time;
        records.push(Record {
            oid,
            time,
            point: Point { x, y },
        });
    }
    if records.is_empty() {
        bail!("{p}: the trace holds no operations");
    }
    let mut t = Trajectories::from_records(name, records);
    t.extent = Rect::new(x0, y0, x1, y1);
    Ok(t)
}

/// The datasets of a run given `--trace` files ([`TRACE_FORMAT`] among its data files): each trace
/// replayed as written, under the dataset name it records. The run's `records` and `objects`
/// must be the trace's (they shaped the stream it holds): a mismatch is refused naming the `--set`
/// that fixes it, rather than replaying a stream of another size under the run's config.
pub fn load_rum_traces(
    ctx: &RunContext,
    records: usize,
    objects: usize,
) -> anyhow::Result<(Vec<Trajectories>, Vec<String>)> {
    let mut out = Vec::new();
    let mut notes = Vec::new();
    for spec in ctx.data {
        if spec.format.as_deref() != Some(TRACE_FORMAT) {
            bail!(
                "{}: --trace and --data cannot be mixed in one run",
                spec.path.display()
            );
        }
        let (meta, _) = read_header(&spec.path)?;
        must_match(
            &spec.path,
            "records",
            param_u64(&spec.path, &meta, "records")?,
            records,
        )?;
        must_match(
            &spec.path,
            "objects",
            param_u64(&spec.path, &meta, "objects")?,
            objects,
        )?;
        let t = read_rum(&spec.path)?;
        notes.push(format!(
            "{}: replayed from trace {} ({} records, {} objects), as written by `lsmlab gen`",
            t.name,
            spec.path.display(),
            t.records.len(),
            t.objects()
        ));
        out.push(t);
    }
    Ok((out, notes))
}

/// A Leaper trace's default length in warm-up phases (`warmup_ops`): a run's length is decided on
/// its virtual clock (the warm-up extended to cover the model's slots, then `intervals` of the
/// calibrated length), so it is known only once run; leaper-online at the scales' defaults used up
/// to 5.6 warm-ups (e-commerce at tiny), leaper-model `days / 2`.
pub const LEAPER_DEFAULT_WARMUPS: u64 = 8;

/// The columns of a Leaper trace.
pub const LEAPER_COLUMNS: [&str; 6] = ["seq", "day", "time_of_day", "op", "key", "hi"];

/// A `leaper-<workload>` trace: its description, checked; [`KvTrace::reader`] replays it.
#[derive(Clone, Debug)]
pub(crate) struct KvTrace {
    pub path: PathBuf,
    /// The workload (`synthetic`, `e-commerce`, `messaging`).
    pub workload: crate::leaper::Workload,
    /// The initial records (ids `0..records`), value bytes, day length and operations it holds.
    pub records: u64,
    pub value_bytes: u64,
    pub day_ops: u64,
    pub ops: u64,
    pub seed: Option<u64>,
}

impl KvTrace {
    /// Reads and checks the description of the Leaper trace at `path`.
    pub fn open(path: &Path) -> anyhow::Result<KvTrace> {
        let (meta, columns) = read_header(path)?;
        let p = path.display();
        let w = workload_of(path, &meta)?;
        let name = w
            .strip_prefix("leaper-")
            .with_context(|| format!("{p}:1: a {w} trace, not a leaper-<workload> one"))?;
        let workload: crate::leaper::Workload = serde_json::from_value(json!(name)).map_err(|_| {
            anyhow::anyhow!("{p}:1: `{w}` names no Leaper workload (synthetic, e-commerce, messaging)")
        })?;
        if columns != LEAPER_COLUMNS {
            bail!(
                "{p}:2: the columns are `{}`, a Leaper trace has `{}`",
                columns.join(","),
                LEAPER_COLUMNS.join(",")
            );
        }
        let trace = KvTrace {
            path: path.to_path_buf(),
            workload,
            records: param_u64(path, &meta, "records")?,
            value_bytes: param_u64(path, &meta, "value_bytes")?,
            day_ops: param_u64(path, &meta, "day_ops")?,
            ops: param_u64(path, &meta, "ops")?,
            seed: meta["seed"].as_u64(),
        };
        if trace.records == 0 || trace.day_ops == 0 {
            bail!("{p}:1: the description's records and day_ops must be at least 1");
        }
        Ok(trace)
    }

    /// Refuses a trace whose records, value bytes or day length differ from the run's spec (the
    /// store is bulk-loaded with the run's records and a write stores a value of the run's size;
    /// the model's day is the spec's).
    pub fn check_spec(&self, spec: &lsmlab_workloads::kv::KvWorkload) -> anyhow::Result<()> {
        must_match(&self.path, "records", self.records, spec.records)?;
        must_match(&self.path, "value_bytes", self.value_bytes, spec.value_bytes)?;
        // The day is warmup_ops / 2 (leaper::online::day_ops): name the key a user sets.
        must_match(&self.path, "warmup_ops", self.day_ops * 2, spec.day_ops * 2)
    }

    /// Reads every line (one held at a time).
    pub fn check(&self) -> anyhow::Result<()> {
        let mut r = self.reader()?;
        while r.next_op()?.is_some() {}
        Ok(())
    }

    /// The trace's operations, read line by line.
    pub fn reader(&self) -> anyhow::Result<KvTraceReader> {
        Ok(KvTraceReader {
            lines: Lines::open(&self.path)?,
            trace: self.clone(),
            seq: 0,
            next_id: self.records,
        })
    }
}

/// The operations of a `KvTrace`, one line at a time, each checked: `seq` counts from 0 (a
/// write stores the value of version `seq + 1`), point, update and scan keys lie among the initial
/// records, an insert takes the next new id, a scan's `hi` is between its key and the newest id.
pub struct KvTraceReader {
    lines: Lines,
    trace: KvTrace,
    seq: u64,
    next_id: u64,
}

impl KvTraceReader {
    /// The trace read.
    pub(crate) fn trace(&self) -> &KvTrace {
        &self.trace
    }

    /// The next operation; `None` after the last, once as many as the description says were read
    /// (fewer is a truncated trace: an error).
    pub fn next_op(&mut self) -> anyhow::Result<Option<lsmlab_workloads::kv::TimedOp>> {
        use lsmlab_workloads::kv::{KvOp, TimedOp};
        let path = self.trace.path.clone();
        let Some((n, line)) = self.lines.next_line()? else {
            if self.seq < self.trace.ops {
                bail!(
                    "{}:{}: the trace ends after {} operations; its description says ops = {} (truncated?)",
                    path.display(),
                    self.lines.line(),
                    self.seq,
                    self.trace.ops
                );
            }
            return Ok(None);
        };
        let f = Fields::split(&path, n, line, &LEAPER_COLUMNS)?;
        if self.seq >= self.trace.ops {
            bail!(
                "{}: more operations than the description's ops = {}",
                f.at(),
                self.trace.ops
            );
        }
        let seq = f.u64(0, "an operation number (an integer >= 0)")?;
        if seq != self.seq {
            return Err(f.bad(
                0,
                &format!("{} (operations are numbered from 0, one per line)", self.seq),
            ));
        }
        let day = f.u64(1, "a day (an integer >= 0)")?;
        let time_of_day: f64 = f
            .str(2)
            .parse()
            .ok()
            .filter(|t: &f64| (0.0..1.0).contains(t))
            .ok_or_else(|| f.bad(2, "a fraction of the day in [0, 1)"))?;
        let key = f.u64(4, "a key (an integer >= 0)")?;
        let initial = |k: u64, col: usize| -> anyhow::Result<u64> {
            if k >= self.trace.records {
                return Err(f.bad(
                    col,
                    &format!("a key among the initial records 0..{}", self.trace.records),
                ));
            }
            Ok(k)
        };
        let op = match f.str(3) {
            "get" => KvOp::Get(initial(key, 4)?),
            "update" => KvOp::Update(initial(key, 4)?),
            "scan" => {
                let lo = initial(key, 4)?;
                let hi = f.u64(5, "the scan's last key (an integer >= 0)")?;
                if hi < lo || hi >= self.next_id {
                    return Err(f.bad(5, &format!("a last key in {lo}..={}", self.next_id - 1)));
                }
                KvOp::Scan { lo, hi }
            }
            "insert" => {
                if key != self.next_id {
                    return Err(f.bad(4, &format!("the next new id {}", self.next_id)));
                }
                self.next_id += 1;
                KvOp::Insert(key)
            }
            _ => return Err(f.bad(3, "get, scan, update or insert")),
        };
        if !matches!(op, KvOp::Scan { .. }) && !f.str(5).is_empty() {
            return Err(f.bad(5, "empty (only a scan has a last key)"));
        }
        self.seq += 1;
        Ok(Some(TimedOp {
            seq,
            day,
            time_of_day,
            op,
        }))
    }
}

/// The Leaper traces of a run (`--trace`), checked against `spec_of(workload)`, the spec the run
/// would generate: one per workload.
pub(crate) fn kv_traces(
    data: &[DataSpec],
    spec_of: &dyn Fn(crate::leaper::Workload) -> anyhow::Result<lsmlab_workloads::kv::KvWorkload>,
) -> anyhow::Result<Vec<std::sync::Arc<KvTrace>>> {
    let mut out: Vec<std::sync::Arc<KvTrace>> = Vec::new();
    for path in trace_paths(data) {
        let t = KvTrace::open(path)?;
        t.check_spec(&spec_of(t.workload)?)?;
        if let Some(other) = out.iter().find(|o| o.workload == t.workload) {
            bail!(
                "{}: a second {} trace (after {}); give one trace per workload",
                path.display(),
                t.workload,
                other.path.display()
            );
        }
        out.push(std::sync::Arc::new(t));
    }
    Ok(out)
}

/// The columns of a YCSB trace.
pub const YCSB_COLUMNS: [&str; 5] = ["op", "key", "field", "len", "value"];

/// A `ycsb-<x>` trace: its description, checked; [`YcsbTrace::reader`] replays it.
#[derive(Clone, Debug)]
pub(crate) struct YcsbTrace {
    pub path: PathBuf,
    pub workload: lsmlab_workloads::ycsb::Workload,
    pub records: u64,
    pub warmup: u64,
    pub operations: u64,
}

impl YcsbTrace {
    /// Reads and checks the description of the YCSB trace at `path`.
    pub fn open(path: &Path) -> anyhow::Result<YcsbTrace> {
        let (meta, columns) = read_header(path)?;
        let p = path.display();
        let w = workload_of(path, &meta)?;
        if !w.starts_with("ycsb-") {
            bail!("{p}:1: a {w} trace, not a ycsb-<a..f> one");
        }
        let workload = w
            .parse()
            .map_err(|_| anyhow::anyhow!("{p}:1: `{w}` names no YCSB workload (ycsb-a .. ycsb-f)"))?;
        if columns != YCSB_COLUMNS {
            bail!(
                "{p}:2: the columns are `{}`, a YCSB trace has `{}`",
                columns.join(","),
                YCSB_COLUMNS.join(",")
            );
        }
        let t = YcsbTrace {
            path: path.to_path_buf(),
            workload,
            records: param_u64(path, &meta, "records")?,
            warmup: param_u64(path, &meta, "warmup_operations")?,
            operations: param_u64(path, &meta, "operations")?,
        };
        if t.records < 2 {
            bail!("{p}:1: the description's records must be at least 2");
        }
        Ok(t)
    }

    /// Reads every line (one held at a time).
    pub fn check(&self) -> anyhow::Result<()> {
        let mut r = self.reader()?;
        for _ in 0..self.warmup + self.operations {
            r.next_op()?;
        }
        r.finish()
    }

    /// The trace's operations, read line by line.
    pub fn reader(&self) -> anyhow::Result<YcsbTraceReader> {
        Ok(YcsbTraceReader {
            lines: Lines::open(&self.path)?,
            trace: self.clone(),
            read: 0,
            newest: self.records - 1,
        })
    }
}

/// The operations of a `YcsbTrace`, one line at a time, each checked: keys of reads, updates and
/// scans exist (at most the newest key), an insert takes the next key, a field is 0..10, a value
/// is 100 hex-encoded bytes.
pub struct YcsbTraceReader {
    lines: Lines,
    trace: YcsbTrace,
    read: u64,
    newest: u64,
}

impl YcsbTraceReader {
    /// The newest key (as [`lsmlab_workloads::ycsb::Stream::newest`]).
    pub fn newest(&self) -> u64 {
        self.newest
    }

    /// The next operation; a trace that ends before it is an error (truncated).
    pub fn next_op(&mut self) -> anyhow::Result<lsmlab_workloads::ycsb::Op> {
        use lsmlab_workloads::ycsb::{Op, FIELD_COUNT, FIELD_LENGTH};
        let path = self.trace.path.clone();
        let total = self.trace.warmup + self.trace.operations;
        let Some((n, line)) = self.lines.next_line()? else {
            bail!(
                "{}:{}: the trace ends after {} operations; its description says {} (warm-up {} + {}; truncated?)",
                path.display(),
                self.lines.line(),
                self.read,
                total,
                self.trace.warmup,
                self.trace.operations
            );
        };
        let f = Fields::split(&path, n, line, &YCSB_COLUMNS)?;
        if self.read >= total {
            bail!("{}: more operations than the description's {total}", f.at());
        }
        let key = f.u64(1, "a key (an integer >= 0)")?;
        let existing = |k: u64| -> anyhow::Result<u64> {
            if k > self.newest {
                return Err(f.bad(1, &format!("an existing key (0..={})", self.newest)));
            }
            Ok(k)
        };
        let field = || -> anyhow::Result<usize> {
            f.str(2)
                .parse()
                .ok()
                .filter(|&x: &usize| x < FIELD_COUNT)
                .ok_or_else(|| f.bad(2, &format!("a field number 0..{FIELD_COUNT}")))
        };
        let value = || -> anyhow::Result<Vec<u8>> {
            let v = unhex(f.str(4))
                .filter(|v| v.len() == FIELD_LENGTH)
                .ok_or_else(|| f.bad(4, &format!("a value of {FIELD_LENGTH} hex-encoded bytes")))?;
            Ok(v)
        };
        let empty = |cols: &[usize]| -> anyhow::Result<()> {
            for &c in cols {
                if !f.str(c).is_empty() {
                    return Err(f.bad(c, &format!("empty (a {} has no {})", f.str(0), YCSB_COLUMNS[c])));
                }
            }
            Ok(())
        };
        let op = match f.str(0) {
            "read" => {
                empty(&[2, 3, 4])?;
                Op::Read { key: existing(key)? }
            }
            "insert" => {
                empty(&[2, 3, 4])?;
                if key != self.newest + 1 {
                    return Err(f.bad(1, &format!("the next key {}", self.newest + 1)));
                }
                Op::Insert { key }
            }
            "scan" => {
                empty(&[2, 4])?;
                let len = f
                    .str(3)
                    .parse()
                    .ok()
                    .filter(|&l: &usize| l >= 1)
                    .ok_or_else(|| f.bad(3, "a scan length (an integer >= 1)"))?;
                Op::Scan {
                    start: existing(key)?,
                    len,
                }
            }
            "update" | "rmw" => {
                empty(&[3])?;
                let (key, field, value) = (existing(key)?, field()?, value()?);
                if f.str(0) == "update" {
                    Op::Update { key, field, value }
                } else {
                    Op::ReadModifyWrite { key, field, value }
                }
            }
            _ => return Err(f.bad(0, "read, insert, scan, update or rmw")),
        };
        if let Op::Insert { key } = op {
            self.newest = key;
        }
        self.read += 1;
        Ok(op)
    }

    /// Checks that no line follows the last operation.
    pub fn finish(&mut self) -> anyhow::Result<()> {
        if let Some((n, _)) = self.lines.next_line()? {
            bail!(
                "{}:{n}: more operations than the description's {}",
                self.trace.path.display(),
                self.trace.warmup + self.trace.operations
            );
        }
        Ok(())
    }
}

fn unhex(s: &str) -> Option<Vec<u8>> {
    if !s.len().is_multiple_of(2) || !s.is_ascii() {
        return None;
    }
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).ok())
        .collect()
}

/// The YCSB traces of a run (`--trace`), checked against the run's records and operation counts
/// (`operations(workload)` gives the run's (warm-up, measured) for a workload): one per workload.
pub(crate) fn ycsb_traces(
    data: &[DataSpec],
    records: u64,
    operations: &dyn Fn(lsmlab_workloads::ycsb::Workload) -> (u64, u64),
) -> anyhow::Result<Vec<YcsbTrace>> {
    let mut out: Vec<YcsbTrace> = Vec::new();
    for path in trace_paths(data) {
        let t = YcsbTrace::open(path)?;
        must_match(path, "records", t.records, records)?;
        let (warmup, measured) = operations(t.workload);
        let e = t.workload == lsmlab_workloads::ycsb::Workload::E;
        // Workload E's warm-up is half its measured operations (scan_operations).
        let key = if e { "scan_operations" } else { "operations" };
        must_match(path, key, t.operations, measured)?;
        if !e {
            must_match(path, "warmup_operations", t.warmup, warmup)?;
        } else if t.warmup != warmup {
            bail!(
                "{}: the trace's warm-up has {} operations, workload E's is scan_operations / 2 = {warmup}",
                path.display(),
                t.warmup
            );
        }
        if let Some(other) = out.iter().find(|o| o.workload == t.workload) {
            bail!(
                "{}: a second {} trace (after {}); give one trace per workload",
                path.display(),
                t.workload.name(),
                other.path.display()
            );
        }
        out.push(t);
    }
    Ok(out)
}

/// The columns of a DIOL trace.
pub const DIOL_COLUMNS: [&str; 2] = ["arrival", "time"];

/// A `diol-<delay model>` trace: the out-of-order arrival stream of one series.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct DiolTrace {
    /// The delay model it was drawn with (`diol`, `lognormal`, `file`), its rows' `delay_model`.
    pub delay_model: String,
    pub o3_ratio: f64,
    pub points: u64,
    /// The generation times (timestamps 1..=points, each once) in arrival order.
    pub stream: Vec<u64>,
}

/// Reads a `diol-<delay model>` trace whole (the DIOL experiments hold the arrival stream), every
/// line checked: `arrival` counts from 0, `time` is a timestamp of 1..=points not seen before, and
/// every timestamp arrives.
pub(crate) fn read_diol(path: &Path) -> anyhow::Result<DiolTrace> {
    let (meta, columns) = read_header(path)?;
    let p = path.display();
    let w = workload_of(path, &meta)?;
    let model = w
        .strip_prefix("diol-")
        .filter(|m| crate::diol::DELAY_MODELS.contains(m))
        .with_context(|| format!("{p}:1: a {w} trace, not a diol-<diol|lognormal|file> one"))?
        .to_string();
    if columns != DIOL_COLUMNS {
        bail!(
            "{p}:2: the columns are `{}`, a DIOL trace has `{}`",
            columns.join(","),
            DIOL_COLUMNS.join(",")
        );
    }
    let points = param_u64(path, &meta, "points")?;
    let o3_ratio = meta["params"]["o3_ratio"]
        .as_f64()
        .filter(|r| (0.0..1.0).contains(r))
        .with_context(|| format!("{p}:1: the description's params lack `o3_ratio` (a number in [0, 1))"))?;
    if !(4..=1 << 40).contains(&points) {
        bail!("{p}:1: the description's points ({points}) must be 4 to 2^40");
    }
    let mut lines = Lines::open(path)?;
    // Nothing is sized by the description alone (a garbled `points` must not allocate): the
    // stream grows with the lines read, and uniqueness is checked once their count is `points`.
    let mut stream = Vec::new();
    while let Some((n, line)) = lines.next_line()? {
        let f = Fields::split(path, n, line, &DIOL_COLUMNS)?;
        if stream.len() as u64 >= points {
            bail!(
                "{}: more arrivals than the description's points = {points}",
                f.at()
            );
        }
        let arrival = f.u64(0, "an arrival number (an integer >= 0)")?;
        if arrival != stream.len() as u64 {
            return Err(f.bad(
                0,
                &format!("{} (arrivals are numbered from 0, one per line)", stream.len()),
            ));
        }
        let t = f.u64(1, "a timestamp (an integer >= 1)")?;
        if t == 0 || t > points {
            return Err(f.bad(1, &format!("a timestamp of 1..={points}")));
        }
        stream.push(t);
    }
    if (stream.len() as u64) < points {
        bail!(
            "{p}:{}: the trace ends after {} arrivals; its description says points = {points} (truncated?)",
            lines.line(),
            stream.len()
        );
    }
    let mut seen = vec![0u64; (points / 64 + 1) as usize];
    for (i, &t) in stream.iter().enumerate() {
        let (word, bit) = ((t / 64) as usize, 1u64 << (t % 64));
        if seen[word] & bit != 0 {
            bail!(
                "{p}:{}: field `time`: `{t}` is not a timestamp not seen before (each point arrives once)",
                i + 3
            );
        }
        seen[word] |= bit;
    }
    Ok(DiolTrace {
        delay_model: model,
        o3_ratio,
        points,
        stream,
    })
}

/// The DIOL trace of a run (`--trace`; at most one), checked against the run's points.
pub(crate) fn diol_trace(data: &[DataSpec], points: u64) -> anyhow::Result<Option<DiolTrace>> {
    let paths = trace_paths(data);
    let Some(&path) = paths.first() else {
        return Ok(None);
    };
    if paths.len() > 1 {
        bail!(
            "{}: a DIOL run replays one trace (its rows are that stream's); give one --trace",
            paths[1].display()
        );
    }
    let t = read_diol(path)?;
    must_match(path, "points", t.points, points)?;
    Ok(Some(t))
}

fn gen_diol(req: &GenRequest, model: &str, w: &mut impl Write) -> anyhow::Result<u64> {
    let map = resolved("diol", req, &[format!("delay_models={model}")])?;
    let cfg: crate::diol::layouts::LayoutsConfig = crate::config::from_map(&map)?;
    let setup = &cfg.setup;
    let [o3] = setup.o3_ratios[..] else {
        bail!(
            "a DIOL trace holds the stream of one out-of-order ratio and the config has {:?}: pick one with \
             --set o3_ratios=R",
            setup.o3_ratios
        );
    };
    let progress = Progress::silent();
    let ctx = RunContext {
        scale: req.scale,
        seed: req.seed,
        data: &[],
        progress: &progress,
    };
    let mut notes = Vec::new();
    let models = setup.delay_models(&ctx, &mut notes)?;
    let Some((_, delay)) = models.iter().find(|(name, _)| name == model) else {
        bail!("delay model {model} not available: {}", notes.join(" "));
    };
    let stream = setup.stream(o3, delay, req.seed)?;
    let meta = json!({
        "workload": req.workload, "experiment": "diol", "scale": req.scale.to_string(), "seed": req.seed,
        "params": {"points": setup.points, "o3_ratio": o3, "delay_model": model,
                   "delay_scale": setup.delay_scale(), "out_of_order_points": lsmlab_workloads::ts::out_of_order_points(&stream)},
    });
    header(w, &meta, &DIOL_COLUMNS)?;
    for (i, t) in stream.iter().enumerate() {
        writeln!(w, "{i},{t}")?;
    }
    Ok(stream.len() as u64)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #![proptest_config(ProptestConfig {
            cases: std::env::var("FUZZ_CASES").ok().and_then(|s| s.parse().ok()).unwrap_or(32),
            ..ProptestConfig::default()
        })]

        /// Fuzz target of the trace reader: raw bytes, and a valid trace with bytes replaced,
        /// inserted or cut, never panic; a refusal names the file.
        #[test]
        fn the_trace_reader_never_panics(
            raw in proptest::collection::vec(any::<u8>(), 0..400),
            edits in proptest::collection::vec((any::<usize>(), any::<u8>(), 0u8..3), 0..8),
        ) {
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join("fuzz.csv");
            std::fs::write(&path, &raw).unwrap();
            if let Err(e) = read_rum(&path) {
                let msg = format!("{e:#}");
                prop_assert!(msg.contains("fuzz.csv"), "{}", msg);
            }
            let meta = r#"{"dataset":"chicago","extent":[0,0,10,10]}"#;
            let mut valid = format!("{MAGIC}{meta}\nop,oid,time,x,y\ninsert,1,5,1.5,2\nupdate,1,6,3,4\ninsert,2,6,-0.1,2e-3\n")
                .into_bytes();
            for (at, byte, kind) in edits {
                let at = at % (valid.len() + 1);
                match kind {
                    0 if at < valid.len() => valid[at] = byte,
                    1 => valid.insert(at, byte),
                    _ => valid.truncate(at),
                }
            }
            std::fs::write(&path, &valid).unwrap();
            if let Err(e) = read_rum(&path) {
                let msg = format!("{e:#}");
                prop_assert!(msg.contains("fuzz.csv"), "{}", msg);
            }
        }

        /// Fuzz target of the Leaper, YCSB and DIOL trace readers (through [`check`], as a run's
        /// preflight reads them): valid traces with bytes replaced, inserted or cut never panic;
        /// a refusal names the file.
        #[test]
        fn the_stream_trace_readers_never_panic(
            which in 0usize..3,
            edits in proptest::collection::vec((any::<usize>(), any::<u8>(), 0u8..3), 0..8),
        ) {
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join("fuzz.csv");
            let mut valid = [LEAPER_OK, YCSB_OK, DIOL_OK][which].as_bytes().to_vec();
            for (at, byte, kind) in edits {
                let at = at % (valid.len() + 1);
                match kind {
                    0 if at < valid.len() => valid[at] = byte,
                    1 => valid.insert(at, byte),
                    _ => valid.truncate(at),
                }
            }
            std::fs::write(&path, &valid).unwrap();
            if let Err(e) = check(&path) {
                let msg = format!("{e:#}");
                prop_assert!(msg.contains("fuzz.csv"), "{}", msg);
            }
        }
    }

    const LEAPER_OK: &str = "# lsmlab-trace/1 {\"workload\":\"leaper-synthetic\",\"params\":{\"records\":10,\"value_bytes\":16,\"day_ops\":2,\"ops\":4}}\n\
        seq,day,time_of_day,op,key,hi\n0,0,0,get,3,\n1,0,0.5,scan,8,9\n2,1,0,insert,10,\n3,1,0.5,update,9,\n";
    const YCSB_OK: &str = "# lsmlab-trace/1 {\"workload\":\"ycsb-d\",\"params\":{\"records\":5,\"warmup_operations\":1,\"operations\":2}}\n\
        op,key,field,len,value\nread,4,,,\ninsert,5,,,\nread,5,,,\n";
    const DIOL_OK: &str =
        "# lsmlab-trace/1 {\"workload\":\"diol-lognormal\",\"params\":{\"points\":4,\"o3_ratio\":0.25}}\n\
        arrival,time\n0,1\n1,3\n2,4\n3,2\n";

    fn put(dir: &Path, text: &str) -> std::path::PathBuf {
        let path = dir.join("t.csv");
        std::fs::write(&path, text).unwrap();
        path
    }

    /// `text` with line `n` (1-based) replaced.
    fn with_line(text: &str, n: usize, line: &str) -> String {
        let mut lines: Vec<&str> = text.lines().collect();
        lines[n - 1] = line;
        lines.join("\n") + "\n"
    }

    #[test]
    fn a_leaper_trace_replays_its_operations_and_bad_lines_name_file_line_and_field() {
        use lsmlab_workloads::kv::KvOp;
        let dir = tempfile::tempdir().unwrap();
        let t = KvTrace::open(&put(dir.path(), LEAPER_OK)).unwrap();
        assert_eq!((t.records, t.value_bytes, t.day_ops, t.ops), (10, 16, 2, 4));
        let mut r = t.reader().unwrap();
        let mut ops = Vec::new();
        while let Some(op) = r.next_op().unwrap() {
            ops.push(op);
        }
        assert_eq!(ops.len(), 4);
        assert_eq!(ops[1].op, KvOp::Scan { lo: 8, hi: 9 });
        assert_eq!((ops[1].day, ops[1].time_of_day), (0, 0.5));
        assert_eq!(ops[2].op, KvOp::Insert(10));
        assert_eq!(ops[3].write_version(), Some(4));
        for (n, line, needle) in [
            (3, "0,0,0,get,x,", "t.csv:3: field `key`: `x` is not a key"),
            (3, "1,0,0,get,3,", "t.csv:3: field `seq`: `1` is not 0"),
            (
                3,
                "0,0,1.5,get,3,",
                "t.csv:3: field `time_of_day`: `1.5` is not a fraction",
            ),
            (
                3,
                "0,0,0,delete,3,",
                "t.csv:3: field `op`: `delete` is not get, scan",
            ),
            (
                3,
                "0,0,0,get,10,",
                "t.csv:3: field `key`: `10` is not a key among the initial records 0..10",
            ),
            (3, "0,0,0,get,3", "t.csv:3: 5 fields, expected 6"),
            (
                4,
                "1,0,0.5,scan,8,10",
                "t.csv:4: field `hi`: `10` is not a last key in 8..=9",
            ),
            (
                5,
                "2,1,0,insert,11,",
                "t.csv:5: field `key`: `11` is not the next new id 10",
            ),
            (6, "3,1,0.5,update,9,9", "t.csv:6: field `hi`: `9` is not empty"),
        ] {
            let err = format!(
                "{:#}",
                check(&put(dir.path(), &with_line(LEAPER_OK, n, line))).unwrap_err()
            );
            assert!(err.contains(needle), "{line}: {err}");
        }
        // Truncated: fewer operations than the description says; more is refused too.
        let cut: String = LEAPER_OK.lines().take(5).map(|l| format!("{l}\n")).collect();
        let err = format!("{:#}", check(&put(dir.path(), &cut)).unwrap_err());
        assert!(
            err.contains("t.csv:6: the trace ends after 3 operations; its description says ops = 4"),
            "{err}"
        );
        let long = format!("{LEAPER_OK}4,2,0,get,1,\n");
        let err = format!("{:#}", check(&put(dir.path(), &long)).unwrap_err());
        assert!(
            err.contains("t.csv:7: more operations than the description's ops = 4"),
            "{err}"
        );
        let no_params = LEAPER_OK.replace("\"records\":10,", "");
        let err = format!("{:#}", check(&put(dir.path(), &no_params)).unwrap_err());
        assert!(
            err.contains("t.csv:1: the description's params lack `records`"),
            "{err}"
        );
    }

    #[test]
    fn a_ycsb_trace_replays_its_operations_and_bad_lines_name_file_line_and_field() {
        use lsmlab_workloads::ycsb::Op;
        let dir = tempfile::tempdir().unwrap();
        let t = YcsbTrace::open(&put(dir.path(), YCSB_OK)).unwrap();
        let mut r = t.reader().unwrap();
        assert_eq!(r.next_op().unwrap(), Op::Read { key: 4 });
        assert_eq!(r.next_op().unwrap(), Op::Insert { key: 5 });
        assert_eq!((r.next_op().unwrap(), r.newest()), (Op::Read { key: 5 }, 5));
        r.finish().unwrap();
        let value = "41".repeat(100);
        let upd = format!("update,2,9,,{value}");
        let text = with_line(YCSB_OK, 3, &upd);
        let mut r = YcsbTrace::open(&put(dir.path(), &text))
            .unwrap()
            .reader()
            .unwrap();
        assert_eq!(
            r.next_op().unwrap(),
            Op::Update {
                key: 2,
                field: 9,
                value: vec![b'A'; 100]
            }
        );
        let short = format!("update,2,9,,{}", &value[..198]);
        for (line, needle) in [
            (
                "read,5,,,",
                "t.csv:3: field `key`: `5` is not an existing key (0..=4)",
            ),
            ("insert,6,,,", "t.csv:3: field `key`: `6` is not the next key 5"),
            ("scan,1,,0,", "t.csv:3: field `len`: `0` is not a scan length"),
            (
                "update,2,10,,",
                "t.csv:3: field `field`: `10` is not a field number 0..10",
            ),
            (short.as_str(), "t.csv:3: field `value`"),
            ("read,1,2,,", "t.csv:3: field `field`: `2` is not empty"),
            ("write,1,,,", "t.csv:3: field `op`: `write` is not read, insert"),
        ] {
            let err = format!(
                "{:#}",
                check(&put(dir.path(), &with_line(YCSB_OK, 3, line))).unwrap_err()
            );
            assert!(err.contains(needle), "{line}: {err}");
        }
        let cut: String = YCSB_OK.lines().take(4).map(|l| format!("{l}\n")).collect();
        let err = format!("{:#}", check(&put(dir.path(), &cut)).unwrap_err());
        assert!(
            err.contains("t.csv:5: the trace ends after 2 operations; its description says 3"),
            "{err}"
        );
    }

    #[test]
    fn a_diol_trace_reads_back_its_arrival_stream_and_bad_lines_name_file_line_and_field() {
        let dir = tempfile::tempdir().unwrap();
        let t = read_diol(&put(dir.path(), DIOL_OK)).unwrap();
        assert_eq!(
            (t.delay_model.as_str(), t.o3_ratio, t.points),
            ("lognormal", 0.25, 4)
        );
        assert_eq!(t.stream, vec![1, 3, 4, 2]);
        for (line, needle) in [
            ("1,1", "t.csv:3: field `arrival`: `1` is not 0"),
            ("0,5", "t.csv:3: field `time`: `5` is not a timestamp of 1..=4"),
            ("0,0", "t.csv:3: field `time`: `0` is not a timestamp"),
            ("0,abc", "t.csv:3: field `time`: `abc` is not a timestamp"),
            (
                "0,3",
                "t.csv:4: field `time`: `3` is not a timestamp not seen before",
            ),
        ] {
            let err = format!(
                "{:#}",
                check(&put(dir.path(), &with_line(DIOL_OK, 3, line))).unwrap_err()
            );
            assert!(err.contains(needle), "{line}: {err}");
        }
        let cut: String = DIOL_OK.lines().take(5).map(|l| format!("{l}\n")).collect();
        let err = format!("{:#}", check(&put(dir.path(), &cut)).unwrap_err());
        assert!(
            err.contains("t.csv:6: the trace ends after 3 arrivals; its description says points = 4"),
            "{err}"
        );
        let other = DIOL_OK.replace("diol-lognormal", "diol-gamma");
        let err = format!("{:#}", check(&put(dir.path(), &other)).unwrap_err());
        assert!(
            err.contains("t.csv:1: a diol-gamma trace, not a diol-<diol|lognormal|file> one"),
            "{err}"
        );
    }

    #[test]
    fn an_experiment_replays_only_its_own_kind_of_trace() {
        let dir = tempfile::tempdir().unwrap();
        let path = put(dir.path(), YCSB_OK);
        check_for("oep7-ycsb", std::slice::from_ref(&path)).unwrap();
        for (experiment, needle) in [
            (
                "leaper-online",
                "t.csv:1: a ycsb-d trace; `leaper-online` replays leaper-* traces",
            ),
            ("rum-update", "`rum-update` replays rum-* traces"),
            (
                "leaper-sensitivity",
                "`leaper-sensitivity` does not replay traces: its cells each draw",
            ),
            ("oep7-space", "`oep7-space` generates no stream a trace holds"),
        ] {
            let err = format!(
                "{:#}",
                check_for(experiment, std::slice::from_ref(&path)).unwrap_err()
            );
            assert!(err.contains(needle), "{experiment}: {err}");
        }
    }

    fn write(dir: &Path, body: &str) -> std::path::PathBuf {
        let path = dir.join("t.csv");
        let meta = r#"{"dataset":"chicago","extent":[0,0,10,10]}"#;
        std::fs::write(&path, format!("{MAGIC}{meta}\nop,oid,time,x,y\n{body}")).unwrap();
        path
    }

    #[test]
    fn a_rum_trace_reads_back_and_bad_lines_name_file_line_and_field() {
        let dir = tempfile::tempdir().unwrap();
        let t = read_rum(&write(
            dir.path(),
            "insert,1,5,1.5,2\nupdate,1,6,3,4\ninsert,2,6,0.1,0.2\n",
        ))
        .unwrap();
        assert_eq!((t.name.as_str(), t.records.len()), ("chicago", 3));
        assert_eq!(t.extent, Rect::new(0.0, 0.0, 10.0, 10.0));
        assert_eq!(t.records[1].point, Point { x: 3.0, y: 4.0 });
        for (body, needle) in [
            ("insert,1,5,abc,2\n", "t.csv:3: field `x`: `abc` is not a number"),
            ("insert,1,5,1\n", "t.csv:3: 4 fields"),
            ("insert,1,5,1,2\ninsert,x,6,1,2\n", "t.csv:4: field `oid`"),
            (
                "insert,1,5,1,2\ninsert,1,6,1,2\n",
                "t.csv:4: field `op`: insert of object 1",
            ),
            ("update,1,5,1,2\n", "t.csv:3: field `op`: update of object 1"),
            ("delete,1,5,1,2\n", "`delete` is not insert or update"),
            ("insert,1,5,1,2\ninsert,2,4,1,2\n", "t.csv:4: field `time`"),
            ("insert,1,5,inf,2\n", "not a finite number"),
            ("", "holds no operations"),
        ] {
            let err = format!("{:#}", read_rum(&write(dir.path(), body)).unwrap_err());
            assert!(err.contains(needle), "{body:?}: {err}");
        }
        let long = format!("insert,1,5,1,{}\n", "2".repeat(MAX_LINE));
        let err = format!("{:#}", read_rum(&write(dir.path(), &long)).unwrap_err());
        assert!(err.contains("t.csv:3: line longer than"), "{err}");
        let plain = dir.path().join("p.csv");
        std::fs::write(&plain, "op,oid,time,x,y\n").unwrap();
        let err = format!("{:#}", read_rum(&plain).unwrap_err());
        assert!(err.contains("p.csv:1: not an lsmlab trace"), "{err}");
    }
}
