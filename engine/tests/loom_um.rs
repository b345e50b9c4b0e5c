//! Model checking of the Update Memo's concurrent paths with loom: every interleaving of the
//! threads' record (put-if-absent, Algorithm 6, with CILS, Algorithm 5), release (Algorithm 7),
//! insert and is-obsolete calls on one object is explored, and each must end in the state a
//! sequential order would reach. Section 5 of the LSM RUM-tree paper argues three cases (two
//! threads creating the same entry, two raising its timestamp, a release racing an increment);
//! the models below cover those and three threads on one object.
//!
//! Run with `make loom` (`RUSTFLAGS="--cfg loom" cargo test --release -p lsmlab-engine --test
//! loom_um`, in its own target directory); without `--cfg loom` this file is empty.

#![cfg(loom)]
#![allow(clippy::unwrap_used, clippy::expect_used)] // a test may panic: that is its failure report

use std::sync::Arc;

use loom::thread;
use lsmlab_engine::spatial::{MemoState, UpdateMemo};

const OID: u64 = 42;

/// loom's model builder (its settings from the environment, `LOOM_MAX_PREEMPTIONS` among them),
/// allowing the branches of a check that reads every slot of the memo's 64 shards.
pub fn model() -> loom::model::Builder {
    let mut builder = loom::model::Builder::new();
    builder.max_branches = 50_000;
    builder
}

fn run(threads: Vec<Box<dyn Fn(&UpdateMemo) + Send + Sync>>, setup: fn(&UpdateMemo), check: fn(&UpdateMemo)) {
    let threads = Arc::new(threads);
    model().check(move || {
        let um = Arc::new(UpdateMemo::new());
        setup(&um);
        let handles: Vec<_> = (0..threads.len())
            .map(|i| {
                let um = um.clone();
                let threads = threads.clone();
                thread::spawn(move || threads[i](&um))
            })
            .collect();
        for h in handles {
            h.join().unwrap();
        }
        check(&um);
    });
}

#[test]
fn two_threads_creating_the_same_entry_make_one_with_both_counts() {
    run(
        vec![
            Box::new(|um| um.record_obsolete(OID, 5)),
            Box::new(|um| um.record_obsolete(OID, 9)),
        ],
        |_| {},
        |um| {
            assert_eq!(um.get(OID), Some(MemoState { ts: 9, cnt: 2 }));
            assert_eq!(um.len(), 1);
        },
    );
}

#[test]
fn cils_keeps_the_newest_timestamp_whatever_the_order() {
    run(
        vec![
            Box::new(|um| um.record_obsolete(OID, 8)),
            Box::new(|um| um.record_obsolete(OID, 6)),
            Box::new(|um| um.record_insert(OID, 7)),
        ],
        |um| um.record_obsolete(OID, 3),
        |um| assert_eq!(um.get(OID), Some(MemoState { ts: 8, cnt: 3 })),
    );
}

#[test]
fn a_release_racing_an_increment_never_loses_it() {
    // The entry's last obsolete entry is released while another update makes a new one obsolete:
    // whichever wins, the memo ends holding one obsolete entry with the newer timestamp.
    run(
        vec![
            Box::new(|um| um.release(OID)),
            Box::new(|um| um.record_obsolete(OID, 9)),
        ],
        |um| um.record_obsolete(OID, 3),
        |um| {
            assert_eq!(um.get(OID), Some(MemoState { ts: 9, cnt: 1 }));
            assert_eq!(um.len(), 1);
            assert!(!um.has_zero_count_entry());
        },
    );
}

#[test]
fn three_threads_on_one_object_agree_with_every_sequential_order() {
    run(
        vec![
            Box::new(|um| um.record_obsolete(OID, 4)),
            Box::new(|um| um.record_obsolete(OID, 6)),
            Box::new(|um| um.release(OID)),
        ],
        |um| um.record_obsolete(OID, 2),
        |um| {
            assert_eq!(um.get(OID).map(|s| s.cnt), Some(2));
            assert_eq!(um.get(OID).map(|s| s.ts), Some(6));
            assert_eq!(um.len(), 1);
        },
    );
}

#[test]
fn the_last_release_removes_the_entry_exactly_once() {
    run(
        vec![Box::new(|um| um.release(OID)), Box::new(|um| um.release(OID))],
        |um| {
            um.record_obsolete(OID, 1);
            um.record_obsolete(OID, 2);
        },
        |um| {
            assert_eq!(um.get(OID), None);
            assert_eq!(um.len(), 0);
        },
    );
}

#[test]
fn a_reader_sees_an_entry_obsolete_only_once_a_newer_stamp_is_recorded() {
    run(
        vec![
            Box::new(|um| um.record_obsolete(OID, 8)),
            Box::new(|um| {
                // Before the record the entry stamped 6 is fresh (ts 5 < 6); after it, obsolete.
                let first = um.is_obsolete(OID, 6);
                let second = um.is_obsolete(OID, 6);
                assert!(!first || second, "an obsolete entry became fresh again");
                assert!(
                    um.is_obsolete(OID, 4),
                    "an entry older than the memo's stamp is obsolete"
                );
            }),
        ],
        |um| um.record_obsolete(OID, 5),
        |um| assert_eq!(um.get(OID), Some(MemoState { ts: 8, cnt: 2 })),
    );
}
