//! The three memory levels ([`Layout`]): where an insert goes, when a memtable is sealed, which
//! sealed memtable is merged or flushed next. Flushing itself is the store's: the level only
//! hands over the memtables to flush, in order, through [`Level::to_flush`].

use std::collections::VecDeque;

use rustc_hash::{FxHashMap, FxHashSet};

use super::memtable::Memtable;
use super::{Key, Layout, RunKind, Seq, SeriesConfig, SeriesId, Timestamp, Value};

/// How a point is classified as delayed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Rule {
    /// DIOL and the authors' baseline (`isDelayData`): delayed iff its time is before the first
    /// time of the active normal memtable (`startKey`).
    ActiveStart,
    /// Real IoTDB: unsequence iff its time is not after the series' last flushed time.
    LastFlushed,
}

pub(crate) struct Level {
    layout: Layout,
    rule: Rule,
    normal_cap: u64,
    delay_cap: u64,
    immutable_limit: usize,
    d: super::DiolParams,
    active_normal: Memtable,
    active_delay: Memtable,
    /// `Iotdb`/`IotdbReal`: sealed memtables of both kinds, oldest first.
    imm: VecDeque<Memtable>,
    /// `Diol`: the M1 and M2 lists, oldest first.
    n_m1: Vec<Memtable>,
    d_m1: Vec<Memtable>,
    n_m2: Vec<Memtable>,
    d_m2: Vec<Memtable>,
    /// `ActiveStart`: the active normal memtable's `startKey` per series.
    starts: FxHashMap<SeriesId, Timestamp>,
    /// Series whose next normal insert sets their `startKey` (armed when a normal memtable that
    /// held them is sealed, as `insertData` does after `transformM0ToM1`).
    armed: FxHashSet<SeriesId>,
    /// `LastFlushed`: the last flushed (sealed sequence) time per series.
    last_flushed: FxHashMap<SeriesId, Timestamp>,
    /// Memtables to flush, in order.
    pub to_flush: Vec<Memtable>,
    /// Points held by all memtables.
    pub mem_points: u64,
    /// The largest key memory has ever held.
    highest: Option<Key>,
    pub memory_compactions: u64,
    pub memory_compaction_points: u64,
}

/// What [`Level::insert`] did.
pub(crate) struct Inserted {
    pub delayed: bool,
    pub replaced: bool,
}

impl Level {
    pub fn new(cfg: &SeriesConfig) -> Level {
        let (normal_cap, delay_cap) = match cfg.layout {
            Layout::Iotdb | Layout::IotdbReal => {
                let c = cfg.capacity(cfg.iotdb.memtable_bytes, cfg.iotdb.fill);
                (c, c)
            }
            Layout::Diol => (
                cfg.capacity(cfg.diol.normal_bytes, cfg.diol.normal_fill),
                cfg.capacity(cfg.diol.delay_bytes, cfg.diol.delay_fill),
            ),
        };
        Level {
            layout: cfg.layout,
            rule: if cfg.layout == Layout::IotdbReal {
                Rule::LastFlushed
            } else {
                Rule::ActiveStart
            },
            normal_cap,
            delay_cap,
            immutable_limit: cfg.iotdb.immutable_limit,
            d: cfg.diol.clone(),
            active_normal: Memtable::new(RunKind::Normal),
            active_delay: Memtable::new(RunKind::Delay),
            imm: VecDeque::new(),
            n_m1: Vec::new(),
            d_m1: Vec::new(),
            n_m2: Vec::new(),
            d_m2: Vec::new(),
            starts: FxHashMap::default(),
            armed: FxHashSet::default(),
            last_flushed: FxHashMap::default(),
            to_flush: Vec::new(),
            mem_points: 0,
            highest: None,
            memory_compactions: 0,
            memory_compaction_points: 0,
        }
    }

    /// Points a normal and a delay memtable hold when full.
    pub fn capacities(&self) -> (u64, u64) {
        (self.normal_cap, self.delay_cap)
    }

    fn is_delayed(&self, key: Key) -> bool {
        match self.rule {
            Rule::ActiveStart => key.1 < self.starts.get(&key.0).copied().unwrap_or(0),
            Rule::LastFlushed => self.last_flushed.get(&key.0).is_some_and(|&l| key.1 <= l),
        }
    }

