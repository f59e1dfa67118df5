//! The receive side of the SEND tests: a ring of receive buffers, one per receive WQE, each
//! checked when its SEND lands, cleared and posted again while more SENDs are due.
//!
//! Clearing matters for the oracle: a receive that completed without its bytes would
//! otherwise pass on the previous message's.
//!
//! With `-q` each QP has a ring of its own ([`RecvRings`]), as perftest posts `rx_depth`
//! receives on each QP and reposts on the QP whose receive completed; each QP's messages are
//! checked against that QP's pattern.
//!
//! With `--use-srq` the rings post on the endpoint's shared receive queue, each its share of
//! `rx_depth` (perftest's `rx_depth / num_of_qps`). A message of QP `q` may then land in any
//! ring's buffer: it is checked against QP `q`'s pattern and counted as `q`'s, and the
//! buffer goes back to the ring it belongs to, as perftest reposts by the WQE's `wr_id`.
//!
//! Over UD every buffer starts with the 40 bytes of the GRH area (verbs: the receiver writes
//! the packet's network header there, the payload follows), as perftest's `UD_ADDITION`.

use anyhow::bail;
use rnic_transport::{
    ud::GRH_BYTES, Completion, Memory, RecvWr, ServiceType, Sge, WcOpcode, WcStatus,
};

use super::bw::over_every_qp;
use super::endpoint::{recv_depth, Endpoint};
use super::report::Verification;
use super::session::Session;
use super::{qp_pattern_seed, LiveOptions, PATTERN_SEED};

/// Most bytes of receive buffers kept posted, over all the QPs: fewer WQEs for large
/// messages or many QPs (the peer's RNR retries cover the rest).
const RECV_BYTES_MAX: u64 = 64 << 20;

/// How messages of one size land in receive buffers of one service.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RecvLayout {
    pub service: ServiceType,
    /// Payload bytes of a message.
    pub size: u64,
    /// The QPs whose rings share [`RECV_BYTES_MAX`] (`-q`).
    pub qps: u64,
    /// Receives a QP keeps posted at most: perftest's `rx_depth` (`-r`, or the service's
    /// default).
    pub depth: u32,
}

impl RecvLayout {
    /// RC or UC messages of `size` bytes.
    pub fn rc(size: u64) -> RecvLayout {
        RecvLayout {
            service: ServiceType::Rc,
            size,
            qps: 1,
            depth: recv_depth(ServiceType::Rc),
        }
    }

    /// The messages of a SEND test's options; with `--use-srq` each QP's ring is its share
    /// of the shared queue's `-r`.
    pub fn of(o: &LiveOptions) -> RecvLayout {
        RecvLayout {
            service: o.service,
            size: o.size,
            qps: u64::from(o.qps),
            depth: if o.use_srq {
                (o.rx_depth / o.qps.max(1)).max(1)
            } else {
                o.rx_depth
            },
        }
    }

    /// Bytes before the payload in each buffer: UD's GRH area.
    fn grh_bytes(&self) -> u64 {
        if self.service == ServiceType::Ud {
            GRH_BYTES as u64
        } else {
            0
        }
    }

    /// Bytes of one buffer, and of one receive completion.
    fn stride(&self) -> u64 {
        self.grh_bytes() + self.size
    }

    /// How many buffers a QP's run of `total` SENDs keeps posted: the receive depth, fewer
    /// for a short run, large messages or many QPs.
    pub fn slots_for(&self, total: u64) -> u64 {
        let bytes_per_qp = RECV_BYTES_MAX / self.qps.max(1);
        total
            .min(u64::from(self.depth))
            .min((bytes_per_qp / self.stride()).max(1))
    }

    /// The bytes the buffers of a QP's run of `total` SENDs take.
    pub fn bytes(&self, total: u64) -> u64 {
        self.slots_for(total) * self.stride()
    }
}

/// Receive buffers at `base`, `slots` of the layout's stride; WQE `slot` (its `wr_id`, less
/// the ring's `wr_base`) lands at `base + slot * stride`.
pub struct RecvRing {
    base: u64,
    slots: u64,
    /// The `wr_id` of the ring's first WQE: ring `i` of [`RecvRings`] starts at
    /// `i * slots`, so a completion's `wr_id` names the ring its buffer belongs to.
    wr_base: u64,
    layout: RecvLayout,
    lkey: u32,
    /// The QP the receives are posted on (`None`: the endpoint's first).
    qpn: Option<u32>,
    /// The pattern the messages hold: their QP's.
    seed: u64,
    /// UD: the QP every datagram must come from (the completion's source QP).
    peer_qpn: Option<u32>,
    /// SENDs the run takes in all: no receive is posted beyond them (`u64::MAX`: a run of
    /// `-D`, which reposts every receive until it ends).
    total: u64,
    /// Check every message against rnic's pattern (the peer is rnic).
    check: bool,
    posted: u64,
    pub received: u64,
    pub verification: Verification,
}

