//! `rnic live atomic-bw`: ib_atomic_bw's test with perftest's default operation,
//! FETCH&ADD of 1 on 8 bytes, or with `-A CMP_AND_SWAP` its compare-and-swap (compare 0,
//! swap 0: nothing changes, so each value fetched from a cell is the last, and the cells
//! gain nothing; see [`AtomicOp`]). As perftest's client, the `i`-th atomic goes to the cell
//! `i mod 64` of the server's buffer, one cell every 64 bytes (a cache line) through a
//! 4096-byte cycle buffer. The exchange is ib_write_bw's.
//!
//! With `-q` each QP runs `iters` atomics on cells of its own buffer at the server, as
//! perftest's client moves each QP's remote address through that QP's cycle buffer.
//!
//! Verification, against any peer: each atomic's fetched value lands in a slot of its own,
//! and the values fetched from one cell must rise by exactly 1 from one atomic to the next;
//! against rnic the first value fetched from each cell must be the server's pattern there
//! (the QP's own). The server (whose buffers start as rnic's pattern, each QP's its own)
//! checks after the run that each QP's cells gained exactly the atomics that QP ran, and
//! that no byte outside the cells changed. An rnic client tells it each QP's count after
//! the reports (with `-D` the reported iterations are the window's only); from a perftest
//! client it takes the QPs' share of the reported iterations, and in duration mode checks
//! the bytes outside the cells only.

use anyhow::bail;
use rnic_transport::{AtomicArgs, Completion, Memory, RemoteAddr, SendWr, Sge, WcOpcode, WrOpcode};

use super::bw::{keep_in_flight, over_every_qp, remote_of, BwMeasured};
use super::endpoint::Endpoint;
use super::report::Verification;
use super::session::Session;
use super::LiveOptions;

/// Bytes of an atomic operand.
pub const ATOMIC_BYTES: u64 = 8;
/// perftest's step between the cells its atomics target (its cache line).
const CELL_STRIDE: u64 = 64;
/// Cells the client cycles through (perftest's cycle buffer over the stride).
const CELLS: u64 = 4096 / CELL_STRIDE;
/// perftest's `ATOMIC_ADD_VALUE`.
pub const ADD: u64 = 1;

/// The atomic a test runs, perftest's `-A/--atomic_type`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum AtomicOp {
    /// FETCH_AND_ADD of [`ADD`], perftest's default.
    #[default]
    FetchAdd,
    /// CMP_AND_SWAP as perftest posts it: compare 0, swap 0 (its `ATOMIC_SWAP_VALUE`), so a
    /// cell that held 0 is written 0 and any other is left: memory never changes, and each
    /// value fetched from a cell is the one before.
    CmpSwap,
}

impl AtomicOp {
    /// perftest's name for it (`-A FETCH_AND_ADD` or `-A CMP_AND_SWAP`, in either case).
    pub fn parse(name: &str) -> Option<AtomicOp> {
        use rnic_model::workload::AtomicOp as Model;
        Model::from_name(name).map(|op| match op {
            Model::FetchAndAdd => AtomicOp::FetchAdd,
            Model::CmpAndSwap => AtomicOp::CmpSwap,
        })
    }

    /// perftest's name for it, as its test title and JSON report say it (the simulator's
    /// spelling).
    pub fn perftest_name(self) -> &'static str {
        use rnic_model::workload::AtomicOp as Model;
        match self {
            AtomicOp::FetchAdd => Model::FetchAndAdd,
            AtomicOp::CmpSwap => Model::CmpAndSwap,
        }
        .perftest_name()
    }

    /// What a cell gains from one of these atomics.
    pub fn step(self) -> u64 {
        match self {
            AtomicOp::FetchAdd => ADD,
            AtomicOp::CmpSwap => 0,
        }
    }

    pub fn completes_as(self) -> WcOpcode {
        match self {
            AtomicOp::FetchAdd => WcOpcode::FetchAdd,
            AtomicOp::CmpSwap => WcOpcode::CompSwap,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            AtomicOp::FetchAdd => "FETCH&ADD",
            AtomicOp::CmpSwap => "CMP&SWAP",
        }
    }
}

