//! `rnic-sim`: the discrete-event kernel under the rnic simulator.
//!
//! It knows nothing of NICs or packets; it provides the four things every
//! layer above shares, each built for determinism first and speed second:
//!
//! * [`time`]: simulated time as integer picoseconds ([`TimePs`]) with
//!   conversion helpers and exact serialization-delay arithmetic.
//! * [`queue`]: the pending-event set. [`EventQueue`] is a timing wheel that
//!   pops in exact `(time, insertion order)` order at tens of millions of
//!   events per second even with a million events pending; [`HeapQueue`] is
//!   the obviously-correct binary heap it is property-tested against.
//! * [`rng`]: [`Rng`], a seeded xoshiro256** generator with per-component
//!   sub-streams ([`Rng::fork`]), so the same seed replays the same run.
//! * [`stats`]: [`Counter`], a fixed-memory latency [`Histogram`] (≤ 1 %
//!   percentile error) and the serialisable latency [`Summary`].
//!
//! A simulation loop is just:
//!
//! ```
//! use rnic_sim::{ns, EventQueue};
//!
//! let mut q = EventQueue::new();
//! q.push(ns(5.0), "second");
//! q.push(ns(1.0), "first");
//! q.push(ns(5.0), "third"); // same time as "second": FIFO
//! let mut order = Vec::new();
//! while let Some((t, ev)) = q.pop() {
//!     order.push(ev);
//!     if ev == "first" {
//!         q.push(t + ns(10.0), "last"); // handlers schedule follow-ups
//!     }
//! }
//! assert_eq!(order, ["first", "second", "third", "last"]);
//! ```

#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod queue;
pub mod rng;
pub mod stats;
pub mod time;

pub use queue::{EventQueue, Geometry, HeapQueue, TimeQueue};
pub use rng::Rng;
pub use stats::{Counter, Histogram, Summary};
pub use time::{
    bytes_time_ps, bytes_time_ps_mbps, cycles, ms, ns, secs, ser_ps, to_ms, to_ns, to_s, to_us, us,
    TimePs, PS_PER_MS, PS_PER_NS, PS_PER_S, PS_PER_US,
};