impl RecvRing {
    /// A ring of `layout`'s buffers at `base` for `total` SENDs; `check`: compare every
    /// message with rnic's pattern (the peer is rnic).
    pub fn new(base: u64, layout: RecvLayout, lkey: u32, total: u64, check: bool) -> RecvRing {
        RecvRing {
            base,
            slots: layout.slots_for(total),
            wr_base: 0,
            layout,
            lkey,
            qpn: None,
            seed: PATTERN_SEED,
            peer_qpn: None,
            total,
            check,
            posted: 0,
            received: 0,
            verification: Verification::at_start(check),
        }
    }

    /// Over UD: refuses datagrams whose source QP is not `qpn` (the peer's).
    pub fn only_from_qp(self, qpn: u32) -> RecvRing {
        RecvRing {
            peer_qpn: (self.layout.service == ServiceType::Ud).then_some(qpn),
            ..self
        }
    }

    /// The ring of the test's QP `qp` (`-q`), whose number is `qpn`: posted there, its
    /// messages checked against that QP's pattern.
    pub fn on_qp(self, qp: usize, qpn: u32) -> RecvRing {
        RecvRing {
            qpn: Some(qpn),
            seed: qp_pattern_seed(qp),
            wr_base: qp as u64 * self.slots,
            ..self
        }
    }

    fn addr(&self, slot: u64) -> u64 {
        self.base + slot * self.layout.stride()
    }

    fn post(&mut self, ep: &mut Endpoint, slot: u64) -> anyhow::Result<()> {
        let sge = Sge {
            addr: self.addr(slot),
            len: self.layout.stride() as u32,
            lkey: self.lkey,
        };
        let wr = RecvWr::new(self.wr_base + slot, vec![sge]);
        match ep.srq {
            Some(srq) => ep.dev.post_srq_recv(srq, wr)?,
            None => ep.dev.post_recv(self.qpn.unwrap_or(ep.qpn), wr)?,
        }
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
        let slot = self.slot_of(c)?;
        self.check(ep, c, self.addr(slot))?;
        self.recycle(ep, slot)
    }

    /// The buffer of this ring a completion's `wr_id` names.
    fn slot_of(&self, c: &Completion) -> anyhow::Result<u64> {
        match c.wr_id.checked_sub(self.wr_base) {
            Some(slot) if slot < self.slots => Ok(slot),
            _ => bail!("a receive completed with wr_id {}, never posted", c.wr_id),
        }
    }

    /// Checks a message of this ring's QP that landed at `addr`: its status, opcode,
    /// length, source and bytes; counts it.
    fn check(&mut self, ep: &Endpoint, c: &Completion, addr: u64) -> anyhow::Result<()> {
        let n = self.received;
        if c.status != WcStatus::Success {
            bail!("receive {n} completed with {:?}", c.status);
        }
        if c.opcode != WcOpcode::Recv {
            bail!("receive {n} completed as {:?}, want Recv", c.opcode);
        }
        let (size, grh) = (self.layout.size, self.layout.grh_bytes());
        if u64::from(c.byte_len) != grh + size {
            bail!(
                "SEND {n} carried {} bytes, want -s/--size {size}{}",
                u64::from(c.byte_len).saturating_sub(grh),
                if grh > 0 {
                    " (after the 40-byte GRH area)"
                } else {
                    ""
                }
            );
        }
        if let Some(want) = self.peer_qpn {
            if c.src_qp != Some(want) {
                bail!(
                    "datagram {n} came from QP {:?}, want the peer's {want:#x}",
                    c.src_qp
                );
            }
        }
        if self.check && self.verification == Verification::Verified {
            if let Some(at) = ep.mem.first_pattern_mismatch(addr + grh, size, self.seed) {
                self.verification = Verification::Mismatch {
                    offset: n * size + at,
                };
            }
        }
        self.received += 1;
        Ok(())
    }

    /// Clears buffer `slot` of this ring and posts it again if more SENDs are due.
    fn recycle(&mut self, ep: &mut Endpoint, slot: u64) -> anyhow::Result<()> {
        clear(&mut ep.mem, self.addr(slot), self.layout.stride());
        if self.posted < self.total {
            self.post(ep, slot)?;
        }
        Ok(())
    }
}

/// One [`RecvRing`] per QP of a session, each `total` SENDs long, QP `i`'s buffers at
/// `base + i * layout.bytes(total)` (see [`RecvRings::bytes`]).
pub struct RecvRings {
    rings: Vec<RecvRing>,
    /// SENDs each QP takes.
    per_qp: u64,
    size: u64,
}

impl RecvRings {
    /// The bytes every QP's buffers take together.
    pub fn bytes(layout: RecvLayout, total: u64) -> u64 {
        layout.qps * layout.bytes(total)
    }

