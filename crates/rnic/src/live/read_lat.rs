//! `rnic live read-lat`: ib_read_lat's test. Only the client works: it READs `size` bytes
//! from the server's buffer, waits for the completion, and READs again, `iters` times;
//! latency is the time between two posts (perftest's `rtt_factor` 1 for READ). The server
//! goes straight to the closing handshake and answers the READs while it waits there.
//!
//! `rnic live atomic-lat` is ib_atomic_lat's test, the same exchange and loop with a
//! FETCH&ADD of 1 on the server's first 8 bytes in place of the READ (perftest's latency
//! loop posts the same work request every time). Against an rnic server the first value
//! fetched is its pattern there and each next one is the last plus 1; against perftest's,
//! from the second on.
//!
//! With `-D` the client READs until its clock ends and reports the READs completed in the
//! window (perftest's `run_iter_lat` in duration mode); with `-a` it runs every size in
//! turn up to the largest whose responses fit its window (see
//! [`LiveOptions::sizes_at`]). The server is passive in both, as perftest's: it only holds
//! a buffer as large as any size.
//!
//! Verification, when the peer is rnic: the server's buffer holds rnic's pattern, and the
//! client clears its landing buffer before every READ and checks every READ's bytes; the
//! server reports the client's verdict.

use std::time::Instant;

use anyhow::bail;
use rnic_host::SparseMemory;
use rnic_transport::{Memory, RemoteAddr, SendWr, Sge, WcOpcode, WcStatus};

use super::atomic_bw::{atomic_wr, host_pattern_u64, AtomicOp, ATOMIC_BYTES};
use super::oob::CYCLE_BUFFER_BYTES;
use super::recv_ring::clear;
use super::report::{LiveResult, Verification};
use super::session::{ended, sampling, Layout, RunClock, Session};
use super::{LiveOptions, LiveTest, PATTERN_SEED};

/// The client's landing buffer.
const LANDING_ADDR: u64 = 0x1000_0000;
/// The server's buffer the client READs.
const SERVED_ADDR: u64 = 0x2000_0000;

pub fn run(o: &LiveOptions) -> anyhow::Result<LiveResult> {
    if o.host.is_some() {
        client(o)
    } else {
        server(o)
    }
}

fn server(o: &LiveOptions) -> anyhow::Result<LiveResult> {
    let layout = Layout {
        mr_addr: SERVED_ADDR,
        mr_len: o.size.max(u64::from(CYCLE_BUFFER_BYTES)),
        advertised: SERVED_ADDR,
        qp_stride: 0,
        served_pattern_bytes: o.size.max(u64::from(CYCLE_BUFFER_BYTES)),
    };
    let mut s = Session::open(o, &layout, true)?;
    let verification = s.close_waiting(Verification::PeerIsPerftest)?;
    // perftest's READ server measures nothing and prints no table, only its result line.
    let mut r = match o.duration {
        Some(d) => LiveResult::latency_for_duration(o.test.name(), o.size, 0, d.window_s(), 1.0),
        None => LiveResult::latency(o.test.name(), o.size, o.iters, &[], 1.0),
    };
    r.measured = false;
    r.finish(&mut s, verification);
    s.ep.finish()?;
    Ok(r)
}

fn client(o: &LiveOptions) -> anyhow::Result<LiveResult> {
    let layout = Layout {
        mr_addr: LANDING_ADDR,
        mr_len: o.size.max(u64::from(CYCLE_BUFFER_BYTES)),
        advertised: LANDING_ADDR,
        qp_stride: 0,
        served_pattern_bytes: 0,
    };
    let mut s = Session::open(o, &layout, true)?;
    let mut verification = Verification::at_start(s.pre.peer_is_rnic);
    let (sizes, note) = o.sizes_at(s.pre.mtu_bytes);
    let mut per_size = Vec::new();
    for &size in &sizes {
        let (row, v) = reads(&mut s, &o.at_size(size))?;
        verification = verification.or_first_mismatch(v);
        per_size.push(row);
    }
    let mut r = LiveResult::of_sizes(per_size, o.all_sizes);
    r.notes.extend(note);
    s.close(verification)?;
    r.finish(&mut s, verification);
    s.ep.finish()?;
    Ok(r)
}

/// One size's READs (or FETCH&ADDs), one at a time: `o.iters`, or with `-D` until the clock
/// ends. Returns the size's figures and the verdict on its bytes.
fn reads(s: &mut Session, o: &LiveOptions) -> anyhow::Result<(LiveResult, Verification)> {
    let op = OneSided::of(o);
    let mut check = OneSidedCheck::new(op, s.pre.peer_is_rnic);
    let lkey = s.me().rkey;
    let remote = RemoteAddr {
        va: s.peer().vaddr,
        rkey: s.peer().rkey,
    };
    let clock = RunClock::of(o);
    let iters = if clock.is_some() { u64::MAX } else { o.iters };
    // Posts are timed only outside duration mode.
    let mut posts = Vec::with_capacity(if clock.is_some() { 0 } else { o.iters as usize });
    let mut window = 0;
    let waiting = format!("waiting for a {} to complete", op.name());
    for i in 0..iters {
        if ended(clock.as_ref()) {
            break;
        }
        clear(&mut s.ep.mem, LANDING_ADDR, o.size);
        s.latency_gap(o.latency_gap)?;
        if clock.is_none() {
            posts.push(Instant::now());
        }
        s.ep.dev
            .post_send(s.ep.qpn, op.wr(i, o.size, lkey, remote))?;
        let mut done = None;
        s.spin_until(
            |ep| {
                done = ep.poll_cq();
                Ok(done.is_some())
            },
            &waiting,
        )?;
        let c = done.expect("turn_until returned on a completion");
        if c.status != WcStatus::Success || c.opcode != op.completes_as() || c.wr_id != i {
            bail!(
                "{} {i} completed as {:?} {:?} (wr_id {})",
                op.name(),
                c.opcode,
                c.status,
                c.wr_id
            );
        }
        window += u64::from(sampling(clock.as_ref()));
        check.landed(&s.ep.mem, i, o.size);
    }
    let verification = check.verification;
    // As perftest's, the samples are the gaps between consecutive posts (each a READ's round
    // trip and the gap before the next post): `-n` iterations give one fewer, the last
    // READ's time untaken.
    let name = o.test.name();
    let r = match clock {
        Some(c) => LiveResult::latency_for_duration(name, o.size, window, c.window_s(), 1.0),
        None => LiveResult::latency(name, o.size, o.iters, &posts, 1.0),
    };
    Ok((r, verification))
}

