//! Pages stored as interned lines: each 64-byte line keeps its first 16 bytes and a number
//! for its last 48, which a table shared by the pages holds once however many lines have
//! them.
//!
//! Why: the send queue rings of a perftest run are most of a node's memory at many QPs and
//! a deep queue (100,000 QPs × 128 WQEs × 64 B = 819 MB), yet the WQEs of one QP differ only
//! in their first 16 bytes (opcode, flags, immediate, wr_id); their SGE, remote address and
//! operands repeat. Stored this way a line takes 20 bytes. The bytes read back are exactly
//! the bytes written, whatever they are: lines whose tails all differ cost more than raw
//! lines (the table's entry besides), so only ranges that hold such repetitive records are
//! stored this way ([`crate::SparseMemory::intern_lines`]).

use rustc_hash::FxHashMap;

use crate::{LINE_BYTES, PAGE_BYTES};

/// Bytes of a line kept in the page.
pub const HEAD_BYTES: usize = 16;
/// Bytes of a line kept once in the shared table.
pub const TAIL_BYTES: usize = LINE_BYTES - HEAD_BYTES;
const LINES: usize = PAGE_BYTES / LINE_BYTES;

/// One line: its head and the number of its tail in the [`Tails`] table.
#[derive(Debug, Clone, Copy, Default)]
pub struct Line {
    head: [u8; HEAD_BYTES],
    tail: u32,
}

/// A page of interned lines.
pub type LinePage = Box<[Line; LINES]>;

/// A page whose lines are all zero.
pub fn zero_page() -> LinePage {
    Box::new([Line::default(); LINES])
}

/// A tail and its reference count.
#[derive(Debug, Clone, Copy)]
struct Entry {
    bytes: [u8; TAIL_BYTES],
    refs: u32,
}

/// The tails in use, each once, with the number of lines holding it. Tail 0 is the zero
/// tail, always present and never counted.
#[derive(Debug, Clone)]
pub struct Tails {
    /// Each tail's bytes and the number of lines holding it, side by side (one cache miss
    /// to compare and count).
    entries: Vec<Entry>,
    index: FxHashMap<[u8; TAIL_BYTES], u32>,
    free: Vec<u32>,
}

impl Default for Tails {
    fn default() -> Tails {
        Tails {
            entries: vec![Entry {
                bytes: [0; TAIL_BYTES],
                refs: 0,
            }],
            index: FxHashMap::default(),
            free: Vec::new(),
        }
    }
}

impl Tails {
    /// Distinct nonzero tails held.
    pub fn len(&self) -> usize {
        self.index.len()
    }

    /// No nonzero tail is held.
    pub fn is_empty(&self) -> bool {
        self.index.is_empty()
    }

    /// The 64 bytes of `line`.
    pub fn read(&self, line: &Line, out: &mut [u8; LINE_BYTES]) {
        out[..HEAD_BYTES].copy_from_slice(&line.head);
        out[HEAD_BYTES..].copy_from_slice(&self.entries[line.tail as usize].bytes);
    }

    /// Stores `bytes` in `line`, releasing the tail it held. `hint`: the tail of a
    /// neighbouring line, tried before the table (a ring's slots usually share one tail; the
    /// table lookup hashes 48 bytes and misses the cache at many QPs).
    pub fn write(&mut self, line: &mut Line, bytes: &[u8; LINE_BYTES], hint: Option<&Line>) {
        line.head.copy_from_slice(&bytes[..HEAD_BYTES]);
        let mut tail = [0u8; TAIL_BYTES];
        tail.copy_from_slice(&bytes[HEAD_BYTES..]);
        if self.entries[line.tail as usize].bytes == tail {
            return;
        }
        self.release(line.tail);
        if let Some(h) = hint.filter(|h| h.tail != 0) {
            let e = &mut self.entries[h.tail as usize];
            if e.bytes == tail {
                e.refs += 1;
                line.tail = h.tail;
                return;
            }
        }
        line.tail = self.intern(&tail);
    }

    fn intern(&mut self, tail: &[u8; TAIL_BYTES]) -> u32 {
        if tail.iter().all(|&b| b == 0) {
            return 0;
        }
        if let Some(&id) = self.index.get(tail) {
            self.entries[id as usize].refs += 1;
            return id;
        }
        let id = match self.free.pop() {
            Some(id) => {
                self.entries[id as usize] = Entry {
                    bytes: *tail,
                    refs: 1,
                };
                id
            }
            None => {
                self.entries.push(Entry {
                    bytes: *tail,
                    refs: 1,
                });
                (self.entries.len() - 1) as u32
            }
        };
        self.index.insert(*tail, id);
        id
    }

    fn release(&mut self, id: u32) {
        if id == 0 {
            return;
        }
        let e = &mut self.entries[id as usize];
        e.refs -= 1;
        if e.refs == 0 {
            self.index.remove(&e.bytes);
            self.free.push(id);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tails_are_shared_and_released() {
        let mut t = Tails::default();
        let mut page = zero_page();
        let mut a = [0u8; LINE_BYTES];
        a[0] = 1;
        a[40] = 9;
        let mut b = a;
        b[3] = 7;
        t.write(&mut page[0], &a, None);
        let first = page[0];
        t.write(&mut page[1], &b, Some(&first));
        assert_eq!(t.len(), 1, "same tail, different heads");
        let mut out = [0u8; LINE_BYTES];
        t.read(&page[1], &mut out);
        assert_eq!(out, b);
        b[63] = 5;
        t.write(&mut page[1], &b, Some(&first));
        assert_eq!(t.len(), 2);
        t.write(&mut page[0], &[0u8; LINE_BYTES], None);
        assert_eq!(t.len(), 1, "a's tail released");
        t.read(&page[0], &mut out);
        assert_eq!(out, [0u8; LINE_BYTES]);
        t.read(&page[1], &mut out);
        assert_eq!(out, b);
    }
}
