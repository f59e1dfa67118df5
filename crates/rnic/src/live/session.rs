//! Setting a live run up as perftest does: the TCP exchange, the endpoint, the QP keys and
//! the connection, in the order of the perftest program the test is (`ib_send_bw`'s and
//! `ib_send_lat`'s differs from the others' after RTR).

use std::net::Ipv4Addr;
use std::time::{Duration, Instant};

use rnic_transport::Completion;

use super::endpoint::{connect_qp, Endpoint, QpTuning};
use super::oob::{gid_of, Dest, Oob, Preamble};
use super::report::{LiveResult, Verification};
use super::{DurationMode, LiveOptions, LiveTest};

/// One turn's longest wait while the caller waits for something else (the TCP exchange).
pub const IDLE_TURN: Duration = Duration::from_millis(1);
/// How long a run may go without progress before it is declared stalled.
pub const STALL: Duration = Duration::from_secs(10);
/// How long a ping-pong side keeps answering after its last message, so that an ACK the
/// peer still waits for (a lost one, resent) is not left without a responder.
const LINGER: Duration = Duration::from_millis(20);

/// Keeps the engine answering for [`LINGER`] after a ping-pong's last message.
pub fn linger(ep: &mut Endpoint) -> anyhow::Result<()> {
    let start = Instant::now();
    while start.elapsed() < LINGER {
        ep.turn(IDLE_TURN)?;
    }
    Ok(())
}

/// The clock of a run in duration mode (`-D`), perftest's alarm: its states are read off
/// the time since [`RunClock::start`] (perftest's SIGALRM moves them on).
#[derive(Debug, Clone, Copy)]
pub struct RunClock {
    start: Instant,
    d: DurationMode,
}

impl RunClock {
    pub fn start(d: DurationMode) -> RunClock {
        RunClock {
            start: Instant::now(),
            d,
        }
    }

    /// A clock only in duration mode.
    pub fn of(o: &LiveOptions) -> Option<RunClock> {
        o.duration.map(RunClock::start)
    }

    /// perftest's SAMPLE_STATE: what completes now is measured.
    pub fn sampling(&self) -> bool {
        self.d.samples_at(self.start.elapsed().as_secs_f64())
    }

    /// perftest's END_STATE: the run is over.
    pub fn ended(&self) -> bool {
        self.start.elapsed().as_secs_f64() >= self.d.total_s
    }

    /// Seconds measured.
    pub fn window_s(&self) -> f64 {
        self.d.window_s()
    }
}

/// Whether an optional clock (`None`: a run of `-n` iterations) has ended.
pub fn ended(clock: Option<&RunClock>) -> bool {
    clock.is_some_and(RunClock::ended)
}

/// Whether an optional clock is in its measured window.
pub fn sampling(clock: Option<&RunClock>) -> bool {
    clock.is_some_and(RunClock::sampling)
}

/// A connected live run: the engine with its QPs in RTS, and the exchange connection.
pub struct Session {
    pub ep: Endpoint,
    pub oob: Oob,
    pub pre: Preamble,
    /// This side's keys, one per QP (perftest's `my_dest` array): the first QP's go in the
    /// handshakes after the connection.
    pub mine: Vec<Dest>,
    /// The peer's keys, QP by QP in the order of `mine`.
    pub peers: Vec<Dest>,
    pub is_client: bool,
}

/// Where a test's buffers lie: the region registered (one MR over every buffer, as
/// perftest's without `--mr_per_qp`) and the address the peer is told to write to or read
/// from, QP `i`'s `advertised + i * qp_stride`.
pub struct Layout {
    pub mr_addr: u64,
    pub mr_len: u64,
    pub advertised: u64,
    /// Bytes from one QP's buffer to the next's (0 in the one-QP tests).
    pub qp_stride: u64,
    /// Bytes of each QP's advertised buffer that hold that QP's pattern before the peer can
    /// reach them (a READ or atomic server's, whose peer may start the moment the last
    /// handshake reaches it, before this side's own end of it returns); 0: none.
    pub served_pattern_bytes: u64,
}

impl Layout {
    /// Fills each of `qps` QPs' advertised buffers with its pattern
    /// ([`Layout::served_pattern_bytes`]).
    pub fn fill_served(&self, mem: &mut rnic_host::SparseMemory, qps: usize) {
        for qp in 0..qps {
            let seed = super::qp_pattern_seed(qp);
            mem.fill_pattern(self.advertised_for(qp), self.served_pattern_bytes, seed);
        }
    }

