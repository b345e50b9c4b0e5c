//! Hostile files for every loader and trace reader: the trajectory loaders in every format (SNAP
//! Gowalla TSV, Chicago taxi CSV, generic CSV with guessed and named columns, GeoLife `.plt`),
//! plain and gzipped, through [`load`] and [`probe`]; the graph edge-list reader; the delays
//! reader. Inputs are raw bytes and valid files mutated line by line and byte by byte (seeded from
//! generated valid lines, and from the real files in `shared/data` when present).
//!
//! The property: never a panic; `Ok`, or a typed error whose message is not empty. Budget:
//! `FUZZ_CASES` cases per target (default 32); `make fuzz` runs many more and prints the
//! executions per target.

#![allow(clippy::unwrap_used, clippy::expect_used)] // a test may panic: that is its failure report

use std::cell::Cell;
use std::io::Write;
use std::path::{Path, PathBuf};

use lsmlab_workloads::load::{load, probe, ColumnRef, CsvColumns, CsvDialect, Format, IdSource, LoadOptions};
use proptest::prelude::*;
use proptest::test_runner::{Config, TestCaseError, TestRunner};

fn cases() -> u32 {
    std::env::var("FUZZ_CASES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(32)
}

/// Valid lines of each format, the seeds mutations start from.
fn seed_lines(format: &str) -> Vec<String> {
    let real = |name: &str| -> Vec<String> {
        let path = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../shared/data")
            .join(name);
        std::fs::read(&path)
            .ok()
            .map(|b| {
                String::from_utf8_lossy(&b[..b.len().min(1 << 16)])
                    .lines()
                    .take(40)
                    .map(String::from)
                    .collect()
            })
            .unwrap_or_default()
    };
    let mut lines: Vec<String> = match format {
        "snap" => (0..20)
            .map(|i| {
                format!(
                    "{}\t2010-10-{:02}T12:{:02}:00Z\t40.{}\t-73.{}\t{}",
                    i % 4,
                    1 + i % 28,
                    i % 60,
                    7000 + i,
                    9000 + i,
                    100 + i
                )
            })
            .collect(),
        "chicago" => {
            std::iter::once("taxi_id,trip_start_timestamp,pickup_latitude,pickup_longitude".to_string())
                .chain((0..20).map(|i| {
                    format!(
                        "t{},{},41.{},-87.{}",
                        i % 3,
                        1_380_000_000 + i * 60,
                        8000 + i,
                        6000 + i
                    )
                }))
                .collect()
        }
        "csv" => std::iter::once("oid,time,x,y".to_string())
            .chain((0..20).map(|i| format!("{},{},{}.5,{}.25", i % 5, 1000 + i, i, 20 - i)))
            .collect(),
        "plt" => [
            "Geolife trajectory",
            "WGS 84",
            "Altitude is in Feet",
            "Reserved 3",
            "0,2,255,My Track,0,0,2,8421376",
            "0",
        ]
        .iter()
        .map(|s| s.to_string())
        .chain((0..20).map(|i| {
            format!(
                "39.9{},116.3{},0,492,39744.{},2008-10-23,02:{:02}:04",
                i,
                i,
                1000 + i,
                i
            )
        }))
        .collect(),
        "edges" => (0..20).map(|i| format!("{} {}", i, (i * 7) % 13)).collect(),
        "delays" => (0..20).map(|i| format!("{}", i * 17 % 50)).collect(),
        _ => unreachable!(),
    };
    let name = match format {
        "snap" => "gowalla",
        "chicago" => "chicago",
        _ => "",
    };
    if !name.is_empty() {
        if let Ok(entries) =
            std::fs::read_dir(Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/data"))
        {
            for e in entries.flatten() {
                let f = e.file_name().to_string_lossy().to_lowercase();
                if f.contains(name) && e.path().is_file() && !f.ends_with(".gz") {
                    lines.extend(real(&e.file_name().to_string_lossy()));
                    break;
                }
            }
        }
    }
    lines
}

/// A file's bytes: raw random bytes, or seed lines mutated.
#[derive(Clone, Debug)]
enum Input {
    Raw(Vec<u8>),
    Mutated {
        keep: usize,
        edits: Vec<(usize, usize, Vec<u8>)>,
        gzip: bool,
        truncate: Option<usize>,
    },
}

fn input() -> impl Strategy<Value = Input> {
    let text = prop_oneof![
        prop::collection::vec(any::<u8>(), 0..16),
        "[-0-9.,;\t eE:TZ\"nNaAiIfF/]{0,24}".prop_map(String::into_bytes),
        Just(b"\n".to_vec()),
        Just(b"\"".to_vec()),
        Just(b"1e308".to_vec()),
        Just(b"-1".to_vec()),
        Just(b"NaN".to_vec()),
        Just(b"18446744073709551616".to_vec()),
        Just(vec![0xff, 0xfe]),
    ];
    prop_oneof![
        prop::collection::vec(any::<u8>(), 0..400).prop_map(Input::Raw),
        (
            0usize..64,
            prop::collection::vec((any::<usize>(), 0usize..6, text), 0..6),
            any::<bool>(),
            prop::option::of(any::<usize>())
        )
            .prop_map(|(keep, edits, gzip, truncate)| Input::Mutated {
                keep,
                edits,
                gzip,
                truncate
            }),
    ]
}

fn render(input: &Input, seeds: &[String]) -> Vec<u8> {
    match input {
        Input::Raw(b) => b.clone(),
        Input::Mutated {
            keep,
            edits,
            gzip,
            truncate,
        } => {
            let mut bytes = seeds[..(*keep).min(seeds.len())].join("\n").into_bytes();
            for (at, del, ins) in edits {
                let at = if bytes.is_empty() {
                    0
                } else {
                    at % (bytes.len() + 1)
                };
                let end = (at + del).min(bytes.len());
                bytes.splice(at..end, ins.iter().copied());
            }
            if *gzip {
                let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
                gz.write_all(&bytes).unwrap();
                bytes = gz.finish().unwrap();
            }
            if let Some(t) = truncate {
                bytes.truncate(t % (bytes.len() + 1));
            }
            bytes
        }
    }
}

fn run(target: &str, seeds: &str, ext: &str, read: impl Fn(&Path) -> Result<(), String>) {
    let seeds = seed_lines(seeds);
    let dir = tempfile_dir(target);
    let path: PathBuf = dir.join(format!("input.{ext}"));
    let mut runner = TestRunner::new(Config {
        cases: cases(),
        failure_persistence: None,
        ..Config::default()
    });
    let (ok, err, runs) = (Cell::new(0u64), Cell::new(0u64), Cell::new(0u64));
    let result = runner.run(&input(), |inp| {
        std::fs::write(&path, render(&inp, &seeds)).unwrap();
        runs.set(runs.get() + 1);
        match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| read(&path))) {
            Ok(Ok(())) => ok.set(ok.get() + 1),
            Ok(Err(msg)) => {
                prop_assert!(!msg.trim().is_empty(), "an error with an empty message");
                err.set(err.get() + 1);
            }
            Err(_) => return Err(TestCaseError::fail(format!("{target}: panic"))),
        }
        Ok(())
    });
    println!(
        "fuzz {target}: {} executions, {} loaded, {} refused with an error",
        runs.get(),
        ok.get(),
        err.get()
    );
    let _ = std::fs::remove_dir_all(&dir);
    if let Err(e) = result {
        panic!("{target}: {e}");
    }
}

