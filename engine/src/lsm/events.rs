//! Lifecycle events: what flushes and compactions do, told to whoever subscribed (a cache warm-up
//! policy prefetching a compaction's outputs, a test recording the history).

use super::version::{KeyRange, RunId};
use crate::storage::PageId;
use parking_lot::Mutex;

/// A contiguous range of pages on the device.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Extent {
    pub first: PageId,
    pub pages: u64,
}

/// A run as events describe it: where it lies and which keys it holds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RunExtents<K> {
    pub id: RunId,
    pub level: usize,
    pub entries: u64,
    pub keys: Option<KeyRange<K>>,
    pub extents: Vec<Extent>,
}

/// What a compaction does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CompactionKind {
    Merge,
    Move,
    Drop,
}

/// One step of the lifecycle. Every `*Started` is followed by its `*Finished` or by `Aborted`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LifecycleEvent<K> {
    /// A flush of `entries` memtable entries under flush sequence number `seq` begins.
    FlushStarted { seq: u64, entries: u64 },
    /// The flushed run is installed on top of level 0.
    FlushFinished { seq: u64, output: RunExtents<K> },
    /// A compaction of `inputs` into `output_level` begins.
    CompactionStarted {
        kind: CompactionKind,
        inputs: Vec<RunExtents<K>>,
        output_level: usize,
    },
    /// The outputs are installed and the inputs retired (their pages are freed after this event).
    CompactionFinished {
        kind: CompactionKind,
        inputs: Vec<RunExtents<K>>,
        outputs: Vec<RunExtents<K>>,
    },
    /// The flush or compaction in progress failed and changed nothing.
    Aborted { error: String },
}

/// Receives lifecycle events, synchronously, on the thread that flushes or compacts.
pub trait LifecycleObserver<K>: Send + Sync {
    fn on_event(&self, event: &LifecycleEvent<K>);
}

/// An observer that keeps every event (for tests and traces).
#[derive(Debug, Default)]
pub struct EventLog<K> {
    events: Mutex<Vec<LifecycleEvent<K>>>,
}

impl<K: Clone> EventLog<K> {
    pub fn new() -> Self {
        EventLog {
            events: Mutex::new(Vec::new()),
        }
    }

    /// The events so far, oldest first.
    pub fn events(&self) -> Vec<LifecycleEvent<K>> {
        self.events.lock().clone()
    }
}

impl<K: Clone + Send> LifecycleObserver<K> for EventLog<K> {
    fn on_event(&self, event: &LifecycleEvent<K>) {
        self.events.lock().push(event.clone());
    }
}