    /// The address QP `qp` tells the peer.
    pub fn advertised_for(&self, qp: usize) -> u64 {
        self.advertised + qp as u64 * self.qp_stride
    }
}

impl Session {
    /// Connects (client) or accepts (server), then runs perftest's exchange up to the last
    /// handshake before the measurement. `extra_first_handshake`: ib_write_lat and ib_read_lat
    /// exchange the keys once more before the per-QP exchange.
    pub fn open(
        o: &LiveOptions,
        layout: &Layout,
        extra_first_handshake: bool,
    ) -> anyhow::Result<Session> {
        if o.exchange_by_cm {
            return super::cm_perftest::open_session(o, layout, extra_first_handshake);
        }
        let (mut oob, local_ip) = open_exchange(o)?;
        let pre = oob.preamble((o.mtu_bytes, o.shape()), &mut idle_wait)?;
        o.check_read_fits(pre.mtu_bytes)?;
        let t = tuning(o, pre.mtu_bytes);
        let mut ep = Endpoint::open(local_ip, &t, o.pcap.as_deref())?;
        let mut qpns = vec![ep.qpn];
        for _ in 1..o.qps {
            qpns.push(ep.create_qp(&t)?);
        }
        let keys = ep.reg_mr(layout.mr_addr, layout.mr_len)?;
        layout.fill_served(&mut ep.mem, qpns.len());
        let mine: Vec<Dest> = (qpns.iter().enumerate())
            .map(|(i, &qpn)| my_dest(qpn, keys.rkey, layout.advertised_for(i), (local_ip, o)))
            .collect();
        let handshakes = (&mine[..], extra_first_handshake);
        let peers = connect_by_keys(&mut ep, &mut oob, (o, pre.mtu_bytes), handshakes)?;
        after_connection(&mut oob, (o.test, &mine, &peers), &mut || {
            ep.turn(IDLE_TURN)
        })?;
        Ok(Session {
            ep,
            oob,
            pre,
            mine,
            peers,
            is_client: o.host.is_some(),
        })
    }

    /// The first QP's keys: those the handshakes after the connection carry, and the one-QP
    /// tests'.
    pub fn me(&self) -> Dest {
        self.mine[0]
    }

    /// The peer's first QP's keys.
    pub fn peer(&self) -> Dest {
        self.peers[0]
    }

    /// The index among this side's QPs of the one completion `c` completed on; a completion
    /// on any other QP fails the run.
    pub fn qp_of(&self, c: &Completion) -> anyhow::Result<usize> {
        let Some(qp) = self.mine.iter().position(|d| d.qpn == c.qpn) else {
            anyhow::bail!(
                "{:?} {} completed on QP {:#x}, not one of the test's",
                c.opcode,
                c.wr_id,
                c.qpn
            );
        };
        Ok(qp)
    }

    /// One more `ctx_hand_shake`, the engine answering while it waits.
    pub fn handshake(&mut self) -> anyhow::Result<Dest> {
        let me = self.me();
        self.oob.keys(&me, &mut || self.ep.turn(IDLE_TURN))
    }

    /// One exchange of a count between rnic endpoints (UC/UD send-bw: the client's messages
    /// sent for the server's received), the engine answering while it waits; returns the
    /// peer's.
    pub fn exchange_count(&mut self, mine: u64) -> anyhow::Result<u64> {
        let theirs = self
            .oob
            .exchange(&mine.to_be_bytes(), &mut || self.ep.turn(IDLE_TURN))?;
        let bytes: [u8; 8] = theirs
            .try_into()
            .map_err(|_| anyhow::anyhow!("the peer's message count is not 8 bytes"))?;
        Ok(u64::from_be_bytes(bytes))
    }

    /// perftest's close (a last handshake, `done`), the engine answering while it waits.
    /// Between two rnic endpoints each side tells the other its verdict on the bytes it
    /// received (`mine`); returns what the peer's says about this side's bytes:
    /// `PeerIsPerftest` when the peer is perftest.
    pub fn close(&mut self, mine: Verification) -> anyhow::Result<Verification> {
        self.close_after(mine, false)
    }

    /// [`Session::close`] for a server that waits in it while its client runs the test.
    pub fn close_waiting(&mut self, mine: Verification) -> anyhow::Result<Verification> {
        self.close_after(mine, true)
    }

