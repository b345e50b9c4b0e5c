//! Times each generator: `cargo run --release -p lsmlab-workloads --example gen_timing -- [dataset]
//! [records] [objects...]` generates `records` (default 2,000,000) records of the dataset (default:
//! every dataset), once with its default objects and once per given object count, and prints the
//! wall time and the number of objects.

use std::time::Instant;

use lsmlab_workloads::{generate_spec, GenSpec, DATASETS};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1).peekable();
    let only = args.next_if(|a| DATASETS.contains(&a.as_str()));
    let records: usize = args.next().map_or(Ok(2_000_000), |a| a.parse())?;
    let objects: Vec<Option<usize>> = std::iter::once(Ok(None))
        .chain(args.map(|a| a.parse().map(Some)))
        .collect::<Result<_, _>>()?;
    for name in DATASETS
        .into_iter()
        .filter(|n| only.as_deref().is_none_or(|o| o == *n))
    {
        for &o in &objects {
            let spec = GenSpec { records, objects: o };
            let start = Instant::now();
            let t = generate_spec(name, &spec, 1)?;
            let secs = start.elapsed().as_secs_f64();
            println!(
                "{name:>9}: {records} records, {} objects: {secs:.2} s",
                t.objects()
            );
        }
    }
    Ok(())
}
