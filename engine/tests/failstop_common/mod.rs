//! Shared by the fail-stop tests: the device stack faults are injected into, the sweep plan over
//! every fault kind, the check that every failed call returned a typed error, and the tallies
//! that make a sweep fail when it reached no fault or no error path.
//!
//! The stack is `VerifyingDevice(FaultyDevice(MemDevice))`: the faulty device plays the hardware
//! (errors, torn writes, flipped bits, a full disk) and the verifying layer above it turns the
//! silent kinds into checksum errors, as a checksumming engine would.
//!
//! Budget: `FAULT_CASES=n` sets how many fault positions each kind is tried at (each test's doc
//! comment gives its default, a few seconds at the test profile); `FAULT_CASES=40` is a long
//! sweep of minutes.

#![allow(dead_code)]

use lsmlab_engine::storage::{
    Device, Fault, FaultKind, FaultyDevice, InjectedFault, Injection, MemDevice, VerifyingDevice,
};
use lsmlab_engine::Error;
use std::collections::BTreeMap;
use std::sync::Arc;

/// The faulty device and the verified device the engine uses.
pub struct Stack {
    pub faulty: Arc<FaultyDevice>,
    pub dev: Arc<dyn Device>,
}

pub fn stack(page_size: usize) -> Stack {
    let faulty = Arc::new(FaultyDevice::new(Arc::new(MemDevice::new(page_size))));
    let dev: Arc<dyn Device> = Arc::new(VerifyingDevice::new(faulty.clone()));
    Stack { faulty, dev }
}

/// Fault positions per kind: `FAULT_CASES` if set, else `default`.
pub fn cases(default: usize) -> usize {
    match std::env::var("FAULT_CASES") {
        Ok(v) => v
            .parse()
            .unwrap_or_else(|_| panic!("FAULT_CASES={v:?} is not a number of cases")),
        Err(_) => default,
    }
}

/// Every injection kind (each fault kind once and from then on; a full disk from then on) at
/// `cases` positions spread over accesses `1..=span`, the positions shifted per kind so that
/// the kinds do not all hit the same accesses (a full disk's positions, counted over writes into
/// new space, and a sync error's, counted over syncs, a tenth as far). Returns (case number,
/// injection).
pub fn plan(cases: usize, span: u64) -> Vec<(usize, Injection)> {
    let mut out = Vec::new();
    let kinds = Injection::all_at(1);
    for c in 0..cases {
        for (j, inj) in kinds.iter().enumerate() {
            let slot = span / cases as u64;
            let k = 1 + c as u64 * slot + (j as u64 * 7 + c as u64 * 3) % slot.max(1);
            // Writes into new space are a small share of all writes, and syncs (one per flush or
            // merge) of all accesses.
            let k = match inj.kind {
                FaultKind::DiskFull | FaultKind::SyncError => 1 + (k - 1) / 10,
                _ => k,
            };
            let at = match inj.at {
                Fault::Nth(_) => Fault::Nth(k),
                _ => Fault::From(k),
            };
            out.push((c, Injection::new(inj.kind, at)));
        }
    }
    out
}

/// What one stream (or a sweep of them) saw.
#[derive(Clone, Copy, Debug, Default)]
pub struct Tally {
    pub streams: u64,
    /// Accesses the device failed with an error, and damaged silently.
    pub injected_errors: u64,
    pub injected_silent: u64,
    /// Calls that failed, by the typed error they returned: an injected device fault, a checksum
    /// mismatch, or the engine's refusal after an earlier failure.
    pub failed_calls: u64,
    pub injected_seen: u64,
    pub checksum_seen: u64,
    pub stopped_seen: u64,
    /// Answers checked against the oracle.
    pub checked: u64,
}

impl Tally {
    /// A failed call: its error must be typed (an injected fault, a checksum mismatch naming the
    /// page and device, or a refusal); anything else fails the test.
    pub fn failed(&mut self, e: &Error, what: &str) {
        self.failed_calls += 1;
        if let Some(f) = InjectedFault::of(e) {
            assert!(
                !f.device.is_empty() && (f.page.is_some() || f.kind == FaultKind::SyncError),
                "{what}: {e}"
            );
            self.injected_seen += 1;
            return;
        }
        match e {
            Error::Checksum { device, .. } => {
                assert!(!device.is_empty(), "{what}: {e}");
                self.checksum_seen += 1;
            }
            Error::Stopped { .. } => self.stopped_seen += 1,
            other => panic!("{what}: a failed call returned an untyped error: {other}"),
        }
    }

    /// The device's counts of injected faults.
    pub fn injected_from(&mut self, faulty: &FaultyDevice) {
        let i = faulty.injected();
        self.injected_errors = i.errors;
        self.injected_silent = i.silent;
    }

    pub fn add(&mut self, o: &Tally) {
        self.streams += o.streams;
        self.injected_errors += o.injected_errors;
        self.injected_silent += o.injected_silent;
        self.failed_calls += o.failed_calls;
        self.injected_seen += o.injected_seen;
        self.checksum_seen += o.checksum_seen;
        self.stopped_seen += o.stopped_seen;
        self.checked += o.checked;
    }
}

/// A sweep's tallies per fault kind.
pub struct Sweep {
    name: String,
    per_kind: BTreeMap<&'static str, Tally>,
    /// Kinds the engine cannot meet (it never makes that access), which must then never fire.
    inapplicable: Vec<FaultKind>,
}

impl Sweep {
    pub fn new(name: &str) -> Sweep {
        Sweep {
            name: name.to_string(),
            per_kind: BTreeMap::new(),
            inapplicable: Vec::new(),
        }
    }

    /// Declares that the engine never makes the access `kind` faults (say, it never syncs): the
    /// check then asserts that the kind never fired instead.
    pub fn inapplicable(mut self, kind: FaultKind) -> Sweep {
        self.inapplicable.push(kind);
        self
    }

    pub fn record(&mut self, inj: Injection, mut t: Tally) {
        t.streams = 1;
        self.per_kind.entry(inj.kind.name()).or_default().add(&t);
    }

    /// Prints the tallies (shown with `--nocapture`) and fails unless every fault kind was
    /// injected and made calls fail; silent kinds must have been caught by checksums.
    pub fn check(&self) {
        for kind in FaultKind::ALL {
            let t = self.per_kind.get(kind.name()).copied().unwrap_or_default();
            eprintln!(
                "fault sweep {} / {}: {} streams, injected {} errors + {} silent, {} calls failed \
                 ({} injected, {} checksum, {} refused), {} answers checked",
                self.name,
                kind.name(),
                t.streams,
                t.injected_errors,
                t.injected_silent,
                t.failed_calls,
                t.injected_seen,
                t.checksum_seen,
                t.stopped_seen,
                t.checked,
            );
            if self.inapplicable.contains(&kind) {
                assert_eq!(
                    t.injected_errors + t.injected_silent,
                    0,
                    "{}: {kind} fired",
                    self.name
                );
                continue;
            }
            assert!(
                t.injected_errors + t.injected_silent > 0,
                "{}: no {} was ever injected",
                self.name,
                kind.name()
            );
            assert!(
                t.failed_calls > 0,
                "{}: no call ever failed under {}",
                self.name,
                kind.name()
            );
            if kind.is_silent() {
                assert!(
                    t.checksum_seen > 0,
                    "{}: no {} was caught by a checksum",
                    self.name,
                    kind.name()
                );
            }
        }
    }
}

/// Whether `e` is an injected device fault.
pub fn is_injected(e: &Error) -> bool {
    InjectedFault::of(e).is_some()
}