    /// The end of a bidirectional run, whose sides each checked what landed on them
    /// (`mine`: this side's verdict): the verdicts cross at the close, and `r`'s
    /// verification covers both directions (`mine` alone against perftest, which gives
    /// none).
    pub fn finish_both_ways(
        mut self,
        mut r: LiveResult,
        mine: Verification,
    ) -> anyhow::Result<LiveResult> {
        let theirs = self.close(mine)?;
        let verification = match self.pre.peer_is_rnic {
            true => mine.or_first_mismatch(theirs),
            false => mine,
        };
        r.finish(&mut self, verification);
        self.ep.finish()?;
        Ok(r)
    }

    fn close_after(&mut self, mine: Verification, no_limit: bool) -> anyhow::Result<Verification> {
        let me = self.me();
        let verdict = self.pre.peer_is_rnic.then_some(mine.verdict());
        let mut pump = || self.ep.turn(IDLE_TURN);
        let theirs = if no_limit {
            self.oob.close_waiting(&me, &mut pump, verdict)?
        } else {
            self.oob.close(&me, &mut pump, verdict)?
        };
        Ok(Verification::from_peer(theirs))
    }

    /// Turns the engine until `done` holds, each turn waiting up to [`IDLE_TURN`] for a
    /// datagram; fails after [`STALL`] without `done`, or when `done` fails.
    pub fn turn_until(
        &mut self,
        done: impl FnMut(&mut Endpoint) -> anyhow::Result<bool>,
        what: &str,
    ) -> anyhow::Result<()> {
        self.until(done, what, |ep| ep.turn(IDLE_TURN))
    }

    /// [`Session::turn_until`] without waiting in the socket: every turn only looks for
    /// datagrams, as perftest's latency tests spin on their CQ or buffer (a blocking wait
    /// would add the process's wake-up to each half round trip). The turns are
    /// [`Endpoint::spin_turn`]s: what the last one produced (an ACK) goes out with the
    /// caller's next turn, in the same `sendmmsg` as what the caller posts first.
    pub fn spin_until(
        &mut self,
        done: impl FnMut(&mut Endpoint) -> anyhow::Result<bool>,
        what: &str,
    ) -> anyhow::Result<()> {
        self.until(done, what, |ep| ep.spin_turn())
    }

    /// perftest's `--latency_gap`: waits `gap` before the next post, turning all the while
    /// (the engine answers and acknowledges meanwhile, as a NIC does while perftest spins).
    pub fn latency_gap(&mut self, gap: Duration) -> anyhow::Result<()> {
        if gap.is_zero() {
            return Ok(());
        }
        let end = Instant::now() + gap;
        self.spin_until(|_| Ok(Instant::now() >= end), "waiting out --latency_gap")
    }

    fn until(
        &mut self,
        mut done: impl FnMut(&mut Endpoint) -> anyhow::Result<bool>,
        what: &str,
        mut turn: impl FnMut(&mut Endpoint) -> anyhow::Result<()>,
    ) -> anyhow::Result<()> {
        let start = Instant::now();
        while !done(&mut self.ep)? {
            if start.elapsed() > STALL {
                anyhow::bail!("no progress for {} s while {what}", STALL.as_secs());
            }
            turn(&mut self.ep)?;
        }
        Ok(())
    }
}

/// QP attributes of a run at path MTU `mtu_bytes`, perftest's defaults where it has them.
pub fn tuning(o: &LiveOptions, mtu_bytes: u32) -> QpTuning {
    QpTuning {
        service: o.service,
        mtu_bytes,
        timeout: o.qp_timeout,
        retry_cnt: o.retry_count,
        rnr_retry: 7,
        window_psns: o.window_psns,
        sq_depth: o.tx_depth.max(16),
        rq_depth: o.rx_depth,
        out_reads: o.out_reads,
        srq_depth: o.use_srq.then_some(o.rx_depth),
        traffic_class: o.traffic_class,
    }
}

/// The keys of this side's QP `qpn`: a fresh starting PSN, the region's rkey, the address
/// the peer is told to use, `vaddr`, and the READs it may have outstanding, `o.out_reads`.
pub fn my_dest(qpn: u32, rkey: u32, vaddr: u64, (local_ip, o): (Ipv4Addr, &LiveOptions)) -> Dest {
    Dest {
        lid: 0,
        out_reads: o.out_reads,
        qpn,
        psn: random_psn(),
        rkey,
        vaddr,
        gid: gid_of(local_ip),
        srqn: 0,
    }
}

