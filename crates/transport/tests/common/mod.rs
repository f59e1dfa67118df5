//! Two devices joined by a deterministic in-order "wire": a Vec of frames delivered in order,
//! with chosen frames dropped. Time advances by a fixed link delay per round, and jumps to the
//! next timer deadline when nothing is in flight.

#![allow(dead_code)]

pub mod script;

use rnic_transport::*;
use std::collections::BTreeMap;

/// Page-granular sparse memory (the transport crate cannot use rnic-host in its own tests).
#[derive(Default, Clone)]
pub struct PageMem {
    pages: BTreeMap<u64, Box<[u8; 4096]>>,
}

impl Memory for PageMem {
    fn read(&self, addr: u64, out: &mut [u8]) {
        let mut done = 0;
        while done < out.len() {
            let a = addr.wrapping_add(done as u64);
            let off = (a & 4095) as usize;
            let n = (4096 - off).min(out.len() - done);
            match self.pages.get(&(a >> 12)) {
                Some(p) => out[done..done + n].copy_from_slice(&p[off..off + n]),
                None => out[done..done + n].fill(0),
            }
            done += n;
        }
    }
    fn write(&mut self, addr: u64, data: &[u8]) {
        let mut done = 0;
        while done < data.len() {
            let a = addr.wrapping_add(done as u64);
            let off = (a & 4095) as usize;
            let n = (4096 - off).min(data.len() - done);
            let p = self
                .pages
                .entry(a >> 12)
                .or_insert_with(|| Box::new([0; 4096]));
            p[off..off + n].copy_from_slice(&data[done..done + n]);
            done += n;
        }
    }
}

impl PageMem {
    pub fn get(&self, addr: u64, len: usize) -> Vec<u8> {
        let mut v = vec![0; len];
        self.read(addr, &mut v);
        v
    }
    pub fn fill(&mut self, addr: u64, len: usize, seed: u8) -> Vec<u8> {
        let v: Vec<u8> = (0..len)
            .map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed) ^ (i >> 8) as u8)
            .collect();
        self.write(addr, &v);
        v
    }
    pub fn u64_at(&self, addr: u64) -> u64 {
        let mut b = [0; 8];
        self.read(addr, &mut b);
        u64::from_le_bytes(b)
    }
}

/// Base address and length of each node's big memory region.
pub const BASE: u64 = 0x1_0000_0000;
pub const MR_LEN: u64 = 64 << 20;
/// One way link delay per delivery round.
pub const LINK_PS: u64 = 1_000_000;

pub struct Node {
    pub dev: Device,
    pub mem: PageMem,
    pub pd: PdId,
    pub cq: CqId,
    pub qpn: u32,
    pub keys: MrKeys,
}

/// A device at `ip`/`mac` with one PD, one CQ of `cq_entries` and one MR of every access
/// over `region` (base, bytes).
pub fn device(
    ip: [u8; 4],
    mac: [u8; 6],
    cq_entries: u32,
    region: (u64, u64),
) -> (Device, PdId, CqId, MrKeys) {
    let mut dev = Device::new(DeviceConfig {
        ip,
        mac,
        ..DeviceConfig::default()
    });
    let pd = dev.alloc_pd();
    let cq = dev.create_cq(cq_entries).unwrap();
    let keys = dev.reg_mr(pd, region.0, region.1, Access::all()).unwrap();
    (dev, pd, cq, keys)
}

impl Node {
    pub fn new(ip: [u8; 4], mac: [u8; 6]) -> Node {
        let (mut dev, pd, cq, keys) = device(ip, mac, 1 << 16, (BASE, MR_LEN));
        let qpn = dev
            .create_qp(QpInit {
                pd,
                send_cq: cq,
                recv_cq: cq,
                max_send_wr: 4096,
                max_recv_wr: 4096,
            })
            .unwrap();
        Node {
            dev,
            mem: PageMem::default(),
            pd,
            cq,
            qpn,
            keys,
        }
    }

    pub fn completions(&mut self) -> Vec<Completion> {
        std::iter::from_fn(|| self.dev.poll_cq(self.cq)).collect()
    }

    /// The completions polled now, as (wr_id, status) in completion order.
    pub fn completion_statuses(&mut self) -> Vec<(u64, WcStatus)> {
        self.completions()
            .iter()
            .map(|c| (c.wr_id, c.status))
            .collect()
    }

    pub fn sge(&self, addr: u64, len: u32) -> Sge {
        Sge {
            addr,
            len,
            lkey: self.keys.lkey,
        }
    }

