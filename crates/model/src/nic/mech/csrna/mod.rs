//! csRNA (Kang et al., "Towards Connection-Scalable RNIC Architecture"), all of it: the
//! non-blocking QPC management as pure, clock-free state machines (§3–§5), its timed
//! manager, and latency-hiding QPC scheduling (§4.5).
//!
//! The NIC reaches the paper through two seams, each switched by one config field:
//! * `nic.qpc_manager` — [`crate::nic::qpc_manager::any::AnyQpcManager`] names the timed
//!   [`nonblocking::NonBlocking`] manager; the pipeline stages see only the
//!   [`crate::nic::qpc_manager::QpcManager`] seam and the requester [`Channel`]s.
//! * `nic.latency_hiding` — the scheduler route asks [`latency_hiding::DescriptorPath`] how a
//!   visit reaches its WQEs.
//!
//! QPC placement in on-board DDR (§4.6) is not here: the DDR is a memory device of the NIC's
//! memory path (`nic/ddr.rs`, reached by the DMA unit), and `nic.qpc_placement` only says
//! which backing store the QPC manager's reads go to.
//!
//! With a QPC cache instead of all contexts on chip, a first-come-first-served manager lets
//! one miss block every later request (head-of-line blocking, §3, Fig. 2). csRNA keeps the
//! manager going:
//!
//! * [`requester`] — each RDMA-engine unit tags its requests with an index and keeps their
//!   information in a waiting SRAM, so responses may return in any order (§4.4, Fig. 5b);
//!   the baseline keeps a waiting FIFO.
//! * [`pending_fifo`] — the pending FIFO pair holding requests that wait for a DMA read
//!   (Type 1) or for older requests of their QP (Type 2) (§4.3.1, Fig. 4c).
//! * [`pending_record_table`] — per-QP pending counts, the CAM that keeps same-QP order
//!   (§4.3.2, Fig. 4a, Formula 1).
//! * [`manager`] — the request handling unit (Algorithm 1) and pending handling unit
//!   (Algorithm 2) behind the channel arbiter ([`arbiter`]). The baseline FCFS manager the
//!   model runs is the timed [`crate::nic::qpc_manager::fcfs`].
//! * [`onchip`] — their on-chip bytes (Formula 2) and Table 1.
//! * [`nonblocking`] — the manager in the timed model: requesters, clock and DMA reads.
//! * [`latency_hiding`] — the descriptor path of a scheduler visit (§4.5, Fig. 6).
//!
//! Sans-IO: the managers own neither the QPC cache nor the DMA engine. The timed model
//! submits requests, calls [`QpcManager::step`] once per manager cycle with its cache as a
//! [`QpcStore`], issues the DMA reads the step asks for and reports their completion, in
//! issue order, with [`QpcManager::dma_returned`] after putting the context in its cache.

pub mod arbiter;
pub mod latency_hiding;
pub mod manager;
pub mod nonblocking;
pub mod onchip;
pub mod pending_fifo;
pub mod pending_record_table;
pub mod requester;
pub mod types;

pub use arbiter::ChannelArbiter;
pub use manager::{NonBlockingQpcManager, Unit};
pub use pending_fifo::{PendingElement, PendingFifo};
pub use pending_record_table::{PendingRecordTable, PrtEntry};
pub use requester::{FcfsRequester, NonBlockingRequester, QpcRequester, RequesterError, Stall};
pub use types::{
    Channel, ConfigError, DmaReturnError, ManagerError, ManagerStats, QpcManager, QpcManagerConfig,
    QpcRequest, QpcResponse, QpcStore, ServedBy, StepOutput, SubmitError, MAX_OOO_CAP,
    NUM_CHANNELS,
};