/// Whether perftest's test has its one handshake after RTR before the second round of every
/// QP's keys (`ib_send_bw`, `ib_send_lat`) rather than after it (the others). With several
/// QPs the order matters: ib_send_bw takes the keys of the second round for its UD
/// destinations, so a peer out of step would send QP `i`'s datagrams to QP `i + 1`.
fn handshake_after_rtr_comes_first(test: LiveTest) -> bool {
    matches!(test, LiveTest::SendBw | LiveTest::SendLat)
}

/// perftest's exchanges once the QPs are connected (by modify_qp or by RDMA CM): every QP's
/// keys once more (to print the peer's), and one more handshake after RTR; its SEND tests
/// have that one first. `peers`: the keys of the round before, which the peer's second
/// round must repeat QP for QP ([`check_same_qps`]).
pub fn after_connection(
    oob: &mut Oob,
    (test, mine, peers): (LiveTest, &[Dest], &[Dest]),
    pump: &mut dyn FnMut() -> anyhow::Result<()>,
) -> anyhow::Result<()> {
    let one_first = handshake_after_rtr_comes_first(test);
    if one_first {
        oob.keys(&mine[0], pump)?;
    }
    let again = keys_of_every_qp(oob, mine, pump)?;
    check_same_qps(peers, &again)?;
    if !one_first {
        oob.keys(&mine[0], pump)?;
    }
    Ok(())
}

/// A perftest peer sends no `-q`: with another number of QPs than this side's, the two
/// sides' rounds of keys slip against each other, and the run would connect QPs to the
/// wrong peers and stall. The slip shows in the keys: a QPN twice in one round (the peer's
/// next round read as this one's), or another set of QPNs in the second round than in the
/// first (in any order: under `-R` the first are as RDMA CM paired them).
pub fn check_same_qps(first: &[Dest], second: &[Dest]) -> anyhow::Result<()> {
    let sorted = |keys: &[Dest]| {
        let mut q: Vec<u32> = keys.iter().map(|d| d.qpn).collect();
        q.sort_unstable();
        q
    };
    let (a, b) = (sorted(first), sorted(second));
    let repeats = a.windows(2).any(|w| w[0] == w[1]);
    if repeats || a != b {
        let qpns = |keys: &[Dest]| {
            keys.iter()
                .map(|d| format!("{:#x}", d.qpn))
                .collect::<Vec<_>>()
        };
        anyhow::bail!(
            "the peer's QP keys do not repeat QP for QP ({:?}, then {:?}): does it run with the \
             same -q ({})? perftest sends no QP count, so both sides must be given the same",
            qpns(first),
            qpns(second),
            first.len()
        );
    }
    Ok(())
}

/// One `ctx_hand_shake` per QP, in order, as perftest's test programs loop over their QPs;
/// returns the peer's keys in the same order.
pub fn keys_of_every_qp(
    oob: &mut Oob,
    mine: &[Dest],
    pump: &mut dyn FnMut() -> anyhow::Result<()>,
) -> anyhow::Result<Vec<Dest>> {
    mine.iter().map(|me| oob.keys(me, pump)).collect()
}

/// Connects the test's QPs by their keys once the exchange (TCP, or perftest's `-z` RDMA CM
/// control connection) carried the preamble: every QP's keys cross it (after one more
/// exchange of the first QP's for the latency tests that have it), and each test QP goes to
/// RTS by modify_qp at the path MTU both sides agreed on. Returns the peer's keys, in QP
/// order.
pub fn connect_by_keys(
    ep: &mut Endpoint,
    oob: &mut Oob,
    (o, mtu_bytes): (&LiveOptions, u32),
    (mine, extra_first_handshake): (&[Dest], bool),
) -> anyhow::Result<Vec<Dest>> {
    let t = tuning(o, mtu_bytes);
    if extra_first_handshake {
        oob.keys(&mine[0], &mut || ep.turn(IDLE_TURN))?;
    }
    let peers = keys_of_every_qp(oob, mine, &mut || ep.turn(IDLE_TURN))?;
    for (me, peer) in mine.iter().zip(&peers) {
        connect_qp(&mut ep.dev, me.qpn, me.psn, peer, &t)?;
    }
    Ok(peers)
}

/// What an exchange with no engine to turn does while it waits: sleep a little.
fn idle_wait() -> anyhow::Result<()> {
    std::thread::sleep(Duration::from_micros(200));
    Ok(())
}