fn tempfile_dir(target: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "lsmlab-fuzz-{}-{}",
        std::process::id(),
        target.replace(' ', "-")
    ));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn trajectories(format: Format) -> impl Fn(&Path) -> Result<(), String> {
    move |p: &Path| {
        let mut opts = LoadOptions::new(format);
        probe(p, &opts, CsvDialect::default())
            .map_err(|e| e.to_string())
            .ok();
        let first = load(p, &opts).map(|_| ()).map_err(|e| e.to_string());
        opts.skip_malformed = true;
        opts.limit = Some(5);
        let _ = load(p, &opts).map_err(|e| assert!(!e.to_string().is_empty()));
        let _ = Format::guess(p);
        first
    }
}

#[test]
fn snap_gowalla() {
    run("snap-gowalla", "snap", "txt", trajectories(Format::SnapGowalla));
}

#[test]
fn chicago_csv() {
    run("chicago-csv", "chicago", "csv", trajectories(Format::ChicagoCsv));
}

#[test]
fn generic_csv_guessed_columns() {
    run("csv (guessed columns)", "csv", "csv", trajectories(Format::Csv));
}

#[test]
fn generic_csv_named_columns() {
    run("csv (named columns)", "csv", "csv", |p| {
        let mut opts = LoadOptions::new(Format::Csv);
        let mut cols = CsvColumns::positional();
        cols.oid = IdSource::Column(ColumnRef::Name("oid".into()));
        cols.time = ColumnRef::Name("time".into());
        opts.columns = Some(cols);
        for dialect in [
            CsvDialect::default(),
            CsvDialect {
                delimiter: Some(b';'),
                header: Some(false),
            },
        ] {
            let _ = lsmlab_workloads::load::load_with_dialect(p, &opts, dialect)
                .map_err(|e| assert!(!e.to_string().is_empty()));
        }
        load(p, &opts).map(|_| ()).map_err(|e| e.to_string())
    });
}

#[test]
fn geolife_plt() {
    run("geolife-plt", "plt", "plt", trajectories(Format::GeolifePlt));
}

#[test]
fn edge_list() {
    run("graph edge list", "edges", "txt", |p| {
        lsmlab_workloads::graph::load_edge_list(p)
            .map(|_| ())
            .map_err(|e| e.to_string())
    });
}

#[test]
fn delays() {
    run("delays", "delays", "txt", |p| {
        lsmlab_workloads::ts::load_delays(p)
            .map(|_| ())
            .map_err(|e| e.to_string())
    });
}
