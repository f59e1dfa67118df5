//! Equal-cost multipath: a switch that reaches a node over several equally short paths
//! picks one per flow by a hash of the frame's 5-tuple (source and destination IP, protocol,
//! UDP source and destination port), salted per switch. A QP's frames share its UDP source
//! port (RoCEv2's entropy), so they keep one path and arrive in order; different QPs spread
//! over the paths. The salt keeps switches of different tiers from splitting flows the same
//! way (the polarisation a shared hash gives). Tables exist only where `net.fabric.routing`
//! turns ECMP on: elsewhere the switch keeps its one route per destination.
//!
//! Packet spraying (`net.fabric.routing = "spray"`) uses the same tables but draws each
//! frame's next hop at random from the switch's own stream instead of hashing its flow, so
//! one QP's frames take every equal-cost path and arrive out of order: the multipath fabric
//! the ORNIC and MP-RDMA papers spray over. Adaptive routing (`"adaptive"`) sends each frame
//! to the equal-cost port that will have sent what it holds soonest, a random one among
//! equals ([`EcmpTable::pick_least_toward`]; the network reads the ports).

use rnic_sim::Rng;
use rnic_wire::frame::{IPV4_OFFSET, UDP_OFFSET};

/// "No group": the destination has one next hop, the switch's route.
const NONE: u32 = u32::MAX;

/// One switch's equal-cost next hops toward each node that it reaches over more than one.
#[derive(Debug, Clone, Default)]
pub struct EcmpTable {
    /// Per destination node: its group in `groups`, or [`NONE`]. Empty: ECMP off.
    group_of: Vec<u32>,
    /// The distinct sets of output ports (each of two or more), shared by destinations.
    groups: Vec<Box<[u32]>>,
    /// This switch's hash salt.
    salt: u64,
    /// How a frame's port is picked among the equal-cost ones.
    mode: PickMode,
}

/// How a switch picks among equal-cost ports.
#[derive(Debug, Clone, Default)]
enum PickMode {
    /// By a hash of the frame's 5-tuple: a flow keeps its path.
    #[default]
    Hash,
    /// At random per frame from this stream.
    Spray(Rng),
    /// The least loaded port per frame, ties drawn from this stream.
    LeastLoaded(Rng),
}

impl EcmpTable {
    /// A table for `nodes` destinations, none of them with a choice yet; `salt` tells this
    /// switch's hash from the others'.
    pub fn new(nodes: usize, salt: u64) -> EcmpTable {
        EcmpTable {
            group_of: vec![NONE; nodes],
            groups: Vec::new(),
            salt,
            mode: PickMode::Hash,
        }
    }

    /// The same table spraying: each frame's next hop drawn from `rng`, not hashed.
    pub fn spraying(self, rng: Rng) -> EcmpTable {
        EcmpTable {
            mode: PickMode::Spray(rng),
            ..self
        }
    }

    /// The same table routing adaptively: each frame to the least loaded of its equal-cost
    /// ports ([`EcmpTable::pick_least_toward`]), ties drawn from `rng`.
    pub fn adaptive(self, rng: Rng) -> EcmpTable {
        EcmpTable {
            mode: PickMode::LeastLoaded(rng),
            ..self
        }
    }

    /// Whether the network must pick by its ports' load
    /// ([`EcmpTable::pick_least_toward`]) rather than call [`EcmpTable::pick_by_tuple`].
    #[inline]
    pub fn picks_by_load(&self) -> bool {
        matches!(self.mode, PickMode::LeastLoaded(_))
    }

