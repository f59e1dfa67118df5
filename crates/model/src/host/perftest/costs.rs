//! What the host's CPU pays for each verb: the times the application's cores are busy.

use rnic_sim::TimePs;

/// The CPU costs of the application's verbs, ps (from `host.*` and `nic.prefetch`), fixed
/// at build. They are apart from the test's definition because they model the host, not
/// the test: the same test on a slower host posts the same operations later.
#[derive(Debug, Clone, Copy)]
pub struct HostCosts {
    /// CPU time of one post (WQE write + doorbell store), ps (`host.post_send_ns`).
    pub post_send_ps: TimePs,
    /// CPU time of building one WQE before its doorbell, ps (`host.wqe_prep_ns`).
    pub wqe_prep_ps: TimePs,
    /// Poll cost per CQE, ps (`host.poll_cq_ns`).
    pub poll_cq_ps: TimePs,
    /// Completions by event (`host.cq_events`): a sleeping core wakes this long after a
    /// CQE lands; `None`: the cores poll.
    pub cq_event_ps: Option<TimePs>,
    /// Time for a polling core to see a DMA write, ps (`host.mem_latency_ns`).
    pub mem_latency_ps: TimePs,
    /// Latency tests: idle time between an iteration's end and the next post, ps
    /// (`host.latency_gap_us`).
    pub latency_gap_ps: TimePs,
    /// post_send first stores the QPN into the NIC's prefetch register (software-triggered
    /// resource prefetching, `nic.prefetch` = sw or sched+sw).
    pub sw_prefetch: bool,
}