    fn sealed(&self) -> impl Iterator<Item = &Memtable> {
        self.imm
            .iter()
            .chain(&self.n_m1)
            .chain(&self.n_m2)
            .chain(&self.d_m1)
            .chain(&self.d_m2)
    }

    fn sealed_mut(&mut self) -> impl Iterator<Item = &mut Memtable> {
        self.imm
            .iter_mut()
            .chain(&mut self.n_m1)
            .chain(&mut self.n_m2)
            .chain(&mut self.d_m1)
            .chain(&mut self.d_m2)
    }

    /// Inserts one version. An older version of the same point still in memory is dropped, so
    /// memory never holds two versions of a point and what it holds is newer than anything on
    /// disk (the store's reads rely on this).
    pub fn insert(&mut self, key: Key, value: Value, seq: Seq) -> Inserted {
        let delayed = loop {
            let delayed = self.is_delayed(key);
            let (full, kind) = if delayed {
                (self.active_delay.len() >= self.delay_cap, RunKind::Delay)
            } else {
                (self.active_normal.len() >= self.normal_cap, RunKind::Normal)
            };
            if !full {
                break delayed;
            }
            self.seal(kind);
        };
        let target_kind = if delayed { RunKind::Delay } else { RunKind::Normal };
        // Drop an older version held by another memtable (none can exist above every key
        // memory has held: the common case of an in-order point skips the search).
        let mut dropped = 0;
        let fresh_key = self.highest.is_none_or(|h| key > h);
        self.highest = Some(self.highest.map_or(key, |h| h.max(key)));
        for m in std::iter::once(&mut self.active_normal)
            .chain(std::iter::once(&mut self.active_delay))
            .chain(self.imm.iter_mut())
            .chain(&mut self.n_m1)
            .chain(&mut self.n_m2)
            .chain(&mut self.d_m1)
            .chain(&mut self.d_m2)
        {
            if fresh_key {
                break;
            }
            if m.may_hold(key) && m.remove(key) {
                dropped += 1;
            }
        }
        let replaced = dropped > 0;
        self.mem_points -= dropped;
        let target = match target_kind {
            RunKind::Delay => &mut self.active_delay,
            RunKind::Normal => &mut self.active_normal,
        };
        target.put(key, value, seq);
        self.mem_points += 1;
        if !delayed && self.rule == Rule::ActiveStart && self.armed.remove(&key.0) {
            self.starts.insert(key.0, key.1);
        }
        Inserted { delayed, replaced }
    }

    /// Seals the active memtable of `kind` and starts a new one.
    fn seal(&mut self, kind: RunKind) {
        let fresh = Memtable::new(kind);
        let mut m = match kind {
            RunKind::Normal => std::mem::replace(&mut self.active_normal, fresh),
            RunKind::Delay => std::mem::replace(&mut self.active_delay, fresh),
        };
        if m.is_empty() {
            return;
        }
        m.refresh_bounds();
        if kind == RunKind::Normal {
            self.note_sealed_normal(&m);
        }
        match self.layout {
            Layout::Iotdb | Layout::IotdbReal => {
                // `transformActiveToImm`: flush the oldest sealed memtable first when the list is full.
                if self.imm.len() >= self.immutable_limit {
                    // Never empty here: the configuration refuses an `immutable_limit` of 0.
                    if let Some(f) = self.imm.pop_front() {
                        self.flush(f);
                    }
                }
                self.imm.push_back(m);
            }
            Layout::Diol => {
                // `transformM0ToM1`: age the M1 list of this kind, then `putMemtableToM1List`.
                let list = match kind {
                    RunKind::Normal => &mut self.n_m1,
                    RunKind::Delay => &mut self.d_m1,
                };
                list.iter_mut().for_each(|x| x.ttl -= 1);
                m.ttl = self.d.m1_ttl;
                if kind == RunKind::Normal {
                    m.delay_count = m.estimate_delays();
                }
                self.put_m1(m);
            }
        }
    }