/// What the client has seen of one QP's cells: the last value fetched from each.
struct Cells {
    op: AtomicOp,
    last: [Option<u64>; CELLS as usize],
    /// The first value fetched from each cell is the pattern of `seed` (the server is rnic).
    initial_known: bool,
    seed: u64,
    verification: Verification,
    /// Atomics completed on the QP.
    fetched: u64,
}

/// What the client's atomics did: the measurement, the verdict on the fetched values, and
/// the atomics each QP completed (for an rnic server's check).
pub struct FetchAdds {
    pub measured: BwMeasured,
    pub verification: Verification,
    pub per_qp: Vec<u64>,
}

/// Runs `o.iters` FETCH&ADDs on each QP with `o.tx_depth` in flight; QP `qp`'s fetched
/// values land at `results_of(qp) + 8 * (i mod tx_depth)`.
pub fn fetch_adds(
    s: &mut Session,
    o: &LiveOptions,
    results_of: impl Fn(usize) -> u64,
) -> anyhow::Result<FetchAdds> {
    let remotes: Vec<RemoteAddr> = s.peers.iter().map(remote_of).collect();
    let lkey = s.me().rkey;
    let depth = u64::from(o.tx_depth);
    let slot = |qp: usize, i: u64| results_of(qp) + ATOMIC_BYTES * (i % depth);
    let initial_known = s.pre.peer_is_rnic;
    let mut cells: Vec<Cells> = (0..s.mine.len())
        .map(|qp| Cells {
            op: o.atomic,
            last: [None; CELLS as usize],
            initial_known,
            seed: super::qp_pattern_seed(qp),
            verification: Verification::Verified,
            fetched: 0,
        })
        .collect();
    let measured = keep_in_flight(
        s,
        o,
        |qp, i| atomic_wr(o.atomic, i, i % CELLS, (slot(qp, i), lkey), remotes[qp]),
        |ep, qp, c| cells[qp].take(ep, c, slot(qp, c.wr_id)),
    )?;
    let per_qp_bytes = o.iters * ATOMIC_BYTES;
    let verification = match over_every_qp(cells.len(), per_qp_bytes, |qp| cells[qp].verification) {
        Verification::Verified if !initial_known => Verification::PeerIsPerftest,
        v => v,
    };
    Ok(FetchAdds {
        measured,
        verification,
        per_qp: cells.iter().map(|c| c.fetched).collect(),
    })
}

/// Between rnic endpoints the client tells the server the atomics each QP completed, after
/// the reports: the client's side of [`served_counts`].
pub fn tell_counts(s: &mut Session, per_qp: &[u64]) -> anyhow::Result<()> {
    per_qp
        .iter()
        .try_for_each(|&n| s.exchange_count(n).map(|_| ()))
}

/// The atomics each of the server's QPs served: an rnic client's counts ([`tell_counts`]);
/// a perftest client's reported iterations shared out over the QPs, unknown (`None`) in
/// duration mode, where they are the window's only.
pub fn served_counts(
    s: &mut Session,
    o: &LiveOptions,
    reported_iters: u64,
) -> anyhow::Result<Vec<Option<u64>>> {
    let qps = s.mine.len();
    if s.pre.peer_is_rnic {
        return (0..qps).map(|_| s.exchange_count(0).map(Some)).collect();
    }
    let share = o.duration.is_none().then_some(reported_iters / qps as u64);
    Ok(vec![share; qps])
}

