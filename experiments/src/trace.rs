//! Operation traces: `lsmlab gen WORKLOAD --out FILE` writes the operation stream an experiment
//! runs as CSV, so another system can replay exactly what lsmlab ran, and `lsmlab run --trace FILE`
//! replays one (the RUM-tree experiments) instead of generating it.
//!
//! A trace is plain text: a first line `# lsmlab-trace/1 {...}` whose JSON says what the stream is
//! (workload, the experiment whose stream it is, scale, seed, the parameters that shaped it and, for
//! a RUM stream, the dataset's name and extent), then a CSV header with the column names, then one
//! operation per line. Lines are written as they are generated (never the whole stream in memory
//! twice) into a temporary file renamed into place once complete.
//!
//! The streams ([`WORKLOADS`]):
//! - `rum-<dataset>` (gowalla, chicago, berlinmod): the location records the RUM-tree experiments
//!   replay, in time order (LSM RUM-tree paper Section 6: each record is an insert of a new object
//!   or an update of a known one, replayed in time order). Columns `op,oid,time,x,y`; `op` is
//!   `insert` for an object's first record and `update` after. `x`, `y` are printed in Rust's
//!   shortest round-trip form, so they read back bit for bit.
//! - `leaper-<workload>` (synthetic, e-commerce, messaging): the key-value stream every Leaper
//!   policy draws from (Leaper Table 2). Columns `seq,day,time_of_day,op,key,hi`: `op` is
//!   get, scan (keys `key..=hi`), update or insert.
//! - `ycsb-a` .. `ycsb-f`: the run phase of a YCSB core workload as oep7-ycsb runs it (warm-up and
//!   measured operations). Columns `op,key,field,len,value`: read, update (field, value),
//!   insert, scan (len records from key), rmw (read-modify-write of field with value); values are
//!   hex-encoded bytes.

use std::fs::File;
use std::io::{BufRead, BufReader, BufWriter, Read, Write};
use std::path::Path;

use anyhow::{bail, Context};
use lsmlab_engine::geom::{Point, Rect};
use lsmlab_workloads::{Record, Trajectories};
use serde_json::{json, Value};

use crate::config::Overlay;
use crate::experiment::{RunContext, Scale};
use crate::progress::Progress;

/// The first word of a trace's first line.
pub const MAGIC: &str = "# lsmlab-trace/1 ";

/// The `--format` a replayed trace carries among a run's data files.
pub const TRACE_FORMAT: &str = "lsmlab-trace";

/// The columns of a RUM trace.
pub const RUM_COLUMNS: [&str; 5] = ["op", "oid", "time", "x", "y"];

/// Every workload `lsmlab gen` writes, with what it is.
pub const WORKLOADS: [(&str, &str); 12] = [
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
    ("ycsb-a", "YCSB workload A run phase (oep7-ycsb)"),
    ("ycsb-b", "YCSB workload B run phase (oep7-ycsb)"),
    ("ycsb-c", "YCSB workload C run phase (oep7-ycsb)"),
    ("ycsb-d", "YCSB workload D run phase (oep7-ycsb)"),
    ("ycsb-e", "YCSB workload E run phase (oep7-ycsb)"),
    ("ycsb-f", "YCSB workload F run phase (oep7-ycsb)"),
];

/// What `lsmlab gen` was asked for.
pub struct GenRequest<'a> {
    pub workload: &'a str,
    pub scale: Scale,
    pub seed: u64,
    /// `--set` arguments for the experiment whose stream is written.
    pub sets: &'a [String],
    /// Operations to write (Leaper streams, which are endless; default: the warm-up phase's).
    pub ops: Option<u64>,
}