    /// The classification state a sealed normal memtable leaves behind.
    fn note_sealed_normal(&mut self, m: &Memtable) {
        for (s, t) in m.max_times() {
            match self.rule {
                Rule::ActiveStart => {
                    // `updateNormalMem(id, lastKey)`: the new active starts at the sealed one's
                    // last time until its first normal insert sets `startKey` to that insert.
                    self.starts.insert(s, t);
                    self.armed.insert(s);
                }
                Rule::LastFlushed => {
                    let e = self.last_flushed.entry(s).or_insert(t);
                    *e = (*e).max(t);
                }
            }
        }
    }

    fn flush(&mut self, m: Memtable) {
        self.mem_points -= m.len();
        self.to_flush.push(m);
    }

    /// `ImmutableMemtableController::putMemtableToM1List`: make room in M1 (merging a normal
    /// memtable with a delay one, or moving the oldest delay memtable on) before adding `m`.
    /// The authors test `0.9 * limit <= size`, which for their limits (5, 8) is `size >= limit`.
    fn put_m1(&mut self, m: Memtable) {
        if self.n_m1.len() >= self.d.normal_m1 {
            self.m1_compaction();
        }
        if self.d_m1.len() >= self.d.delay_m1 {
            self.convert_old_delay();
        }
        match m.kind {
            RunKind::Normal => self.n_m1.push(m),
            RunKind::Delay => self.d_m1.push(m),
        }
    }

    /// `ImmutableMemtableController::compaction` with `CompactionController::checkTimeOut` and
    /// `CompactProcessor::compaction`.
    fn m1_compaction(&mut self) {
        if self.n_m1.is_empty() {
            return;
        }
        // The normal memtable whose TTL is exactly 0 (the last such; or, with `ExpiredTtl`, the
        // one whose TTL ran out first), else the first with the fewest estimated delays.
        let expired = match self.d.m1_pick {
            super::M1Pick::ExactZeroTtl => self.n_m1.iter().rposition(|m| m.ttl == 0),
            super::M1Pick::ExpiredTtl => self
                .n_m1
                .iter()
                .enumerate()
                .filter(|(_, m)| m.ttl <= 0)
                .min_by_key(|(i, m)| (m.ttl, *i))
                .map(|(i, _)| i),
        };
        let idx = match expired {
            Some(i) => i,
            None => {
                let mut best = 0;
                for (i, m) in self.n_m1.iter().enumerate() {
                    if m.delay_count < self.n_m1[best].delay_count {
                        best = i;
                    }
                }
                best
            }
        };
        let mut normal = self.n_m1.remove(idx);
        if let Some((lo, hi)) = normal.bounds() {
            // The delay memtable holding most points in the normal one's time range; ties go to
            // the one with the lower TTL, the later one when TTLs tie (`findTargetMem`).
            let mut target: Option<(usize, u64)> = None;
            for (i, dm) in self.d_m1.iter().enumerate() {
                if !dm.may_meet(lo, hi) {
                    continue;
                }
                let cnt = dm.count_in(lo, hi);
                if cnt == 0 {
                    continue;
                }
                match target {
                    Some((_, max)) if cnt < max => {}
                    Some((t, max)) if cnt == max => {
                        if self.d_m1[t].ttl >= dm.ttl {
                            target = Some((i, max));
                        }
                    }
                    _ => target = Some((i, cnt)),
                }
            }
            if let Some((t, _)) = target {
                let mut dm = self.d_m1.remove(t);
                let moved = dm.take_range(lo, hi);
                dm.refresh_bounds();
                self.memory_compactions += 1;
                self.memory_compaction_points += moved.len() as u64;
                for (k, (v, s)) in moved {
                    normal.put(k, v, s);
                }
                self.m1_to_m2(dm);
            }
        }
        self.m1_to_m2(normal);
    }

    /// `convertOldDelayToM2`: the delay memtable with the lowest TTL (the last such) moves to M2.
    fn convert_old_delay(&mut self) {
        let mut idx = None;
        let mut min = i64::MAX;
        for (i, m) in self.d_m1.iter().enumerate() {
            if m.ttl <= min {
                min = m.ttl;
                idx = Some(i);
            }
        }
        if let Some(i) = idx {
            let m = self.d_m1.remove(i);
            self.m1_to_m2(m);
        }
    }

