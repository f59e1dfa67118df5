//! Vocabulary shared by the csRNA structures: channels, requests, responses, the store seam,
//! the manager seam, configuration and errors.
//!
//! Everything here is clock-free and owns no cache or DMA engine (sans-IO): the timed NIC
//! model decides *when* a manager step happens and charges cycles for it.

use std::fmt;

/// Number of QPC requester channels of the RDMA engine (csRNA §4.4, Fig. 5a: the
/// descriptor unit, the requester unit and the responder unit each own one QPC requester).
pub const NUM_CHANNELS: usize = 3;

/// Largest out-of-order capacity: the paper's index is 8 bits wide (§4.4), so at most 256
/// indices per channel.
pub const MAX_OOO_CAP: usize = 256;

/// One of the three QPC requester channels (csRNA §4.4, Fig. 5a). The discriminant is the
/// channel number used by the arbiter's round robin and by Formula 1 (`chnl_num`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Channel {
    /// Descriptor unit (channel 0): its waiting information is the doorbell.
    Descriptor = 0,
    /// Requester unit (channel 1): its waiting information is the descriptor (WQE).
    Requester = 1,
    /// Responder unit (channel 2): its waiting information is the received packet.
    Responder = 2,
}

impl Channel {
    /// All channels in arbitration order.
    pub const ALL: [Channel; NUM_CHANNELS] =
        [Channel::Descriptor, Channel::Requester, Channel::Responder];

    /// The channel number (0, 1, 2).
    pub const fn number(self) -> usize {
        self as usize
    }

    /// The channel with number `n`, if there is one.
    pub const fn from_number(n: usize) -> Option<Channel> {
        match n {
            0 => Some(Channel::Descriptor),
            1 => Some(Channel::Requester),
            2 => Some(Channel::Responder),
            _ => None,
        }
    }
}

/// A QPC request as it travels from a QPC requester through its request FIFO to the QPC
/// management module (csRNA §4.4, Fig. 5b).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct QpcRequest {
    /// Queue pair number whose context is wanted.
    pub qpn: u32,
    /// Requesting channel.
    pub channel: Channel,
    /// The requester's index (its waiting-SRAM address; 8 bits, §4.4). Unique among the
    /// channel's outstanding requests and below `ooo_cap`.
    pub index: u8,
    /// `true` for an update of the entry, `false` for a read. Algorithm 1 treats both alike on
    /// the pending path; the paper returns data only for reads, the managers here acknowledge
    /// writes too (with `write: true`) so the requester can free the index.
    pub write: bool,
}

/// How a response was produced; lets the timed model attribute latency.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ServedBy {
    /// Cache hit in the request handling unit (Algorithm 1, no pending work for the QP).
    RequestHit,
    /// Type 2 element found in the cache by the pending handling unit (Algorithm 2 check).
    PendingHit,
    /// Type 1 element answered with the context its DMA read brought back (Algorithm 2).
    DmaReturn,
}

/// The QPC handed back to a channel (the data itself lives in the timed model's cache).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct QpcResponse {
    /// Queue pair number.
    pub qpn: u32,
    /// Channel that asked; the channel arbiter routes the response back to it.
    pub channel: Channel,
    /// The requester's index, echoed so the requester finds its waiting information.
    pub index: u8,
    /// Echo of [`QpcRequest::write`]. The model applies the update to the context; for a
    /// [`ServedBy::DmaReturn`] answer the context may have been evicted again between
    /// `dma_returned` and this response, so the update goes wherever the context lives now.
    pub write: bool,
    /// Acceptance order: the number of requests the manager's arbiter had taken before this
    /// one. Requests of one QP are answered in increasing `seq`. Simulation-only tag (no
    /// hardware field), used by checks and traces.
    pub seq: u64,
    /// Which path produced the response.
    pub served_by: ServedBy,
}