/// Atomic `i` (`op` with perftest's operands) on `cell` of the region at `remote` (cells
/// one cache line apart), its fetched value landing at `result_addr` (with `lkey`).
pub fn atomic_wr(
    op: AtomicOp,
    i: u64,
    cell: u64,
    (result_addr, lkey): (u64, u32),
    remote: RemoteAddr,
) -> SendWr {
    let sge = Sge {
        addr: result_addr,
        len: ATOMIC_BYTES as u32,
        lkey,
    };
    let (opcode, compare_add) = match op {
        AtomicOp::FetchAdd => (WrOpcode::FetchAdd, ADD),
        AtomicOp::CmpSwap => (WrOpcode::CompareSwap, 0),
    };
    SendWr {
        wr_id: i,
        opcode,
        sgl: sge.into(),
        signaled: true,
        remote: Some(RemoteAddr {
            // Wrapping: the peer names its address, and its responder checks the range.
            va: remote.va.wrapping_add(cell * CELL_STRIDE),
            rkey: remote.rkey,
        }),
        atomic: Some(AtomicArgs {
            compare_add,
            swap: 0,
        }),
        ..SendWr::default()
    }
}

impl Cells {
    /// Checks the value atomic `c.wr_id` fetched (at `result_addr`) against the cell's last.
    fn take(&mut self, ep: &mut Endpoint, c: &Completion, result_addr: u64) -> anyhow::Result<()> {
        if c.opcode != self.op.completes_as() {
            bail!(
                "atomic {} completed as {:?}, want {:?}",
                c.wr_id,
                c.opcode,
                self.op.completes_as()
            );
        }
        let mut bytes = [0u8; 8];
        ep.mem.read(result_addr, &mut bytes);
        let fetched = u64::from_le_bytes(bytes);
        let cell = c.wr_id % CELLS;
        let want = match self.last[cell as usize] {
            Some(last) => Some(last.wrapping_add(self.op.step())),
            None if self.initial_known => Some(host_pattern_u64(self.seed, cell * CELL_STRIDE)),
            None => None,
        };
        if want.is_some_and(|w| w != fetched) && self.verification == Verification::Verified {
            self.verification = Verification::Mismatch {
                offset: c.wr_id * ATOMIC_BYTES,
            };
        }
        self.last[cell as usize] = Some(fetched);
        self.fetched += 1;
        Ok(())
    }
}

/// The server's check of a QP's buffer (`len` bytes at `base`, filled with rnic's pattern of
/// `seed` before the run) after `iters` atomics that each add `step` (1 for FETCH&ADD, 0
/// for perftest's CMP&SWAP): the cells gained `iters` × `step` in all (unchecked when
/// `None`: not known), and every other byte is still the pattern.
pub fn check_served(
    mem: &impl Memory,
    (base, len): (u64, u64),
    (iters, step): (Option<u64>, u64),
    seed: u64,
) -> Verification {
    let mut gained = 0u64;
    let mut offset = 0;
    while offset < len {
        let cell_end = if offset % CELL_STRIDE == 0 && offset + ATOMIC_BYTES <= len {
            let mut bytes = [0u8; 8];
            mem.read(base + offset, &mut bytes);
            let now = u64::from_le_bytes(bytes);
            gained = gained.wrapping_add(now.wrapping_sub(host_pattern_u64(seed, offset)));
            offset + ATOMIC_BYTES
        } else {
            offset
        };
        let next_cell = (offset / CELL_STRIDE + 1) * CELL_STRIDE;
        let gap_end = next_cell.min(len);
        let mut gap = vec![0u8; (gap_end - cell_end) as usize];
        mem.read(base + cell_end, &mut gap);
        if let Some(i) = (0..gap.len()).find(|&i| gap[i] != pattern_at(seed, cell_end + i as u64)) {
            return Verification::Mismatch {
                offset: cell_end + i as u64,
            };
        }
        offset = gap_end;
    }
    if iters.is_some_and(|n| gained != n.wrapping_mul(step)) {
        // The cells' first byte: where the count went wrong.
        return Verification::Mismatch { offset: 0 };
    }
    Verification::Verified
}

fn pattern_at(seed: u64, offset: u64) -> u8 {
    rnic_host::pattern_byte(seed, offset)
}

