//! Work requests as the application posts them.

pub use crate::inline_sgl::Sge;
use crate::inline_sgl::Sgl;

/// Remote buffer of a WRITE, READ or atomic.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct RemoteAddr {
    pub va: u64,
    pub rkey: u32,
}

/// Operands of an atomic. CMP&SWAP: `compare_add` is the compare value, `swap` the new
/// value. FETCH&ADD: `compare_add` is the addend, `swap` is unused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct AtomicArgs {
    pub compare_add: u64,
    pub swap: u64,
}

/// Operation of a send-queue work request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum WrOpcode {
    #[default]
    Send,
    SendImm,
    SendInv,
    Write,
    WriteImm,
    Read,
    CompareSwap,
    FetchAdd,
}

impl WrOpcode {
    /// READ and atomics: limited by max_rd_atomic, answered by responses instead of ACKs.
    pub fn is_read_or_atomic(self) -> bool {
        matches!(
            self,
            WrOpcode::Read | WrOpcode::CompareSwap | WrOpcode::FetchAdd
        )
    }

    pub fn is_atomic(self) -> bool {
        matches!(self, WrOpcode::CompareSwap | WrOpcode::FetchAdd)
    }

    /// Needs `SendWr::remote`.
    pub fn needs_remote(self) -> bool {
        !matches!(self, WrOpcode::Send | WrOpcode::SendImm | WrOpcode::SendInv)
    }
}

/// A send-queue work request. For atomics the SGL names the 8 bytes that receive the
/// original remote value (little-endian, as host memory holds a u64).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SendWr {
    pub wr_id: u64,
    pub opcode: WrOpcode,
    /// One element inline: posting a one-element WR allocates nothing.
    pub sgl: Sgl,
    /// Generate a completion on success (errors always complete).
    pub signaled: bool,
    /// Set the solicited-event bit on the last packet of a SEND.
    pub solicited: bool,
    /// Immediate data of SendImm / WriteImm.
    pub imm: Option<u32>,
    pub remote: Option<RemoteAddr>,
    pub atomic: Option<AtomicArgs>,
    /// R_Key the responder invalidates (SendInv).
    pub invalidate_rkey: Option<u32>,
}

impl SendWr {
    /// A signaled SEND of `sgl`.
    pub fn send(wr_id: u64, sgl: impl Into<Sgl>) -> SendWr {
        SendWr {
            wr_id,
            opcode: WrOpcode::Send,
            sgl: sgl.into(),
            signaled: true,
            ..SendWr::default()
        }
    }

    /// A signaled RDMA WRITE of `sgl` to `remote`.
    pub fn write(wr_id: u64, sgl: impl Into<Sgl>, remote: RemoteAddr) -> SendWr {
        SendWr {
            wr_id,
            opcode: WrOpcode::Write,
            sgl: sgl.into(),
            signaled: true,
            remote: Some(remote),
            ..SendWr::default()
        }
    }

    /// A signaled RDMA READ from `remote` into `sgl`.
    pub fn read(wr_id: u64, sgl: impl Into<Sgl>, remote: RemoteAddr) -> SendWr {
        SendWr {
            wr_id,
            opcode: WrOpcode::Read,
            sgl: sgl.into(),
            signaled: true,
            remote: Some(remote),
            ..SendWr::default()
        }
    }

    /// A signaled FETCH_AND_ADD of `add` on the 8 bytes at `remote`, the original value
    /// written to `result` (8 bytes).
    pub fn fetch_add(wr_id: u64, result: Sge, remote: RemoteAddr, add: u64) -> SendWr {
        SendWr {
            wr_id,
            opcode: WrOpcode::FetchAdd,
            sgl: [result].into(),
            signaled: true,
            remote: Some(remote),
            atomic: Some(AtomicArgs {
                compare_add: add,
                swap: 0,
            }),
            ..SendWr::default()
        }
    }

    /// Total bytes named by the SGL (u64: the sum of u32 lengths can exceed u32).
    pub fn sgl_len(&self) -> u64 {
        self.sgl.iter().map(|s| u64::from(s.len)).sum()
    }
}

/// A receive-queue work request.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct RecvWr {
    pub wr_id: u64,
    pub sgl: Vec<Sge>,
}

impl RecvWr {
    pub fn new(wr_id: u64, sgl: Vec<Sge>) -> RecvWr {
        RecvWr { wr_id, sgl }
    }

    /// Total bytes the RECV can take.
    pub fn sgl_len(&self) -> u64 {
        self.sgl.iter().map(|s| u64::from(s.len)).sum()
    }
}
