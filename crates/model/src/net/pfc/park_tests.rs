//! A parked NIC ([`crate::nic::cx::pause_looks`]) against the same NIC taking every look, on
//! one event queue: the same sends, to the picosecond, ties included.

use rnic_sim::{EventQueue, TimePs};

use super::*;
use crate::nic::cx::pause_looks::parked_looks;

const KB: u64 = 1024;
const QUANTUM: TimePs = 5120;
const SLACK: TimePs = 655;
const BACK: TimePs = 7_220;

/// Flow control over link 0 (a NIC into a switch) at 100 Gb/s: quantum 5.12 ns, the NIC's
/// lead and slack 655 ps, a PFC frame back in 7.22 ns (its 84 bytes on the wire, 500 ps of
/// cable).
fn pfc() -> Pfc {
    let p = PfcParams {
        xoff_bytes: 8 * KB,
        xon_bytes: 4 * KB,
        priority: 3,
        nic_lead_bytes: 0,
    };
    let links = [
        PfcLink {
            tx: Tx::Nic,
            tx_mbps: Some(100_000),
            back_ps: BACK,
        },
        PfcLink {
            tx: Tx::Switch { switch: 0, out: 0 },
            tx_mbps: Some(100_000),
            back_ps: 0,
        },
    ];
    let mut f = Pfc::new(p, &links, 1, 0);
    f.lead_ps[0] = SLACK;
    f
}

/// What the network does to link 0 at a time, queued at another.
#[derive(Debug, Clone, Copy)]
enum Act {
    /// A PFC frame with this pause time lands on the NIC.
    Pause(u16),
    /// The ingress's last frame of unknown departure starts; it leaves at the time given.
    Start(TimePs),
    /// Every byte of the ingress leaves (the XON is sent).
    Left,
}

#[derive(Debug, Clone, Copy)]
enum Ev {
    /// Action `i` is queued.
    Queue(usize),
    /// Action `i` acts.
    Act(usize),
    /// The TX engine's wake (its time is checked against the pending one when parked).
    Wake,
    /// The network wakes the parked engine.
    Look,
}

/// (queued, acts, what): the actions; the engine looks first at `first`. Returns (the
/// time it sends, the engine's events).
fn run(acts: &[(TimePs, TimePs, Act)], first: TimePs, parks: bool) -> (TimePs, usize) {
    let mut f = pfc();
    assert_eq!(f.on_queued(0, 0, 12 * KB, None), Some(XOFF_QUANTA));
    let mut q = EventQueue::new();
    for (i, &(queued, _, _)) in acts.iter().enumerate() {
        q.push(queued, Ev::Queue(i));
    }
    q.push(first, Ev::Wake);
    let (mut pending, mut events) = (None, 0);
    while let Some((now, ev)) = q.pop() {
        match ev {
            Ev::Queue(i) => q.push(acts[i].1, Ev::Act(i)),
            Ev::Act(i) => {
                match acts[i].2 {
                    Act::Pause(quanta) => f.on_pause_time(now, 0, quanta),
                    Act::Start(leaves) => f.on_started((now, acts[i].0), 0, leaves, 12 * KB),
                    Act::Left => drop(f.on_left(now, 0, 12 * KB)),
                }
                for (_, g) in f.take_woken() {
                    q.push(g, Ev::Look);
                }
            }
            Ev::Wake | Ev::Look => {
                if matches!(ev, Ev::Wake) && pending.is_some_and(|p| p != now) {
                    continue; // replaced by a look
                }
                events += 1;
                let wake = f.hold(0, now).saturating_sub(SLACK);
                if wake <= now {
                    return (now, events);
                }
                let parked = f
                    .look_again(0, now)
                    .and_then(|l| parked_looks(now, 0, SLACK, l))
                    .filter(|_| parks);
                let at = match parked {
                    Some(p) => {
                        f.park(0, p);
                        p.end
                    }
                    None => wake,
                };
                pending = Some(at);
                q.push(at, Ev::Wake);
            }
        }
    }
    unreachable!("the pause ends");
}

#[test]
fn a_parked_nic_sends_when_it_did_taking_no_look_while_paused() {
    let pause = 300; // quanta: 1.5 µs
    let land = 10_000;
    for first in [land + 1, land + 7, land + 2_000] {
        // Times on the looks' grid (a tie with a look) and off it.
        let on = |j: u64| first + j * QUANTUM;
        let mut cases: Vec<Vec<(TimePs, TimePs, Act)>> = vec![vec![]];
        for t in [on(40), on(40) + 1, on(40) - 1, on(299), on(301)] {
            cases.push(vec![(t - BACK, t, Act::Pause(0))]);
            cases.push(vec![(t - BACK, t, Act::Pause(pause))]);
            for queued in [t, t - 1, t - QUANTUM + 1, t - QUANTUM - 1, t - 100_000] {
                for leaves in [t + 1_000, t + 30_000] {
                    cases.push(vec![(queued, t, Act::Start(leaves))]);
                    cases.push(vec![
                        (queued, t, Act::Start(leaves)),
                        (leaves - 7_000, leaves, Act::Left),
                    ]);
                }
            }
        }
        for extra in cases {
            let mut acts = vec![(land - BACK, land, Act::Pause(pause))];
            acts.extend(extra);
            let (was, looks) = run(&acts, first, false);
            let (is, parked) = run(&acts, first, true);
            assert_eq!(is, was, "first look {first}, {acts:?}");
            assert!(parked <= 4, "{parked} events: first look {first}, {acts:?}");
            if acts.len() == 1 {
                assert!(looks > 250, "{looks}: one look a quantum");
                assert_eq!(parked, 2, "the first look and the one at the pause's end");
            }
        }
    }
}
