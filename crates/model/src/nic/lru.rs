//! An O(1) least-recently-used set of keys with a fixed capacity in entries: a slab of
//! nodes in an intrusive doubly linked list (most recent at the head) plus a key → slot
//! index. Used by the QPC cache (index: a `Vec` by QPN) and the MPT/MTT caches (index: a
//! fixed-hasher map). Only lookups go through the map, never iteration, so results never
//! depend on hash order.

use rustc_hash::FxHashMap;

const NIL: u32 = u32::MAX;

/// Key → slot index of an [`Lru`].
pub trait SlotIndex {
    /// The slot holding `key`, if any.
    fn get(&self, key: u64) -> Option<u32>;
    /// Records `key` in `slot`.
    fn set(&mut self, key: u64, slot: u32);
    /// Forgets `key`.
    fn remove(&mut self, key: u64);
    /// Bytes used by the index itself (for memory accounting, not on-chip).
    fn heap_bytes(&self) -> usize;
}

/// Dense index for small integer keys (QPNs): a `Vec<u32>` grown on demand.
#[derive(Debug, Default, Clone)]
pub struct DenseIndex(Vec<u32>);

impl SlotIndex for DenseIndex {
    fn get(&self, key: u64) -> Option<u32> {
        match self.0.get(key as usize) {
            Some(&s) if s != NIL => Some(s),
            _ => None,
        }
    }
    fn set(&mut self, key: u64, slot: u32) {
        let k = key as usize;
        if k >= self.0.len() {
            crate::per_qp::grow_for(&mut self.0, k, || NIL);
        }
        self.0[k] = slot;
    }
    fn remove(&mut self, key: u64) {
        if let Some(s) = self.0.get_mut(key as usize) {
            *s = NIL;
        }
    }
    fn heap_bytes(&self) -> usize {
        self.0.capacity() * 4
    }
}

/// Sparse index for wide keys (MR keys, page numbers): a fixed-hasher map.
#[derive(Debug, Default, Clone)]
pub struct HashIndex(FxHashMap<u64, u32>);

impl SlotIndex for HashIndex {
    fn get(&self, key: u64) -> Option<u32> {
        self.0.get(&key).copied()
    }
    fn set(&mut self, key: u64, slot: u32) {
        self.0.insert(key, slot);
    }
    fn remove(&mut self, key: u64) {
        self.0.remove(&key);
    }
    fn heap_bytes(&self) -> usize {
        self.0.capacity() * 16
    }
}

/// A slot's neighbours in recency order (`NIL`: none).
#[derive(Debug, Clone, Copy)]
struct Link {
    prev: u32,
    next: u32,
}

/// Outcome of [`Lru::insert`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Evicted {
    /// The key that was evicted.
    pub key: u64,
    /// Whether it was dirty (needs a write-back).
    pub dirty: bool,
}

/// LRU set with O(1) lookup, touch, insert and eviction.
#[derive(Debug, Clone)]
pub struct Lru<I: SlotIndex> {
    cap: u32,
    keys: Vec<u64>,
    /// Each slot's neighbours, side by side: relinking a slot touches one place per
    /// neighbour instead of two arrays.
    links: Vec<Link>,
    dirty: Vec<bool>,
    head: u32,
    tail: u32,
    index: I,
}

impl<I: SlotIndex + Default> Lru<I> {
    /// An empty cache of `cap` entries (0 = holds nothing).
    pub fn new(cap: u32) -> Self {
        Lru {
            cap,
            keys: Vec::new(),
            links: Vec::new(),
            dirty: Vec::new(),
            head: NIL,
            tail: NIL,
            index: I::default(),
        }
    }
}

impl<I: SlotIndex> Lru<I> {
    /// Capacity in entries.
    pub fn capacity(&self) -> u32 {
        self.cap
    }

    /// Entries held.
    pub fn len(&self) -> usize {
        self.keys.len()
    }

    /// Whether the cache holds nothing.
    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }

    /// Whether `key` is cached (no recency update).
    pub fn contains(&self, key: u64) -> bool {
        self.index.get(key).is_some()
    }

    /// Looks `key` up; on a hit moves it to the most-recent position and, if `dirty`, marks
    /// it dirty. Returns whether it hit.
    pub fn touch(&mut self, key: u64, dirty: bool) -> bool {
        match self.index.get(key) {
            Some(s) => {
                // Already the most recent (a burst on one QP or page): relinking it in place
                // would leave the list as it is.
                if s != self.head {
                    self.unlink(s);
                    self.push_front(s);
                }
                if dirty {
                    self.dirty[s as usize] = true;
                }
                true
            }
            None => false,
        }
    }

    /// Inserts `key` (not present) as most recent; evicts the least recent entry when full.
    /// With capacity 0 nothing is stored.
    pub fn insert(&mut self, key: u64, dirty: bool) -> Option<Evicted> {
        if self.cap == 0 {
            return None;
        }
        if self.touch(key, dirty) {
            return None;
        }
        if (self.keys.len() as u32) < self.cap {
            let s = self.keys.len() as u32;
            self.keys.push(key);
            self.links.push(Link {
                prev: NIL,
                next: NIL,
            });
            self.dirty.push(dirty);
            self.index.set(key, s);
            self.push_front(s);
            return None;
        }
        let s = self.tail;
        let old = self.keys[s as usize];
        let was_dirty = self.dirty[s as usize];
        self.unlink(s);
        self.index.remove(old);
        self.keys[s as usize] = key;
        self.dirty[s as usize] = dirty;
        self.index.set(key, s);
        self.push_front(s);
        Some(Evicted {
            key: old,
            dirty: was_dirty,
        })
    }

    /// Heap bytes of the simulator's data structure (not the modelled on-chip bytes).
    pub fn heap_bytes(&self) -> usize {
        self.keys.capacity() * 17 + self.links.capacity() * 8 + self.index.heap_bytes()
    }

    fn unlink(&mut self, s: u32) {
        let Link { prev: p, next: n } = self.links[s as usize];
        if p != NIL {
            self.links[p as usize].next = n;
        } else {
            self.head = n;
        }
        if n != NIL {
            self.links[n as usize].prev = p;
        } else {
            self.tail = p;
        }
        self.links[s as usize] = Link {
            prev: NIL,
            next: NIL,
        };
    }

    fn push_front(&mut self, s: u32) {
        self.links[s as usize] = Link {
            prev: NIL,
            next: self.head,
        };
        if self.head != NIL {
            self.links[self.head as usize].prev = s;
        }
        self.head = s;
        if self.tail == NIL {
            self.tail = s;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lru_evicts_least_recent() {
        let mut c: Lru<DenseIndex> = Lru::new(2);
        assert_eq!(c.insert(1, false), None);
        assert_eq!(c.insert(2, true), None);
        assert!(c.touch(1, false));
        let e = c.insert(3, false).unwrap();
        assert_eq!(
            e,
            Evicted {
                key: 2,
                dirty: true
            }
        );
        assert!(c.contains(1) && c.contains(3) && !c.contains(2));
    }

    #[test]
    fn cyclic_access_over_capacity_always_misses() {
        let mut c: Lru<HashIndex> = Lru::new(3);
        let mut hits = 0;
        for i in 0..40u64 {
            let k = i % 4;
            if c.touch(k, false) {
                hits += 1;
            } else {
                c.insert(k, false);
            }
        }
        assert_eq!(hits, 0);
    }

    #[test]
    fn zero_capacity_holds_nothing() {
        let mut c: Lru<DenseIndex> = Lru::new(0);
        assert_eq!(c.insert(5, true), None);
        assert!(!c.contains(5));
    }
}