/// What one manager step produced (one unit of work of one unit per manager cycle).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StepOutput {
    /// Nothing to do: no request queued, no DMA response waiting, nothing worth checking.
    /// The timed model need not step again until [`QpcManager::submit`] or
    /// [`QpcManager::dma_returned`] is called.
    Idle,
    /// A unit worked (a request parked in the pending FIFO, an element checked and written
    /// back) without anything leaving the manager.
    Internal,
    /// A QPC is returned to a channel.
    Response(QpcResponse),
    /// The model must issue a QPC DMA read for `qpn` and call
    /// [`QpcManager::dma_returned`] when it completes. DMA reads complete in issue order.
    PostDma {
        /// QPN to read.
        qpn: u32,
    },
}

/// The QPC cache as the manager sees it. The timed model owns the cache; the manager only
/// asks it questions.
pub trait QpcStore {
    /// Looks `qpn` up (a hardware lookup: counts, and a hit makes it most recently used).
    fn lookup(&mut self, qpn: u32) -> bool;
    /// Whether `qpn` is resident, without touching recency or counters. The managers never
    /// need it (every hardware access is a lookup); the model's prefetcher and tests do.
    fn is_resident(&self, qpn: u32) -> bool;
}

/// Configuration shared by both managers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct QpcManagerConfig {
    ooo_cap: usize,
    req_fifo_depth: usize,
}

impl QpcManagerConfig {
    /// A configuration with out-of-order capacity `ooo_cap` (indices per channel, §4.4) and a
    /// request FIFO of `ooo_cap` entries per channel (enough never to refuse a requester that
    /// respects its index FIFO).
    pub fn new(ooo_cap: usize) -> Result<Self, ConfigError> {
        Self::with_req_fifo_depth(ooo_cap, ooo_cap)
    }

    /// As [`new`](Self::new) with an explicit request FIFO depth per channel; a shallower
    /// FIFO makes [`QpcManager::submit`] refuse with [`SubmitError::Backpressure`].
    pub fn with_req_fifo_depth(ooo_cap: usize, req_fifo_depth: usize) -> Result<Self, ConfigError> {
        if ooo_cap == 0 || ooo_cap > MAX_OOO_CAP {
            return Err(ConfigError::OooCap(ooo_cap));
        }
        if req_fifo_depth == 0 {
            return Err(ConfigError::ReqFifoDepth(req_fifo_depth));
        }
        Ok(QpcManagerConfig {
            ooo_cap,
            req_fifo_depth,
        })
    }

    /// Out-of-order capacity (indices per channel).
    pub fn ooo_cap(&self) -> usize {
        self.ooo_cap
    }

    /// Request FIFO depth per channel.
    pub fn req_fifo_depth(&self) -> usize {
        self.req_fifo_depth
    }
}

/// The seam between the timed NIC model and a QPC manager; implemented by
/// [`NonBlockingQpcManager`](super::NonBlockingQpcManager) and
/// the tests' reference FCFS manager.
pub trait QpcManager {
    /// Queues a request in its channel's request FIFO.
    fn submit(&mut self, req: QpcRequest) -> Result<(), SubmitError>;
    /// Performs one unit of work (one manager cycle).
    fn step(&mut self, store: &mut dyn QpcStore) -> Result<StepOutput, ManagerError>;
    /// The DMA read of `qpn`'s context has completed and the model has put the context in
    /// the store. Calls must follow the order of the [`StepOutput::PostDma`] outputs.
    fn dma_returned(&mut self, qpn: u32) -> Result<(), DmaReturnError>;
    /// Whether [`step`](Self::step) would do anything (the model may sleep otherwise).
    fn has_work(&self) -> bool;
    /// Requests accepted and not yet answered.
    fn in_flight(&self) -> usize;
    /// DMA reads posted whose completion has not been reported yet.
    fn dma_outstanding(&self) -> usize;
    /// Counters.
    fn stats(&self) -> &ManagerStats;
}