    /// Of the equal-cost output ports toward node `d`, the one with the least `load(port)`
    /// (the network gives how long each port needs to send what it holds), a uniformly
    /// drawn one among equals (reservoir sampling, from the table's stream; the first among
    /// equals when it has none). `None` when `d` has no choice (the switch's route).
    pub fn pick_least_toward(&mut self, d: usize, mut load: impl FnMut(u32) -> u64) -> Option<u32> {
        let g = *self.group_of.get(d)?;
        if g == NONE {
            return None;
        }
        let mut rng = match &mut self.mode {
            PickMode::Spray(rng) | PickMode::LeastLoaded(rng) => Some(rng),
            PickMode::Hash => None,
        };
        let mut best: Option<(u32, u64)> = None;
        let mut ties = 0u64;
        for &port in self.groups[g as usize].iter() {
            let l = load(port);
            match best {
                Some((_, least)) if l > least => {}
                Some((_, least)) if l == least => {
                    ties += 1;
                    if rng.as_mut().is_some_and(|r| r.gen_below(ties + 1) == 0) {
                        best = Some((port, l));
                    }
                }
                _ => {
                    best = Some((port, l));
                    ties = 0;
                }
            }
        }
        best.map(|(port, _)| port)
    }

    /// Sets the equal-cost output ports toward node `d` (fewer than two: no choice).
    pub fn set(&mut self, d: usize, outs: &[u32]) {
        if outs.len() < 2 {
            return;
        }
        let g = match self.groups.iter().position(|g| **g == *outs) {
            Some(g) => g,
            None => {
                self.groups.push(outs.into());
                self.groups.len() - 1
            }
        };
        self.group_of[d] = g as u32;
    }

    /// Every output port a frame toward node `d` may take (`None`: one, the route's).
    pub fn outs_toward(&self, d: usize) -> Option<&[u32]> {
        let g = *self.group_of.get(d)?;
        (g != NONE).then(|| &*self.groups[g as usize])
    }

    /// The output port this switch picks for `frame` toward node `d` (by its hash, or a
    /// draw when it sprays), when it has a choice.
    #[inline]
    pub fn pick(&mut self, d: usize, frame: &[u8]) -> Option<u32> {
        self.pick_by_tuple(d, || tuple_words(frame))
    }

    /// [`EcmpTable::pick`] for a frame whose [`tuple_words`] `words` gives, asked for only when
    /// there is a choice (and the table hashes rather than sprays).
    #[inline]
    pub fn pick_by_tuple(&mut self, d: usize, words: impl FnOnce() -> [u64; 2]) -> Option<u32> {
        let g = *self.group_of.get(d)?;
        if g == NONE {
            return None;
        }
        let outs = &self.groups[g as usize];
        let i = match &mut self.mode {
            PickMode::Spray(rng) => rng.gen_index(outs.len()),
            // Adaptive picks go through `pick_least_toward`; hashed here they keep a flow's
            // path.
            PickMode::Hash | PickMode::LeastLoaded(_) => {
                (hash_tuple(words(), self.salt) % outs.len() as u64) as usize
            }
        };
        Some(outs[i])
    }
}

/// `frame`'s 5-tuple as two words (the IPv4 addresses; the protocol and UDP ports), each
/// field 0 where the frame is too short for it.
pub fn tuple_words(frame: &[u8]) -> [u64; 2] {
    let field = |at: usize, len: usize| -> u64 {
        frame
            .get(at..at + len)
            .map_or(0, |b| b.iter().fold(0u64, |v, &x| v << 8 | x as u64))
    };
    let ip_src = field(IPV4_OFFSET + 12, 4);
    let ip_dst = field(IPV4_OFFSET + 16, 4);
    let proto = field(IPV4_OFFSET + 9, 1);
    let ports = field(UDP_OFFSET, 4);
    [ip_src << 32 | ip_dst, proto << 32 | ports]
}

/// A hash of a frame's 5-tuple ([`tuple_words`]: `words`) mixed with `salt`.
#[inline]
pub fn hash_tuple(words: [u64; 2], salt: u64) -> u64 {
    let mut h = salt.wrapping_mul(0x9e37_79b9_7f4a_7c15);
    for v in words {
        h = mix(h ^ v);
    }
    h
}