/// What each iteration posts: ib_read_lat's READ of the size into the landing buffer, or
/// ib_atomic_lat's atomic (`-A`) on the server's first 8 bytes, fetching into it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum OneSided {
    Read,
    Atomic(AtomicOp),
}

impl OneSided {
    fn of(o: &LiveOptions) -> OneSided {
        if o.test == LiveTest::AtomicLat {
            OneSided::Atomic(o.atomic)
        } else {
            OneSided::Read
        }
    }

    fn wr(self, i: u64, size: u64, lkey: u32, remote: RemoteAddr) -> SendWr {
        match self {
            OneSided::Read => {
                let sge = Sge {
                    addr: LANDING_ADDR,
                    len: size as u32,
                    lkey,
                };
                SendWr::read(i, sge, remote)
            }
            // perftest's latency loop posts the same request every time: the first cell.
            OneSided::Atomic(op) => atomic_wr(op, i, 0, (LANDING_ADDR, lkey), remote),
        }
    }

    fn completes_as(self) -> WcOpcode {
        match self {
            OneSided::Read => WcOpcode::RdmaRead,
            OneSided::Atomic(op) => op.completes_as(),
        }
    }

    fn name(self) -> &'static str {
        match self {
            OneSided::Read => "READ",
            OneSided::Atomic(op) => op.name(),
        }
    }
}

/// The client's check of what each iteration landed, when the server is rnic (its buffer
/// holds rnic's pattern): a READ's bytes are the pattern; an atomic's value is the
/// pattern's first 8 bytes the first time and the last value plus its step after that (1
/// for FETCH&ADD, 0 for perftest's CMP&SWAP; from the second on against perftest's server,
/// whose first value is unknown).
struct OneSidedCheck {
    op: OneSided,
    peer_is_rnic: bool,
    last_fetched: Option<u64>,
    verification: Verification,
}

impl OneSidedCheck {
    fn new(op: OneSided, peer_is_rnic: bool) -> OneSidedCheck {
        OneSidedCheck {
            op,
            peer_is_rnic,
            last_fetched: None,
            verification: Verification::at_start(peer_is_rnic),
        }
    }

    /// Iteration `i` completed: checks what it landed (`size` bytes of a READ).
    fn landed(&mut self, mem: &SparseMemory, i: u64, size: u64) {
        let mismatch = match self.op {
            OneSided::Read if self.peer_is_rnic => mem
                .first_pattern_mismatch(LANDING_ADDR, size, PATTERN_SEED)
                .map(|at| i * size + at),
            OneSided::Read => None,
            OneSided::Atomic(op) => self.fetched(mem, op).then_some(i * ATOMIC_BYTES),
        };
        if let Some(offset) = mismatch {
            self.verification = self
                .verification
                .or_first_mismatch(Verification::Mismatch { offset });
        }
    }

    /// Takes the value an atomic `op` fetched; whether it is not the one expected.
    fn fetched(&mut self, mem: &SparseMemory, op: AtomicOp) -> bool {
        let mut bytes = [0u8; 8];
        mem.read(LANDING_ADDR, &mut bytes);
        let value = u64::from_le_bytes(bytes);
        let want = match self.last_fetched {
            Some(last) => Some(last.wrapping_add(op.step())),
            None if self.peer_is_rnic => Some(host_pattern_u64(PATTERN_SEED, 0)),
            None => None,
        };
        self.last_fetched = Some(value);
        want.is_some_and(|w| w != value)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn landing(value: u64) -> SparseMemory {
        let mut mem = SparseMemory::new();
        mem.write(LANDING_ADDR, &value.to_le_bytes());
        mem
    }

    /// A FETCH&ADD applied twice (or lost) breaks the chain of fetched values.
    #[test]
    fn fetched_values_must_rise_by_one_from_the_servers_pattern() {
        let first = host_pattern_u64(PATTERN_SEED, 0);
        for (peer_is_rnic, start) in [(true, first), (false, 12345)] {
            let mut check = OneSidedCheck::new(OneSided::Atomic(AtomicOp::FetchAdd), peer_is_rnic);
            for (i, v) in [start, start + 1, start + 2].into_iter().enumerate() {
                check.landed(&landing(v), i as u64, 8);
            }
            assert!(
                matches!(
                    check.verification,
                    Verification::Verified | Verification::PeerIsPerftest
                ),
                "{peer_is_rnic}"
            );
            check.landed(&landing(start + 4), 3, 8);
            assert_eq!(check.verification, Verification::Mismatch { offset: 24 });
        }
        let mut check = OneSidedCheck::new(OneSided::Atomic(AtomicOp::FetchAdd), true);
        check.landed(&landing(first ^ 1), 0, 8);
        assert_eq!(check.verification, Verification::Mismatch { offset: 0 });
    }
}
