//! The receive side of the SEND tests: a ring of receive buffers, one per receive WQE, each
//! checked when its SEND lands, cleared and posted again while more SENDs are due.
//!
//! Clearing matters for the oracle: a receive that completed without its bytes would
//! otherwise pass on the previous message's.

use anyhow::bail;
use rnic_transport::{Completion, Memory, RecvWr, Sge, WcOpcode, WcStatus};

use super::endpoint::{Endpoint, RECV_DEPTH};
use super::report::Verification;
use super::PATTERN_SEED;

/// Most bytes of receive buffers kept posted: fewer WQEs for large messages (the peer's RNR
/// retries cover the rest).
const RECV_BYTES_MAX: u64 = 64 << 20;

/// Receive buffers at `base`, `slots` of `size` bytes; WQE `slot` (its `wr_id`) lands at
/// `base + slot * size`.
pub struct RecvRing {
    base: u64,
    slots: u64,
    size: u64,
    lkey: u32,
    /// SENDs the run takes in all: no receive is posted beyond them.
    total: u64,
    /// Check every message against rnic's pattern (the peer is rnic).
    check: bool,
    posted: u64,
    pub received: u64,
    pub verification: Verification,
}

impl RecvRing {
    /// How many buffers a run of `total` SENDs of `size` bytes keeps posted: perftest's
    /// receive depth, fewer for a short run or large messages.
    pub fn slots_for(total: u64, size: u64) -> u64 {
        total
            .min(u64::from(RECV_DEPTH))
            .min((RECV_BYTES_MAX / size).max(1))
    }

    /// The bytes the ring's buffers take.
    pub fn bytes(total: u64, size: u64) -> u64 {
        RecvRing::slots_for(total, size) * size
    }

    pub fn new(base: u64, size: u64, lkey: u32, total: u64, check: bool) -> RecvRing {
        RecvRing {
            base,
            slots: RecvRing::slots_for(total, size),
            size,
            lkey,
            total,
            check,
            posted: 0,
            received: 0,
            verification: if check {
                Verification::Verified
            } else {
                Verification::PeerIsPerftest
            },
        }
    }

    fn addr(&self, slot: u64) -> u64 {
        self.base + slot * self.size
    }

    fn post(&mut self, ep: &mut Endpoint, slot: u64) -> anyhow::Result<()> {
        let sge = Sge {
            addr: self.addr(slot),
            len: self.size as u32,
            lkey: self.lkey,
        };
        ep.dev.post_recv(ep.qpn, RecvWr::new(slot, vec![sge]))?;
        self.posted += 1;
        Ok(())
    }

    /// Posts every buffer (before the handshake that lets the peer send).
    pub fn post_all(&mut self, ep: &mut Endpoint) -> anyhow::Result<()> {
        for slot in 0..self.slots {
            self.post(ep, slot)?;
        }
        Ok(())
    }

    /// Takes a receive completion: checks its status, opcode, length and `wr_id`, then the
    /// bytes, clears the buffer and posts it again if more SENDs are due.
    pub fn take(&mut self, ep: &mut Endpoint, c: &Completion) -> anyhow::Result<()> {
        let n = self.received;
        if c.status != WcStatus::Success {
            bail!("receive {n} completed with {:?}", c.status);
        }
        if c.opcode != WcOpcode::Recv {
            bail!("receive {n} completed as {:?}, want Recv", c.opcode);
        }
        if u64::from(c.byte_len) != self.size {
            bail!(
                "SEND {n} carried {} bytes, want -s/--size {}",
                c.byte_len,
                self.size
            );
        }
        if c.wr_id >= self.slots {
            bail!("a receive completed with wr_id {}, never posted", c.wr_id);
        }
        let addr = self.addr(c.wr_id);
        if self.check && self.verification == Verification::Verified {
            if let Some(at) = ep.mem.first_pattern_mismatch(addr, self.size, PATTERN_SEED) {
                self.verification = Verification::Mismatch {
                    offset: n * self.size + at,
                };
            }
        }
        clear(&mut ep.mem, addr, self.size);
        self.received += 1;
        if self.posted < self.total {
            self.post(ep, c.wr_id)?;
        }
        Ok(())
    }
}

/// Zeroes `len` bytes at `addr`.
pub fn clear(mem: &mut impl Memory, addr: u64, len: u64) {
    const ZEROS: [u8; 4096] = [0; 4096];
    let mut done = 0;
    while done < len {
        let n = (len - done).min(ZEROS.len() as u64);
        mem.write(addr + done, &ZEROS[..n as usize]);
        done += n;
    }
}