/// SplitMix64's finaliser: every input bit moves about half the output bits.
fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A frame long enough for the 5-tuple, with UDP source port `sport`.
    fn frame(sport: u16) -> Vec<u8> {
        let mut f = vec![0u8; UDP_OFFSET + 8];
        f[IPV4_OFFSET + 9] = 17;
        f[IPV4_OFFSET + 12..IPV4_OFFSET + 16].copy_from_slice(&[10, 0, 0, 1]);
        f[IPV4_OFFSET + 16..IPV4_OFFSET + 20].copy_from_slice(&[10, 0, 0, 2]);
        f[UDP_OFFSET..UDP_OFFSET + 2].copy_from_slice(&sport.to_be_bytes());
        f[UDP_OFFSET + 2..UDP_OFFSET + 4].copy_from_slice(&4791u16.to_be_bytes());
        f
    }

    #[test]
    fn a_flow_keeps_its_path_and_flows_spread_evenly() {
        let mut t = EcmpTable::new(3, 7);
        t.set(2, &[4, 5, 6, 7]);
        let mut per_out = [0u32; 8];
        for sport in 0xc000..0xc000 + 4000u16 {
            let o = t.pick(2, &frame(sport)).unwrap();
            assert_eq!(
                t.pick(2, &frame(sport)),
                Some(o),
                "the same flow, the same path"
            );
            per_out[o as usize] += 1;
        }
        for o in 4..8 {
            // 1000 expected each; 6 sigma of a binomial(4000, 1/4) is about 165.
            assert!((835..=1165).contains(&per_out[o]), "{per_out:?}");
        }
    }

    #[test]
    fn one_next_hop_or_ecmp_off_leaves_the_route() {
        let mut t = EcmpTable::new(3, 0);
        t.set(1, &[3]);
        assert_eq!(t.pick(1, &frame(1)), None);
        assert_eq!(t.pick(0, &frame(1)), None);
        assert_eq!(EcmpTable::default().pick(0, &frame(1)), None);
    }

    #[test]
    fn salts_split_flows_independently() {
        let (mut a, mut b) = (EcmpTable::new(1, 1), EcmpTable::new(1, 2));
        a.set(0, &[0, 1]);
        b.set(0, &[0, 1]);
        let same = (0..2000u16)
            .filter(|&p| a.pick(0, &frame(p)) == b.pick(0, &frame(p)))
            .count();
        // Independent halves agree about half the time.
        assert!((800..=1200).contains(&same), "{same}");
    }

    #[test]
    fn spraying_spreads_one_flow_over_every_next_hop() {
        let mut t = EcmpTable::new(3, 7).spraying(Rng::new(1));
        t.set(2, &[4, 5, 6, 7]);
        let f = frame(0xc000);
        let mut per_out = [0u32; 8];
        for _ in 0..4000 {
            per_out[t.pick(2, &f).unwrap() as usize] += 1;
        }
        for o in 4..8 {
            assert!((835..=1165).contains(&per_out[o]), "{per_out:?}");
        }
        t.set(1, &[3]);
        assert_eq!(t.pick(1, &f), None, "one next hop: the route");
    }

    #[test]
    fn the_least_loaded_port_wins_and_equals_share() {
        let mut t = EcmpTable::new(3, 0).adaptive(Rng::new(3));
        assert!(t.picks_by_load());
        t.set(0, &[4, 5, 6]);
        t.set(1, &[0, 1, 2]);
        let load = [0, 0, 0, 0, 900, 100, 300];
        assert_eq!(t.pick_least_toward(0, |p| load[p as usize]), Some(5));
        assert_eq!(t.pick_least_toward(2, |_| 0), None, "no choice: the route");
        let mut per_port = [0u32; 3];
        for _ in 0..3000 {
            let p = t.pick_least_toward(1, |_| 7).unwrap();
            per_port[p as usize] += 1;
        }
        // 1000 expected each; 6 sigma of a binomial(3000, 1/3) is about 155.
        for n in per_port {
            assert!((845..=1155).contains(&n), "{per_port:?}");
        }
    }

    #[test]
    fn groups_are_shared_between_destinations() {
        let mut t = EcmpTable::new(4, 0);
        (0..4).for_each(|d| t.set(d, &[1, 2]));
        assert_eq!(t.groups.len(), 1);
        assert_eq!(t.outs_toward(3), Some(&[1u32, 2][..]));
    }
}