/// Writes the trace of `req.workload` to `out` atomically; returns the operations written.
pub fn generate(req: &GenRequest, out: &Path) -> anyhow::Result<u64> {
    let names: Vec<&str> = WORKLOADS.iter().map(|w| w.0).collect();
    if !names.contains(&req.workload) {
        bail!(
            "unknown workload `{}`; workloads: {} (`lsmlab gen --list` says what each is)",
            req.workload,
            names.join(", ")
        );
    }
    let mut written = 0;
    crate::atomic::write_with(out, |tmp| {
        let mut w = BufWriter::new(File::create(tmp)?);
        written = if let Some(dataset) = req.workload.strip_prefix("rum-") {
            gen_rum(req, dataset, &mut w)?
        } else if let Some(workload) = req.workload.strip_prefix("leaper-") {
            gen_leaper(req, workload, &mut w)?
        } else {
            gen_ycsb(req, &mut w)?
        };
        w.flush()?;
        Ok(())
    })
    .with_context(|| format!("writing trace {}", out.display()))?;
    Ok(written)
}

fn header(w: &mut impl Write, meta: &Value, columns: &[&str]) -> anyhow::Result<()> {
    writeln!(w, "{MAGIC}{meta}")?;
    writeln!(w, "{}", columns.join(","))?;
    Ok(())
}

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
    let n = req.ops.unwrap_or(setup.warmup_ops);
    let meta = json!({
        "workload": req.workload, "experiment": "leaper-*", "scale": req.scale.to_string(), "seed": req.seed,
        "params": {"records": spec.records, "value_bytes": setup.value_bytes, "day_ops": spec.day_ops,
                   "zipf": spec.zipf, "ops": n},
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

/// The header of a trace file: its JSON description and its column names.
pub fn read_header(path: &Path) -> anyhow::Result<(Value, Vec<String>)> {
    let file = File::open(path).with_context(|| format!("opening trace {}", path.display()))?;
    let mut lines = BufReader::new(file).lines();
    let first = lines
        .next()
        .transpose()
        .with_context(|| format!("{}:1: unreadable (not UTF-8 text?)", path.display()))?
        .with_context(|| format!("{}: empty file, not an lsmlab trace", path.display()))?;
    let meta = first.strip_prefix(MAGIC).with_context(|| {
        format!(
            "{}:1: not an lsmlab trace (the first line must start with `{}`; `lsmlab gen` writes them)",
            path.display(),
            MAGIC.trim()
        )
    })?;
    let meta: Value = serde_json::from_str(meta)
        .with_context(|| format!("{}:1: the trace's description is not JSON", path.display()))?;
    let columns = lines
        .next()
        .transpose()
        .with_context(|| format!("{}:2: unreadable (not UTF-8 text?)", path.display()))?
        .with_context(|| format!("{}:2: no column header", path.display()))?;
    Ok((meta, columns.split(',').map(|c| c.trim().to_string()).collect()))
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
    let mut reader = BufReader::new(File::open(path)?);
    let mut records = Vec::new();
    let mut seen = std::collections::HashSet::new();
    let mut last_time = i64::MIN;
    let mut buf = Vec::new();
    for n in 1.. {
        buf.clear();
        // At most MAX_LINE bytes of a line are ever held.
        let read = (&mut reader)
            .take(MAX_LINE as u64 + 1)
            .read_until(b'\n', &mut buf)
            .with_context(|| format!("{p}:{n}: unreadable line"))?;
        if read == 0 {
            break;
        }
        if buf.len() > MAX_LINE {
            bail!("{p}:{n}: line longer than {MAX_LINE} bytes");
        }
        if n <= 2 {
            continue;
        }
        let line = std::str::from_utf8(&buf)
            .map_err(|_| anyhow::anyhow!("{p}:{n}: not UTF-8 text"))?
            .trim_end_matches(['\n', '\r']);
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
/// replayed as written, under the dataset name it records.
pub fn load_rum_traces(ctx: &RunContext) -> anyhow::Result<(Vec<Trajectories>, Vec<String>)> {
    let mut out = Vec::new();
    let mut notes = Vec::new();
    for spec in ctx.data {
        if spec.format.as_deref() != Some(TRACE_FORMAT) {
            bail!(
                "{}: --trace and --data cannot be mixed in one run",
                spec.path.display()
            );
        }
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

/// The longest line a trace reader accepts (as the data loaders cap theirs).
pub const MAX_LINE: usize = 1 << 20;

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