    pub fn remote(&self, va: u64) -> RemoteAddr {
        RemoteAddr {
            va,
            rkey: self.keys.rkey,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dir {
    AtoB,
    BtoA,
}

/// A frame on the wire, as the test sees it.
#[derive(Clone, Debug)]
pub struct Sent {
    pub dir: Dir,
    pub meta: TxMeta,
    /// Index among the frames sent in this direction.
    pub nth: usize,
    pub time_ps: u64,
    pub dropped: bool,
}

pub struct QpParams {
    pub pmtu: u32,
    pub sq_psn_a: u32,
    pub sq_psn_b: u32,
    pub timeout: u8,
    pub retry_cnt: u8,
    pub rnr_retry: u8,
    pub min_rnr_timer: u8,
    pub max_rd_atomic: u8,
    pub max_dest_rd_atomic: u8,
}

impl Default for QpParams {
    fn default() -> QpParams {
        QpParams {
            pmtu: 1024,
            sq_psn_a: 100,
            sq_psn_b: 5000,
            timeout: 10,
            retry_cnt: 7,
            rnr_retry: 7,
            min_rnr_timer: 1,
            max_rd_atomic: 16,
            max_dest_rd_atomic: 16,
        }
    }
}

pub type DropFn = Box<dyn FnMut(&Sent) -> bool>;

pub struct Pair {
    pub a: Node,
    pub b: Node,
    pub now_ps: u64,
    pub log: Vec<Sent>,
    pub drop: DropFn,
    /// Shuffle the frames of each round (seeded) before delivering them.
    pub reorder: Option<u64>,
    sent_a: usize,
    sent_b: usize,
}

/// The other end of a connection.
#[derive(Clone, Copy, Debug)]
pub struct Peer {
    pub mac: [u8; 6],
    pub ip: [u8; 4],
    pub qpn: u32,
}

/// RESET -> INIT -> RTR -> RTS towards `peer`; `psns` = (rq_psn, sq_psn).
pub fn connect(dev: &mut Device, qpn: u32, peer: Peer, psns: (u32, u32), p: &QpParams) {
    let (peer_mac, peer_ip, peer_qpn) = (peer.mac, peer.ip, peer.qpn);
    let (rq_psn, sq_psn) = psns;
    dev.modify_qp(
        qpn,
        &QpAttr::to_init(Access::REMOTE_WRITE | Access::REMOTE_READ | Access::REMOTE_ATOMIC),
    )
    .unwrap();
    let mut rtr = QpAttr::to_rtr(
        AddressVector::new(peer_mac, peer_ip),
        p.pmtu,
        peer_qpn,
        rq_psn,
    );
    rtr.min_rnr_timer = Some(p.min_rnr_timer);
    rtr.max_dest_rd_atomic = Some(p.max_dest_rd_atomic);
    dev.modify_qp(qpn, &rtr).unwrap();
    let mut rts = QpAttr::to_rts(sq_psn);
    rts.timeout = Some(p.timeout);
    rts.retry_cnt = Some(p.retry_cnt);
    rts.rnr_retry = Some(p.rnr_retry);
    rts.max_rd_atomic = Some(p.max_rd_atomic);
    dev.modify_qp(qpn, &rts).unwrap();
}

impl Pair {
    pub fn new(p: QpParams) -> Pair {
        let (mac_a, ip_a) = ([2, 0, 0, 0, 0, 0xA], [10, 0, 0, 1]);
        let (mac_b, ip_b) = ([2, 0, 0, 0, 0, 0xB], [10, 0, 0, 2]);
        let mut a = Node::new(ip_a, mac_a);
        let mut b = Node::new(ip_b, mac_b);
        connect(
            &mut a.dev,
            a.qpn,
            Peer {
                mac: mac_b,
                ip: ip_b,
                qpn: b.qpn,
            },
            (p.sq_psn_b, p.sq_psn_a),
            &p,
        );
        connect(
            &mut b.dev,
            b.qpn,
            Peer {
                mac: mac_a,
                ip: ip_a,
                qpn: a.qpn,
            },
            (p.sq_psn_a, p.sq_psn_b),
            &p,
        );
        Pair {
            a,
            b,
            now_ps: 0,
            log: Vec::new(),
            drop: Box::new(|_| false),
            reorder: None,
            sent_a: 0,
            sent_b: 0,
        }
    }

    pub fn with_default() -> Pair {
        Pair::new(QpParams::default())
    }

    /// Runs until nothing is in flight and no timer is armed, or `max_rounds` rounds.
    /// Returns the number of rounds.
    pub fn run(&mut self, max_rounds: usize) -> usize {
        let mut buf = Vec::new();
        for round in 0..max_rounds {
            let mut frames: Vec<(Dir, Vec<u8>, bool)> = Vec::new();
            for dir in [Dir::AtoB, Dir::BtoA] {
                loop {
                    let (src, counter) = match dir {
                        Dir::AtoB => (&mut self.a, &mut self.sent_a),
                        Dir::BtoA => (&mut self.b, &mut self.sent_b),
                    };
                    let Some(meta) = src.dev.poll_transmit(self.now_ps, &src.mem, &mut buf) else {
                        break;
                    };
                    assert_eq!(meta.frame_len, buf.len());
                    let mut s = Sent {
                        dir,
                        meta,
                        nth: *counter,
                        time_ps: self.now_ps,
                        dropped: false,
                    };
                    *counter += 1;
                    s.dropped = (self.drop)(&s);
                    frames.push((dir, buf.clone(), s.dropped));
                    self.log.push(s);
                }
            }
            self.now_ps += LINK_PS;
            let any = !frames.is_empty();
            if let Some(state) = self.reorder.as_mut() {
                for i in (1..frames.len()).rev() {
                    let j = (splitmix(state) % (i as u64 + 1)) as usize;
                    frames.swap(i, j);
                }
            }
            for (dir, f, dropped) in frames {
                if dropped {
                    continue;
                }
                let dst = match dir {
                    Dir::AtoB => &mut self.b,
                    Dir::BtoA => &mut self.a,
                };
                let _ = dst.dev.handle_packet(self.now_ps, &f, &mut dst.mem);
            }
            if !any {
                // Nothing in flight: jump to the next deadline.
                let next = [self.a.dev.poll_timeout(), self.b.dev.poll_timeout()]
                    .into_iter()
                    .flatten()
                    .min();
                let wants = self.a.dev.qp_wants_transmit(self.a.qpn)
                    || self.b.dev.qp_wants_transmit(self.b.qpn);
                match next {
                    _ if wants => {}
                    None => return round,
                    Some(t) => {
                        self.now_ps = self.now_ps.max(t);
                        self.a.dev.handle_timeout(self.now_ps);
                        self.b.dev.handle_timeout(self.now_ps);
                    }
                }
            } else {
                self.a.dev.handle_timeout(self.now_ps);
                self.b.dev.handle_timeout(self.now_ps);
            }
        }
        max_rounds
    }

    pub fn sent(&self, dir: Dir) -> impl Iterator<Item = &Sent> {
        self.log.iter().filter(move |s| s.dir == dir)
    }
}

/// splitmix64 step.
pub fn splitmix(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// A wire between two ends A and B whose frames arrive at times of their own, so paths of
/// different delays reorder them: (arrival ps, sequence) -> (to B?, frame).
#[derive(Default)]
pub struct TimedWire {
    frames: BTreeMap<(u64, u64), (bool, Vec<u8>)>,
    seq: u64,
}

impl TimedWire {
    /// `frame` leaves for B (`to_b`) or A and arrives at `at`.
    pub fn send(&mut self, at: u64, to_b: bool, frame: &[u8]) {
        self.frames.insert((at, self.seq), (to_b, frame.to_vec()));
        self.seq += 1;
    }

    /// The next frame due by `now` (to B?, frame), in arrival order.
    pub fn pop_due(&mut self, now: u64) -> Option<(bool, Vec<u8>)> {
        let e = self.frames.first_entry()?;
        (e.key().0 <= now).then(|| e.remove())
    }

    pub fn is_empty(&self) -> bool {
        self.frames.is_empty()
    }
}

/// After a slot of `slot_ps` ending at `now`: when nothing waits to be sent (`busy` false)
/// and the wire is empty, the time jumps to the slot of the devices' next timeout, and
/// `None` means nothing is left to happen.
pub fn next_now(
    now: u64,
    slot_ps: u64,
    busy: bool,
    wire: &TimedWire,
    devs: [&Device; 2],
) -> Option<u64> {
    if busy || !wire.is_empty() {
        return Some(now);
    }
    let next = devs.iter().filter_map(|d| d.poll_timeout()).min()?;
    Some(now.max(next.div_ceil(slot_ps) * slot_ps))
}
