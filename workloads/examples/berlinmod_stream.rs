//! Streams the BerlinMOD-like dataset and its LSM RUM-tree operation stream without holding
//! either, and prints what it saw: the way to measure the stream's own memory (run it under
//! `/usr/bin/time -v`). `cargo run --release -p lsmlab-workloads --example berlinmod_stream --
//! [RECORDS] [VEHICLES] [SEED]` (defaults: the paper's 56,129,943 records over 2,000 vehicles,
//! seed 42).

use lsmlab_workloads::gen::{berlinmod_stream, BerlinModParams};
use lsmlab_workloads::{OpStream, SpatialOp};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let mut arg = |default: u64| -> Result<u64, Box<dyn std::error::Error>> {
        Ok(match args.next() {
            Some(a) => a.replace('_', "").parse()?,
            None => default,
        })
    };
    let records = arg(56_129_943)? as usize;
    let vehicles = arg(2_000)? as usize;
    let seed = arg(42)?;
    let params = BerlinModParams {
        vehicles: Some(vehicles),
        ..BerlinModParams::default()
    };
    let (mut inserts, mut updates, mut sum) = (0u64, 0u64, 0f64);
    for op in OpStream::new(berlinmod_stream(records, seed, &params)?) {
        match op {
            SpatialOp::Insert { at, .. } => {
                inserts += 1;
                sum += at.x + at.y;
            }
            SpatialOp::Update { to, .. } => {
                updates += 1;
                sum += to.x + to.y;
            }
            SpatialOp::Delete { .. } => {}
        }
    }
    println!("{records} records over {vehicles} vehicles (seed {seed}): {inserts} inserts, {updates} updates, coordinate sum {sum:.6}");
    Ok(())
}