/// The u64 (little-endian, as host memory holds it) that rnic's pattern of `seed` puts at
/// `offset`.
pub fn host_pattern_u64(seed: u64, offset: u64) -> u64 {
    let bytes: [u8; 8] = std::array::from_fn(|k| pattern_at(seed, offset + k as u64));
    u64::from_le_bytes(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rnic_host::SparseMemory;

    /// The peer names its region's address: one at the top of the address space wraps
    /// (its responder refuses the range) instead of overflowing here.
    #[test]
    fn a_peer_address_at_the_top_wraps_instead_of_overflowing() {
        let remote = RemoteAddr {
            va: u64::MAX - 8,
            rkey: 1,
        };
        let wr = atomic_wr(AtomicOp::FetchAdd, 0, 3, (0, 0), remote);
        assert_eq!(wr.remote.unwrap().va, 3 * CELL_STRIDE - 9);
    }

    const BASE: u64 = 0x2000_0000;
    const SEED: u64 = super::super::PATTERN_SEED;

    /// A served buffer after `adds[k]` FETCH&ADDs on cell `k`.
    fn served(adds: &[u64]) -> SparseMemory {
        let mut mem = SparseMemory::new();
        mem.fill_pattern(BASE, 4096, SEED);
        for (k, n) in adds.iter().enumerate() {
            let at = k as u64 * CELL_STRIDE;
            let v = host_pattern_u64(SEED, at).wrapping_add(*n);
            mem.write(BASE + at, &v.to_le_bytes());
        }
        mem
    }

    /// perftest's CMP&SWAP (compare 0, swap 0) changes nothing: the cells gained 0.
    #[test]
    fn after_compare_and_swaps_the_cells_gained_nothing() {
        let untouched = served(&[]);
        let check = |mem: &SparseMemory| check_served(mem, (BASE, 4096), (Some(10), 0), SEED);
        assert_eq!(check(&untouched), Verification::Verified);
        assert_eq!(check(&served(&[1])), Verification::Mismatch { offset: 0 });
        assert_eq!(AtomicOp::parse("cmp_and_swap"), Some(AtomicOp::CmpSwap));
        assert_eq!(AtomicOp::parse("FETCH_AND_ADD"), Some(AtomicOp::FetchAdd));
        assert_eq!(AtomicOp::parse("SWAP"), None);
    }

    #[test]
    fn the_served_check_passes_the_right_count_and_fails_a_wrong_one() {
        let mem = served(&[3, 2, 0, 5]);
        assert_eq!(
            check_served(&mem, (BASE, 4096), (Some(10), ADD), SEED),
            Verification::Verified
        );
        assert!(matches!(
            check_served(&mem, (BASE, 4096), (Some(11), ADD), SEED),
            Verification::Mismatch { .. }
        ));
    }

    /// With `-q` each QP's buffer holds a pattern of its own: another QP's does not pass.
    #[test]
    fn the_served_check_is_against_the_qps_own_pattern() {
        let mem = served(&[1]);
        let other = super::super::qp_pattern_seed(1);
        assert!(matches!(
            check_served(&mem, (BASE, 4096), (Some(1), ADD), other),
            Verification::Mismatch { .. }
        ));
    }

    /// Duration mode against perftest: the count is unknown, the rest is still checked.
    #[test]
    fn an_unknown_count_checks_the_bytes_outside_the_cells_only() {
        let mut mem = served(&[7, 3]);
        assert_eq!(
            check_served(&mem, (BASE, 4096), (None, ADD), SEED),
            Verification::Verified
        );
        mem.write(BASE + 9, &[0x5a ^ pattern_at(SEED, 9)]);
        assert_eq!(
            check_served(&mem, (BASE, 4096), (None, ADD), SEED),
            Verification::Mismatch { offset: 9 }
        );
    }

    #[test]
    fn the_served_check_finds_a_byte_changed_outside_the_cells() {
        let mut mem = served(&[1]);
        let at = 2 * CELL_STRIDE + 9;
        let mut b = [0u8];
        mem.read(BASE + at, &mut b);
        mem.write(BASE + at, &[b[0] ^ 1]);
        assert_eq!(
            check_served(&mem, (BASE, 4096), (Some(1), ADD), SEED),
            Verification::Mismatch { offset: at }
        );
    }
}