/// Counters of a manager.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ManagerStats {
    /// Requests accepted by `submit`.
    pub submitted: u64,
    /// Requests refused with backpressure.
    pub backpressured: u64,
    /// Responses produced.
    pub responses: u64,
    /// Responses from a hit in the request handling unit.
    pub request_hits: u64,
    /// Requests that missed in the request handling unit (DMA posted, Type 1 created).
    pub request_misses: u64,
    /// Requests parked behind earlier requests of the same QP (Type 2 created).
    pub request_ordered: u64,
    /// DMA reads posted (request misses + Type 2 → Type 1 conversions).
    pub dma_posted: u64,
    /// DMA responses consumed.
    pub dma_returned: u64,
    /// Type 2 → Type 1 conversions (the QPC was evicted again before its turn).
    pub conversions: u64,
    /// Elements popped for checking (Algorithm 2 traversal).
    pub checks: u64,
    /// Checked elements answered from the cache.
    pub check_hits: u64,
    /// Checked elements written back to the pending FIFO.
    pub check_writebacks: u64,
    /// Pending-FIFO role swaps (completed traversal passes).
    pub swaps: u64,
    /// New PRT entries that could not use their Formula 1 address (slot still held by an
    /// older entry) and went to the first free slot instead.
    pub prt_slot_fallbacks: u64,
    /// Steps in which the manager could not proceed (FCFS: blocked on a miss) or had nothing
    /// to do.
    pub idle_steps: u64,
    /// Largest pending FIFO occupancy seen (both FIFOs together).
    pub max_pf_occupancy: u64,
    /// Largest number of valid PRT entries seen.
    pub max_prt_occupancy: u64,
}

/// A configuration value out of range.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConfigError {
    /// `ooo_cap` must be in 1..=256 (8-bit index).
    OooCap(usize),
    /// The request FIFO needs at least one entry.
    ReqFifoDepth(usize),
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ConfigError::OooCap(v) => {
                write!(
                    f,
                    "ooo_cap {v} out of range 1..={MAX_OOO_CAP} (8-bit index)"
                )
            }
            ConfigError::ReqFifoDepth(v) => write!(f, "request FIFO depth {v} must be at least 1"),
        }
    }
}

impl std::error::Error for ConfigError {}

/// Why `submit` refused a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SubmitError {
    /// The channel's request FIFO (or the pending structures) cannot take the request now;
    /// the requester keeps it and retries later.
    Backpressure,
    /// `index` is not below `ooo_cap`.
    IndexOutOfRange {
        /// Offending index.
        index: u8,
        /// Configured capacity.
        ooo_cap: usize,
    },
    /// The channel already has a request with this index outstanding (an index is free only
    /// after its response).
    IndexInFlight {
        /// Channel.
        channel: Channel,
        /// Index.
        index: u8,
    },
}

impl fmt::Display for SubmitError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SubmitError::Backpressure => write!(f, "request FIFO full, retry later"),
            SubmitError::IndexOutOfRange { index, ooo_cap } => {
                write!(f, "index {index} not below ooo_cap {ooo_cap}")
            }
            SubmitError::IndexInFlight { channel, index } => {
                write!(f, "index {index} of {channel:?} already outstanding")
            }
        }
    }
}

impl std::error::Error for SubmitError {}

/// Why `dma_returned` refused a completion (the manager's state is unchanged).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DmaReturnError {
    /// No DMA read is outstanding.
    NoneOutstanding {
        /// QPN reported.
        qpn: u32,
    },
    /// Completions must follow issue order; the oldest outstanding read is `expected`.
    OutOfOrder {
        /// QPN reported.
        qpn: u32,
        /// QPN of the oldest outstanding read.
        expected: u32,
    },
}

impl fmt::Display for DmaReturnError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DmaReturnError::NoneOutstanding { qpn } => {
                write!(
                    f,
                    "DMA completion for QP {qpn} but no QPC read is outstanding"
                )
            }
            DmaReturnError::OutOfOrder { qpn, expected } => write!(
                f,
                "DMA completion for QP {qpn} out of order: oldest outstanding read is QP {expected}"
            ),
        }
    }
}

impl std::error::Error for DmaReturnError {}

/// An internal invariant did not hold. Unreachable when the structures are used through the
/// managers; reported instead of panicking.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ManagerError {
    /// Description of the broken invariant.
    Invariant(String),
}

impl fmt::Display for ManagerError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ManagerError::Invariant(s) => write!(f, "QPC manager invariant broken: {s}"),
        }
    }
}

impl std::error::Error for ManagerError {}