    /// `transformM1toM2`: flush from M2 whichever list is full (both are checked on every move,
    /// as the authors do), then age the M2 list of `m`'s kind and add `m`.
    fn m1_to_m2(&mut self, mut m: Memtable) {
        if self.n_m2.len() >= self.d.normal_m2 {
            self.m2_flush(RunKind::Normal);
        }
        if self.d_m2.len() >= self.d.delay_m2 {
            self.m2_flush(RunKind::Delay);
        }
        m.ttl = self.d.m2_ttl;
        let list = match m.kind {
            RunKind::Normal => &mut self.n_m2,
            RunKind::Delay => &mut self.d_m2,
        };
        list.iter_mut().for_each(|x| x.ttl -= 1);
        list.push(m);
    }

    /// `FlushController::checkTimeout`: every M2 memtable of `kind` whose TTL ran out, else the
    /// one read least (the first such).
    fn m2_flush(&mut self, kind: RunKind) {
        let list = match kind {
            RunKind::Normal => &mut self.n_m2,
            RunKind::Delay => &mut self.d_m2,
        };
        let mut out = Vec::new();
        let mut i = 0;
        while i < list.len() {
            if list[i].ttl <= 0 {
                out.push(list.remove(i));
            } else {
                i += 1;
            }
        }
        if out.is_empty() && !list.is_empty() {
            let mut best = 0;
            for (i, m) in list.iter().enumerate() {
                if m.access < list[best].access {
                    best = i;
                }
            }
            out.push(list.remove(best));
        }
        for m in out {
            self.flush(m);
        }
    }

    /// Moves every memtable, active ones included, to [`Level::to_flush`].
    pub fn flush_all(&mut self) {
        for kind in [RunKind::Normal, RunKind::Delay] {
            let fresh = Memtable::new(kind);
            let mut m = match kind {
                RunKind::Normal => std::mem::replace(&mut self.active_normal, fresh),
                RunKind::Delay => std::mem::replace(&mut self.active_delay, fresh),
            };
            if m.is_empty() {
                continue;
            }
            m.refresh_bounds();
            if kind == RunKind::Normal {
                self.note_sealed_normal(&m);
            }
            self.flush(m);
        }
        let mut rest: Vec<Memtable> = Vec::new();
        rest.extend(self.imm.drain(..));
        rest.append(&mut self.n_m1);
        rest.append(&mut self.d_m1);
        rest.append(&mut self.n_m2);
        rest.append(&mut self.d_m2);
        for m in rest {
            self.flush(m);
        }
    }

    /// The version of `key` held in memory; a sealed memtable that holds it counts an access.
    pub fn get(&mut self, key: Key) -> Option<(Value, Seq)> {
        for m in [&self.active_normal, &self.active_delay] {
            if m.may_hold(key) {
                if let Some(x) = m.get(key) {
                    return Some(x);
                }
            }
        }
        for m in self.sealed_mut() {
            if m.may_hold(key) {
                if let Some(x) = m.get(key) {
                    m.access += 1;
                    return Some(x);
                }
            }
        }
        None
    }

    /// Appends the points of `series` in `[from, to]` held in memory; sealed memtables count the
    /// points they returned as accesses (`rangeInVector`).
    pub fn range(
        &mut self,
        series: SeriesId,
        from: Timestamp,
        to: Timestamp,
        out: &mut Vec<(Key, Value, Seq)>,
    ) {
        let (lo, hi) = ((series, from), (series, to));
        for m in [&self.active_normal, &self.active_delay] {
            if m.may_meet(lo, hi) {
                out.extend(m.range(series, from, to).map(|(t, v, s)| ((series, t), v, s)));
            }
        }
        for m in self.sealed_mut() {
            if m.may_meet(lo, hi) {
                let before = out.len();
                out.extend(m.range(series, from, to).map(|(t, v, s)| ((series, t), v, s)));
                m.access += (out.len() - before) as u64;
            }
        }
    }

    /// Memtables held, active ones included (for tests and notes).
    pub fn memtables(&self) -> usize {
        2 + self.sealed().count()
    }
}
