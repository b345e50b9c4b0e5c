//! The free-space map: for each data page the longest entry it can still take, and the leftmost
//! page with room for a given entry.
//!
//! OrientDB keeps this in its own file (`FreeSpaceMap`, a two-level max tree over normalised free
//! space, consulted on inserts and moves). lsmlab keeps it in memory as an exact max segment tree
//! and does not count its page accesses; both layouts use the same one, so the choice does not
//! favour either (documented in the experiments' notes).

#[derive(Clone, Debug, Default)]
/// The free room of every data page of a cluster, in bytes, with a search for the leftmost page
/// that can take an entry (an exact max segment tree, in memory).
pub struct FreeSpaceMap {
    /// Leaves: `size..2*size`; inner node `i` holds the max of `2i` and `2i+1`.
    tree: Vec<u32>,
    size: usize,
    len: usize,
}

impl FreeSpaceMap {
    /// Pages tracked.
    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.len
    }

    /// Tracks one more page (index `len()`), with `room` bytes.
    pub fn push(&mut self, room: usize) {
        if self.len == self.size {
            let size = (self.size * 2).max(16);
            let mut tree = vec![0u32; 2 * size];
            tree[size..size + self.len].copy_from_slice(&self.tree[self.size..self.size + self.len]);
            for i in (1..size).rev() {
                tree[i] = tree[2 * i].max(tree[2 * i + 1]);
            }
            self.tree = tree;
            self.size = size;
        }
        self.len += 1;
        self.set(self.len - 1, room);
    }

    /// Sets the room of page `page`.
    pub fn set(&mut self, page: usize, room: usize) {
        let mut i = self.size + page;
        self.tree[i] = room.min(u32::MAX as usize) as u32;
        while i > 1 {
            i /= 2;
            self.tree[i] = self.tree[2 * i].max(self.tree[2 * i + 1]);
        }
    }

    /// The room of page `page` in bytes, as last [set](Self::set).
    #[cfg(test)]
    pub fn room(&self, page: usize) -> usize {
        self.tree[self.size + page] as usize
    }

    /// The leftmost page with at least `need` bytes of room, skipping `except`.
    pub fn find(&self, need: usize, except: Option<usize>) -> Option<usize> {
        if self.len == 0 {
            return None;
        }
        // Temporarily treat `except` as full by searching around it.
        let hit = self.find_from(1, need, except);
        hit.filter(|&p| p < self.len)
    }

    fn find_from(&self, node: usize, need: usize, except: Option<usize>) -> Option<usize> {
        if (self.tree[node] as usize) < need {
            return None;
        }
        if node >= self.size {
            let page = node - self.size;
            return if Some(page) == except { None } else { Some(page) };
        }
        self.find_from(2 * node, need, except)
            .or_else(|| self.find_from(2 * node + 1, need, except))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_the_leftmost_page_with_room() {
        let mut f = FreeSpaceMap::default();
        for r in [10, 50, 20, 50, 5] {
            f.push(r);
        }
        for _ in 0..40 {
            f.push(1);
        }
        assert_eq!(f.find(30, None), Some(1));
        assert_eq!(f.find(30, Some(1)), Some(3));
        assert_eq!(f.find(51, None), None);
        f.set(1, 0);
        assert_eq!(f.find(30, None), Some(3));
        assert_eq!(f.find(1, None), Some(0));
        assert_eq!(f.room(3), 50);
        assert_eq!(f.len(), 45);
    }
}
