//! Range queries of the LSM R-tree: candidates from the memory R-tree and every disk R-tree, each
//! validated by the strategy (Algorithm 3 for the Update Memo).

use super::LsmRTree;
use crate::geom::Rect;
use crate::rtree::SpatialEntry;
use crate::spatial::maintenance::Source;
use crate::Result;

/// The result of a range query.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct QueryOutcome {
    /// The fresh entries inside the range: exactly one per live object located there.
    pub results: Vec<SpatialEntry>,
    /// Entries the R-trees produced before validation.
    pub candidates: u64,
    /// Probes made to validate them: deleted-key lookups (Eager), primary key index lookups
    /// (Validation) or Update Memo lookups (UM).
    pub validation_lookups: u64,
}

impl LsmRTree {
    /// A range query: candidates from the memory R-tree and every disk R-tree (newest first), then
    /// each candidate validated by the strategy, in that order.
    pub fn query(&self, rect: &Rect) -> Result<QueryOutcome> {
        let mut out = QueryOutcome::default();
        let mut candidates: Vec<SpatialEntry> = Vec::new();
        // Memory entries first, then each disk component; remember where each component's
        // candidates start, since validation may depend on the components newer than a candidate's.
        self.memory.search(rect, |e| candidates.push(*e));
        let mut bounds = vec![candidates.len()];
        let comps: Vec<_> = self.store.runs().map(|(_, c)| c).collect();
        for c in &comps {
            c.rtree.search(&self.cache, rect, |e| candidates.push(*e))?;
            bounds.push(candidates.len());
        }
        out.candidates = candidates.len() as u64;
        let m = self.maintenance.as_ref();
        for e in &candidates[..bounds[0]] {
            if m.is_fresh(&self.cache, Source::Memory, e, &mut out.validation_lookups)? {
                out.results.push(*e);
            }
        }
        for (i, w) in bounds.windows(2).enumerate() {
            let source = Source::Disk { newer: &comps[..i] };
            for e in &candidates[w[0]..w[1]] {
                if m.is_fresh(&self.cache, source, e, &mut out.validation_lookups)? {
                    out.results.push(*e);
                }
            }
        }
        Ok(out)
    }
}