    /// A ring for each of `s`'s QPs at `base`, `total` SENDs each; `check`: compare every
    /// message with its QP's pattern (the peer is rnic).
    pub fn new(s: &Session, base: u64, layout: RecvLayout, total: u64, check: bool) -> RecvRings {
        let stride = layout.bytes(total);
        let rkey = s.me().rkey;
        let rings = (s.mine.iter().zip(&s.peers).enumerate())
            .map(|(qp, (me, peer))| {
                let at = base + qp as u64 * stride;
                RecvRing::new(at, layout, rkey, total, check)
                    .on_qp(qp, me.qpn)
                    .only_from_qp(peer.qpn)
            })
            .collect();
        RecvRings {
            rings,
            per_qp: total,
            size: layout.size,
        }
    }

    /// Posts every QP's buffers (before the handshake that lets the peer send).
    pub fn post_all(&mut self, ep: &mut Endpoint) -> anyhow::Result<()> {
        self.rings.iter_mut().try_for_each(|r| r.post_all(ep))
    }

    /// SENDs the run takes in all.
    pub fn total(&self) -> u64 {
        self.per_qp.saturating_mul(self.rings.len() as u64)
    }

    /// SENDs received so far, over all the QPs.
    pub fn received(&self) -> u64 {
        self.rings.iter().map(|r| r.received).sum()
    }

    /// Takes a receive completion into the ring of the QP it completed on.
    pub fn take(&mut self, s: &mut Session, c: &Completion) -> anyhow::Result<()> {
        let qp = s.qp_of(c)?;
        self.take_on(&mut s.ep, qp, c)
    }

    /// Takes a receive completion of the session's QP `qp`: checked and counted in that
    /// QP's ring, its buffer cleared and posted again by the ring the `wr_id` names (on a
    /// shared receive queue any ring's; otherwise it must be `qp`'s own).
    pub fn take_on(&mut self, ep: &mut Endpoint, qp: usize, c: &Completion) -> anyhow::Result<()> {
        let slots = self.rings[qp].slots.max(1);
        let buffer_ring = usize::try_from(c.wr_id / slots).unwrap_or(usize::MAX);
        if ep.srq.is_none() && buffer_ring != qp {
            bail!(
                "a receive of QP {qp} completed with wr_id {}, posted on QP {buffer_ring}",
                c.wr_id
            );
        }
        let Some(ring) = self.rings.get(buffer_ring) else {
            bail!("a receive completed with wr_id {}, never posted", c.wr_id);
        };
        let slot = ring.slot_of(c)?;
        let addr = ring.addr(slot);
        self.rings[qp].check(ep, c, addr)?;
        self.rings[buffer_ring].recycle(ep, slot)
    }

    /// The verdict over every QP's messages: a mismatch's offset counts the QPs' bytes in
    /// order (QP 1's first byte is `iters * size`).
    pub fn verification(&self) -> Verification {
        match self.rings[0].verification {
            Verification::PeerIsPerftest => Verification::PeerIsPerftest,
            _ => over_every_qp(
                self.rings.len(),
                self.per_qp.saturating_mul(self.size),
                |qp| self.rings[qp].verification,
            ),
        }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ud_buffers_hold_the_grh_area_before_the_payload() {
        let ud = RecvLayout {
            service: ServiceType::Ud,
            size: 1024,
            qps: 1,
            depth: recv_depth(ServiceType::Ud),
        };
        assert_eq!(ud.stride(), 40 + 1024);
        assert_eq!(ud.bytes(10), 10 * 1064);
        assert_eq!(RecvLayout::rc(1024).stride(), 1024);
    }

    #[test]
    fn unreliable_services_post_a_receive_per_message_up_to_perftests_16000() {
        let ud = RecvLayout {
            service: ServiceType::Ud,
            size: 1024,
            qps: 1,
            depth: recv_depth(ServiceType::Ud),
        };
        assert_eq!(ud.slots_for(5000), 5000);
        assert_eq!(ud.slots_for(50_000), 16_000);
        assert_eq!(RecvLayout::rc(1024).slots_for(5000), 512);
        let uc = RecvLayout {
            service: ServiceType::Uc,
            size: 65536,
            qps: 1,
            depth: recv_depth(ServiceType::Uc),
        };
        assert_eq!(uc.slots_for(5000), 1024, "64 MiB of buffers at most");
        let four_qps = RecvLayout { qps: 4, ..uc };
        assert_eq!(four_qps.slots_for(5000), 256, "the QPs share the 64 MiB");
        let rx_depth_8 = RecvLayout { depth: 8, ..uc };
        assert_eq!(rx_depth_8.slots_for(5000), 8, "-r");
        assert_eq!(
            rx_depth_8.slots_for(5),
            5,
            "no more than the run's messages"
        );
    }
}
