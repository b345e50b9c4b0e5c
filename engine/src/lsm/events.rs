//! Lifecycle events: what flushes and compactions do, told to whoever subscribed (a cache warm-up
//! policy prefetching a compaction's outputs, a test recording the history).
//!
//! Two kinds of news reach an observer: [`LifecycleEvent`]s, one per step of an operation, and
//! [`WrittenBlock`]s, one per page an operation writes, as it writes it (with the bytes, which a
//! cache warm-up policy may admit without a device read; `crate::kvstore::CacheWarmer` is that
//! observer).

use super::version::{KeyRange, RunId};
use crate::storage::PageId;
use crate::Result;
use parking_lot::Mutex;

/// A contiguous range of pages on the device.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Extent {
    /// The first page.
    pub first: PageId,
    /// Number of pages, `first` included.
    pub pages: u64,
}

/// A block of a run that holds a key interval of its own (an SSTable data block, an R-tree leaf).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BlockKeys<K> {
    /// The block's page.
    pub page: PageId,
    /// Its first and last keys.
    pub keys: KeyRange<K>,
}

/// A page a flush or compaction has just written, told to observers as it is written.
#[derive(Clone, Copy, Debug)]
pub struct WrittenBlock<'a, K> {
    /// The page.
    pub page: PageId,
    /// Its first and last keys when it holds keys of its own (a data block, a leaf); `None` for a
    /// page that serves the run's structure (an index node, a filter, an antimatter page).
    pub keys: Option<KeyRange<K>>,
    /// The page's bytes as written.
    pub bytes: &'a [u8],
}

/// Where a run's writer reports each page it writes ([`LifecycleObserver::on_block`] of every
/// observer); an error aborts the operation.
pub type BlockSink<'a, K> = dyn FnMut(&WrittenBlock<'_, K>) -> Result<()> + 'a;

/// A sink that drops every block (a run written with no observer to tell).
pub fn no_blocks<K>(_: &WrittenBlock<'_, K>) -> Result<()> {
    Ok(())
}

/// A run as events describe it: where it lies and which keys it holds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RunExtents<K> {
    /// The run's id in its store.
    pub id: RunId,
    /// The level it is (or was) installed at.
    pub level: usize,
    /// Entries it holds.
    pub entries: u64,
    /// Its key range; `None` for an empty run.
    pub keys: Option<KeyRange<K>>,
    /// The pages it occupies.
    pub extents: Vec<Extent>,
    /// Its blocks that hold key intervals, in key order, where the format keeps them (empty
    /// otherwise): what a warm-up policy matches against its predictions.
    pub blocks: Vec<BlockKeys<K>>,
}

/// What a compaction does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CompactionKind {
    /// Inputs are read, merged and written out as new runs.
    Merge,
    /// A run changes level unchanged (a trivial move): no page is read or written.
    Move,
    /// Whole runs are deleted.
    Drop,
}

/// One step of the lifecycle. Every `*Started` is followed by its `*Finished` or by `Aborted`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LifecycleEvent<K> {
    /// A flush of `entries` memtable entries under flush sequence number `seq` begins.
    FlushStarted {
        /// The flush's sequence number (each flush takes the next one).
        seq: u64,
        /// Memtable entries being flushed.
        entries: u64,
        /// The keys the flushed run will hold, where the index knows them.
        keys: Option<KeyRange<K>>,
    },
    /// The flushed run is installed on top of level 0.
    FlushFinished {
        /// The sequence number of its `FlushStarted`.
        seq: u64,
        /// The run written.
        output: RunExtents<K>,
    },
    /// A compaction of `inputs` into `output_level` begins.
    CompactionStarted {
        /// Merge, move or drop.
        kind: CompactionKind,
        /// The runs compacted.
        inputs: Vec<RunExtents<K>>,
        /// The level the outputs go to (0 for a drop).
        output_level: usize,
    },
    /// The outputs are installed and the inputs retired (their pages are freed after this event).
    CompactionFinished {
        /// Merge, move or drop.
        kind: CompactionKind,
        /// The runs retired.
        inputs: Vec<RunExtents<K>>,
        /// The runs installed (none for a drop; the run itself, at its new level, for a move).
        outputs: Vec<RunExtents<K>>,
    },
    /// The flush or compaction in progress failed and changed nothing.
    Aborted {
        /// The error, as text.
        error: String,
    },
}

/// Receives lifecycle events, synchronously, on the thread that flushes or compacts.
pub trait LifecycleObserver<K>: Send + Sync {
    /// Called once per event, in lifecycle order. An error from a `*Started` event refuses the
    /// operation: it writes nothing, every observer is told `Aborted`, and the operation returns
    /// the error. What an observer answers to any other event changes nothing.
    fn on_event(&self, event: &LifecycleEvent<K>) -> Result<()>;

    /// Called once per page the operation in progress writes, after the page is written and in
    /// the order of writing. An error aborts the operation.
    fn on_block(&self, _block: &WrittenBlock<'_, K>) -> Result<()> {
        Ok(())
    }
}

/// An observer that keeps every event (for tests and traces).
#[derive(Debug, Default)]
pub struct EventLog<K> {
    events: Mutex<Vec<LifecycleEvent<K>>>,
}

impl<K: Clone> EventLog<K> {
    /// An empty log.
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
    fn on_event(&self, event: &LifecycleEvent<K>) -> Result<()> {
        self.events.lock().push(event.clone());
        Ok(())
    }
}