/// The QP the CM MADs connected is the one the exchange named: a peer whose REQ or REP
/// carries another QPN is refused.
pub fn check_cm_matches_keys(keys: &Dest, by_cm: &Dest) -> anyhow::Result<()> {
    if keys.qpn != by_cm.qpn {
        anyhow::bail!(
            "RDMA CM: the peer's CM MAD names QP {:#x}, its exchange QP {:#x}",
            by_cm.qpn,
            keys.qpn
        );
    }
    Ok(())
}

/// The exchange's TCP connection (the client connects, the server accepts one client), and
/// the local address: `--bind`'s, else the one the connection uses.
pub fn open_exchange(o: &LiveOptions) -> anyhow::Result<(Oob, Ipv4Addr)> {
    let mut oob = match &o.host {
        Some(h) => Oob::connect(h, o.port, o.bind, Duration::from_secs(5))?,
        None => Oob::accept(o.bind, o.port)?,
    };
    let local_ip: Ipv4Addr = match o.bind {
        Some(ip) => ip,
        None => oob.local_ip()?,
    };
    Ok((oob, local_ip))
}

/// A start PSN that differs from run to run, as perftest's `lrand48() & 0xffffff`.
pub fn random_psn() -> u32 {
    (random_bits() & 0xFF_FFFF) as u32
}

/// A first RDMA CM communication id (less one) for this run's connections, below 2^30, as
/// Linux's CM draws its ids at random: a peer's CM remembers an earlier run's ids for a
/// while and drops a REQ or SIDR_REQ that repeats one (see the agent's `comm_id_base`).
pub fn random_comm_id_base() -> u32 {
    (random_bits() >> 34) as u32
}

/// 64 bits that differ from run to run: the clock's nanoseconds and the process id, mixed.
fn random_bits() -> u64 {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64);
    let mut x = nanos ^ u64::from(std::process::id()) << 32;
    x ^= x >> 33;
    x = x.wrapping_mul(0xFF51_AFD7_ED55_8CCD);
    x ^= x >> 33;
    x
}

/// What a failed send completion's status says about the peer, to follow the status in the
/// error: RETRY_EXC_ERR means the peer stopped answering, most often because it refused the
/// run (an rnic server names a flag the exchange does not carry, -s say) or ended it, and its
/// own output says which.
pub fn peer_hint(status: rnic_transport::WcStatus) -> &'static str {
    match status {
        rnic_transport::WcStatus::RetryExcErr => {
            " (the peer stopped acknowledging: it may have refused or ended the run; its own \
             output says why)"
        }
        rnic_transport::WcStatus::RnrRetryExcErr => " (the peer posted no receive in time)",
        _ => "",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A run's RDMA CM ids start where an earlier run's did not (a peer's CM drops a REQ
    /// that repeats an id it still holds; the runs' ids once all started from 1), and leave
    /// room below 2^30 for the run's connections.
    #[test]
    fn each_run_draws_its_cm_ids_from_a_base_of_its_own() {
        let bases: Vec<u32> = (0..8)
            .map(|_| {
                std::thread::sleep(std::time::Duration::from_micros(50));
                random_comm_id_base()
            })
            .collect();
        assert!(bases.iter().all(|&b| b < 1 << 30), "{bases:?}");
        let mut distinct = bases.clone();
        distinct.sort_unstable();
        distinct.dedup();
        assert_eq!(distinct.len(), bases.len(), "{bases:?}");
    }

    fn keys(qpns: &[u32]) -> Vec<Dest> {
        let dest = |qpn| Dest {
            qpn,
            ..Dest::default()
        };
        qpns.iter().map(|&q| dest(q)).collect()
    }

    /// Against a perftest peer with another `-q`: more QPs here read the peer's second
    /// round as QPs of the first (a repeated QPN); fewer here read its remaining QPs in the
    /// second round (another set). The same QPs in another order (RDMA CM's pairing) pass.
    #[test]
    fn keys_that_slip_between_rounds_fail_naming_q() {
        for (first, second) in [
            (&[0x11, 0x11][..], &[0x11, 0x11][..]),
            (&[0x11][..], &[0x12][..]),
            (&[0x11, 0x12][..], &[0x13, 0x11][..]),
        ] {
            let e = check_same_qps(&keys(first), &keys(second)).unwrap_err();
            assert!(e.to_string().contains("same -q"), "{e}");
        }
        assert!(check_same_qps(&keys(&[0x11, 0x12]), &keys(&[0x12, 0x11])).is_ok());
    }
}
