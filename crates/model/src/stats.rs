//! Statistics each component reports, gathered per node for results and tests.

use serde::Serialize;

use super::nic::cq::CqStats;
use super::nic::dma::DmaStats;
use super::nic::doorbell::DoorbellStats;
use super::nic::pcie::PcieStats;
use super::nic::qpc_manager::QpcManagerStats;
use super::nic::rx_pipeline::RxStats;
use super::nic::scheduler::SchedStats;
use super::nic::translation::TranslationStats;
use super::nic::tx_pipeline::TxStats;
use super::nic::unit::UnitStats;
use super::nic::wqe_fetch::FetchStats;
use super::nic::Nic;

/// Everything one node's NIC counted.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct NodeStats {
    /// PCIe bytes and TLPs.
    pub pcie: PcieStats,
    /// DMA engine.
    pub dma: DmaStats,
    /// QPC manager and cache.
    pub qpc: QpcManagerStats,
    /// MPT/MTT.
    pub translation: TranslationStats,
    /// Doorbells.
    pub doorbell: DoorbellStats,
    /// Scheduler.
    pub sched: SchedStats,
    /// WQE fetch.
    pub fetch: FetchStats,
    /// TX engine.
    pub tx: TxStats,
    /// TX engine occupancy.
    pub tx_unit: UnitStats,
    /// RX pipeline.
    pub rx: RxStats,
    /// CQ unit.
    pub cq: CqStats,
    /// Busy time of the DDR bus, ps.
    pub ddr_busy_ps: u64,
    /// Bytes left in the TX payload buffer when the statistics were taken (0 after a run
    /// that sent everything it fetched).
    pub tx_buffer_left_bytes: u64,
}

impl NodeStats {
    /// Gathers a node's counters.
    pub fn of(nic: &Nic) -> NodeStats {
        NodeStats {
            pcie: nic.pcie.stats(),
            dma: nic.dma.stats,
            qpc: nic.qpc.stats(),
            translation: nic.trans.stats,
            doorbell: nic.doorbell.stats,
            sched: nic.sched.stats,
            fetch: nic.fetch.stats,
            tx: nic.tx.stats,
            tx_unit: nic.tx.unit.stats,
            rx: nic.rx.stats,
            cq: nic.cq.stats,
            ddr_busy_ps: nic.ddr.bus.busy_ps,
            tx_buffer_left_bytes: nic.tx.buffered_bytes,
        }
    }
}

/// Transport counters summed over nodes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct TransportTotals {
    /// Packets sent.
    pub tx_packets: u64,
    /// Packets retransmitted.
    pub retransmissions: u64,
    /// NAKs sent.
    pub naks: u64,
    /// ACK timeouts.
    pub timeouts: u64,
    /// Duplicate requests seen by responders.
    pub duplicates: u64,
    /// Completions with errors.
    pub completion_errors: u64,
}

impl TransportTotals {
    /// Sums the transport statistics of several devices.
    pub fn of<'a>(it: impl Iterator<Item = &'a rnic_transport::TransportStats>) -> Self {
        let mut t = TransportTotals::default();
        for s in it {
            t.tx_packets += s.tx_packets;
            t.retransmissions += s.retransmitted_packets;
            t.naks += s.naks_sent.total();
            t.timeouts += s.ack_timeouts;
            t.duplicates += s.duplicate_requests;
            t.completion_errors += s.completion_errors;
        }
        t
    }
}
