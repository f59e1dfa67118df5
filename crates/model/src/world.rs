//! The simulated world and its event loop: per node a NIC (with its transport) and host
//! memory, the network, the application, the observers; each event goes to the component
//! it names, with the parts of the world that component may touch.

use rnic_host::SparseMemory;
use rnic_sim::{EventQueue, TimePs};

use super::event::{Ev, FramePool};
use super::host::perftest::{HostCx, Perftest};
use super::net::graph::Network;
use super::nic::cx::NicCx;
use super::nic::Nic;
use super::oracle::PayloadOracle;

/// Test hooks (used by tests to prove that checks can fail).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Hooks {
    /// Flip one payload byte of the n-th payload-carrying frame in the switch (and fix
    /// up the ICRC, so the corruption is invisible to the transport).
    pub corrupt_data_frame: Option<u64>,
}

/// The world.
pub struct World {
    /// Pending events.
    pub q: EventQueue<Ev>,
    /// Each node's NIC; node 0 is the server, 1..=N the clients.
    pub nics: Vec<Nic>,
    /// Each node's host memory (real bytes).
    pub mems: Vec<SparseMemory>,
    /// The network.
    pub net: Network,
    /// Frames in flight.
    pub frames: FramePool,
    /// The application.
    pub app: Perftest,
    /// The end-to-end payload oracle.
    pub oracle: PayloadOracle,
    /// Events processed.
    pub events: u64,
}

impl World {
    /// Processes events up to `until` (inclusive) or until none are left or `max_events`.
    /// Returns the time of the last event processed.
    pub fn run_until(&mut self, until: TimePs, max_events: u64) -> TimePs {
        let mut last = 0;
        while let Some((t, ev)) = self.q.pop_at_or_before(until) {
            last = t;
            self.events += 1;
            self.dispatch(t, ev);
            if self.events >= max_events || self.app.finished {
                break;
            }
        }
        last
    }

    fn dispatch(&mut self, now: TimePs, ev: Ev) {
        match ev {
            Ev::Nic { node, ev } => {
                let n = node as usize;
                let mut cx = NicCx {
                    node: n,
                    q: &mut self.q,
                    mem: &mut self.mems[n],
                    frames: &mut self.frames,
                    wire: &mut self.net,
                    observer: &mut self.oracle,
                };
                self.nics[n].handle(now, ev, &mut cx);
            }
            Ev::Net(ev) => self.net.handle(now, ev, &mut self.q, &mut self.frames),
            Ev::Host { node, ev } => {
                let mut cx = HostCx {
                    q: &mut self.q,
                    mems: &mut self.mems,
                    oracle: &mut self.oracle,
                };
                self.app.handle(now, node as usize, ev, &mut cx);
            }
            Ev::WindowOpen => self.app.window_pcie_busy[0] = Some(self.server_pcie_busy()),
            Ev::End => {
                self.app.window_pcie_busy[1] = Some(self.server_pcie_busy());
                self.app.finished = true;
            }
        }
    }

    /// Starts the application at time 0.
    pub fn start(&mut self) {
        let mut cx = HostCx {
            q: &mut self.q,
            mems: &mut self.mems,
            oracle: &mut self.oracle,
        };
        self.app.start(&mut cx);
    }

    /// The server's PCIe busy time each way (host → NIC, NIC → host), ps.
    pub fn server_pcie_busy(&self) -> (u64, u64) {
        let p = &self.nics[0].pcie;
        (p.down.busy_ps, p.up.busy_ps)
    }
}
