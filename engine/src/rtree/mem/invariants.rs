//! The structural invariants of the memory R-tree, checked by tests and debug assertions.

use super::{MemRTree, NO_NODE};

impl MemRTree {
    /// Checks the structural invariants: the root has no parent and an internal root has at least two
    /// children; every reachable node is live, links back to its parent and sits one level below it
    /// (so all leaves are at the same depth); no non-root node is empty; capacities are respected;
    /// each MBR stored in a parent is exactly the tight MBR of the child; the entry count, node count,
    /// free list and live-leaf set agree with what is reachable. For tests and debug assertions.
    pub fn check_invariants(&self) -> Result<(), String> {
        let root = self
            .nodes
            .get(self.root as usize)
            .ok_or("root id out of the arena")?;
        if !root.live || root.parent != NO_NODE {
            return Err(format!("root {} is not live or has a parent", self.root));
        }
        if !root.is_leaf() && root.children.len() < 2 {
            return Err(format!(
                "internal root {} has {} children",
                self.root,
                root.children.len()
            ));
        }
        let mut seen = vec![false; self.nodes.len()];
        let (mut entries, mut nodes, mut leaves) = (0usize, 0usize, 0usize);
        let mut stack = vec![self.root];
        while let Some(id) = stack.pop() {
            let n = &self.nodes[id as usize];
            if std::mem::replace(&mut seen[id as usize], true) {
                return Err(format!("node {id} reached twice"));
            }
            if !n.live {
                return Err(format!("node {id} is reachable but free"));
            }
            nodes += 1;
            if id != self.root && n.fanout() == 0 {
                return Err(format!("non-root node {id} is empty"));
            }
            if n.is_leaf() {
                leaves += 1;
                entries += n.entries.len();
                if n.entries.len() > self.leaf_capacity {
                    return Err(format!(
                        "leaf {id} holds {} > {}",
                        n.entries.len(),
                        self.leaf_capacity
                    ));
                }
                if !n.rects.is_empty() || !n.children.is_empty() {
                    return Err(format!("leaf {id} has children"));
                }
                if !self.live_leaves.contains(&id) {
                    return Err(format!("leaf {id} missing from the live-leaf set"));
                }
                continue;
            }
            if !n.entries.is_empty() {
                return Err(format!("internal node {id} holds entries"));
            }
            if n.update_counter != 0 {
                return Err(format!("internal node {id} has an update counter"));
            }
            if n.children.len() > self.internal_capacity || n.children.len() != n.rects.len() {
                return Err(format!(
                    "internal node {id}: {} children, {} rects",
                    n.children.len(),
                    n.rects.len()
                ));
            }
            for (r, &c) in n.rects.iter().zip(&n.children) {
                let child = self
                    .nodes
                    .get(c as usize)
                    .ok_or(format!("child {c} of {id} out of arena"))?;
                if child.parent != id {
                    return Err(format!("child {c} of {id} links to parent {}", child.parent));
                }
                if child.level + 1 != n.level {
                    return Err(format!(
                        "child {c} at level {} under {id} at level {}",
                        child.level, n.level
                    ));
                }
                if *r != child.mbr() {
                    return Err(format!("MBR of {c} in {id} is {r:?}, tight is {:?}", child.mbr()));
                }
                stack.push(c);
            }
        }
        if entries != self.len {
            return Err(format!("len {} but {entries} entries reachable", self.len));
        }
        if nodes != self.node_count() {
            return Err(format!(
                "node_count {} but {nodes} nodes reachable",
                self.node_count()
            ));
        }
        if leaves != self.live_leaves.len() {
            return Err(format!(
                "{} live leaves recorded, {leaves} reachable",
                self.live_leaves.len()
            ));
        }
        let mut in_free = vec![false; self.nodes.len()];
        for &f in &self.free {
            let n = self
                .nodes
                .get(f as usize)
                .ok_or(format!("free id {f} out of arena"))?;
            if n.live || std::mem::replace(&mut in_free[f as usize], true) {
                return Err(format!("free id {f} is live or listed twice"));
            }
        }
        Ok(())
    }
}
