//! The verbs driver's data formats and memory layout.
//!
//! # Memory layout of a node (identity virtual = physical addresses)
//!
//! | region | base | per QP |
//! |---|---|---|
//! | source buffers (what this node sends / serves) | `SRC_BASE` | `stride` bytes |
//! | destination buffers (what peers write / reads land in) | `DST_BASE` | `stride` bytes |
//! | SQ rings | `SQ_BASE` | `sq_depth × 64` B |
//! | RQ rings | `RQ_BASE` | `rq_depth × 64` B |
//! | CQ rings (one send + one recv CQ per core) | `CQ_BASE` | — |
//!
//! One memory region covers `SRC_BASE..DST_BASE + qps × stride` (perftest registers one MR
//! over its buffers); untouched pages of the sparse memory cost nothing.
//!
//! # SQ WQE (64 B, little-endian)
//!
//! | offset | size | field |
//! |---|---|---|
//! | 0 | 1 | opcode: 0 SEND, 1 SEND_IMM, 2 SEND_INV, 3 WRITE, 4 WRITE_IMM, 5 READ, 6 CMP_SWAP, 7 FETCH_ADD |
//! | 1 | 1 | flags: bit 0 signaled, bit 1 solicited, bit 2 has immediate, bit 3 has invalidate |
//! | 2 | 2 | reserved |
//! | 4 | 4 | immediate data or rkey to invalidate |
//! | 8 | 8 | wr_id |
//! | 16 | 8 | local address (one SGE) |
//! | 24 | 4 | length |
//! | 28 | 4 | lkey |
//! | 32 | 8 | remote virtual address |
//! | 40 | 4 | rkey |
//! | 44 | 4 | reserved |
//! | 48 | 8 | compare (CMP_SWAP) or add (FETCH_ADD) operand |
//! | 56 | 8 | swap operand |
//!
//! # RQ WQE (64 B): wr_id at 0 (8 B), local address at 16 (8), length at 24 (4), lkey at 28 (4).
//!
//! # CQE (64 B, written by the NIC by DMA)
//!
//! | offset | size | field |
//! |---|---|---|
//! | 0 | 8 | wr_id |
//! | 8 | 4 | QPN |
//! | 12 | 4 | byte length |
//! | 16 | 4 | immediate data |
//! | 20 | 1 | status (index in [`WcStatus`] order: 0 = success) |
//! | 21 | 1 | opcode (index in [`WcOpcode`] order) |
//! | 22 | 1 | flags: bit 0 has immediate |
//! | 23 | 1 | owner: the ring's pass parity + 1 (1 on even passes, 2 on odd), 0 = never written |

use rnic_transport::{
    AtomicArgs, Completion, RemoteAddr, SendWr, Sge, Sgl, WcOpcode, WcStatus, WrOpcode,
};

/// Bytes of a WQE.
pub const WQE_BYTES: u64 = 64;
/// Bytes of a CQE.
pub const CQE_BYTES: u64 = 64;
/// Base of the per-QP source buffers.
pub const SRC_BASE: u64 = 0x0000_1000_0000_0000;
/// Base of the per-QP destination buffers (the MR runs from `SRC_BASE` to past these).
pub const DST_BASE: u64 = 0x0000_1800_0000_0000;
/// Base of the SQ rings.
pub const SQ_BASE: u64 = 0x0000_2000_0000_0000;
/// Base of the RQ rings.
pub const RQ_BASE: u64 = 0x0000_3000_0000_0000;
/// Base of the CQ rings.
pub const CQ_BASE: u64 = 0x0000_4000_0000_0000;
/// Spacing of CQ rings: 16 MiB, room for the largest ring (2^16 CQEs of 64 bytes, 4 MiB),
/// so the 2 × 4096 rings of a host with `host.cores` at its maximum end below
/// `CQ_DB_BASE` (2^20 rings fit).
pub const CQ_SPACING: u64 = 0x0000_0000_0100_0000;
/// Base of the CQ doorbell records (the consumer index of CQ k at `CQ_DB_BASE + 8 k`).
pub const CQ_DB_BASE: u64 = 0x0000_5000_0000_0000;

// Every CQ ring of the largest host ends before the doorbell records: `host.cores` is at
// most 4096, two CQs each, and a ring at most 2^16 CQEs.
const _: () = assert!((1 << 16) * CQE_BYTES <= CQ_SPACING);
const _: () = assert!(CQ_BASE + 2 * 4096 * CQ_SPACING <= CQ_DB_BASE);

fn wr_code(op: WrOpcode) -> u8 {
    match op {
        WrOpcode::Send => 0,
        WrOpcode::SendImm => 1,
        WrOpcode::SendInv => 2,
        WrOpcode::Write => 3,
        WrOpcode::WriteImm => 4,
        WrOpcode::Read => 5,
        WrOpcode::CompareSwap => 6,
        WrOpcode::FetchAdd => 7,
    }
}

fn wr_from_code(c: u8) -> Option<WrOpcode> {
    Some(match c {
        0 => WrOpcode::Send,
        1 => WrOpcode::SendImm,
        2 => WrOpcode::SendInv,
        3 => WrOpcode::Write,
        4 => WrOpcode::WriteImm,
        5 => WrOpcode::Read,
        6 => WrOpcode::CompareSwap,
        7 => WrOpcode::FetchAdd,
        _ => return None,
    })
}

fn u32_at(b: &[u8], o: usize) -> u32 {
    u32::from_le_bytes([b[o], b[o + 1], b[o + 2], b[o + 3]])
}

fn u64_at(b: &[u8], o: usize) -> u64 {
    let mut a = [0u8; 8];
    a.copy_from_slice(&b[o..o + 8]);
    u64::from_le_bytes(a)
}

/// A send WQE as the driver writes it (one SGE).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct SqWqe {
    /// Operation.
    pub opcode: WrOpcode,
    /// Generate a CQE.
    pub signaled: bool,
    /// Solicited event.
    pub solicited: bool,
    /// The payload is inline: the driver copied it into the WQE slot after the WQE's 64
    /// bytes, so the NIC reads no payload (SEND and WRITE).
    pub inline: bool,
    /// Immediate data.
    pub imm: Option<u32>,
    /// Rkey to invalidate.
    pub invalidate: Option<u32>,
    /// Work request id (returned in the CQE).
    pub wr_id: u64,
    /// Local buffer.
    pub sge: Sge,
    /// Remote buffer (WRITE, READ, atomics).
    pub remote: RemoteAddr,
    /// Compare or add operand.
    pub compare_add: u64,
    /// Swap operand.
    pub swap: u64,
}

impl SqWqe {
    /// Encodes the WQE into its 64 bytes.
    pub fn encode(&self) -> [u8; 64] {
        let mut b = [0u8; 64];
        b[0] = wr_code(self.opcode);
        b[1] = u8::from(self.signaled)
            | (u8::from(self.solicited) << 1)
            | (u8::from(self.imm.is_some()) << 2)
            | (u8::from(self.invalidate.is_some()) << 3)
            | (u8::from(self.inline) << 4);
        b[4..8].copy_from_slice(&self.imm.or(self.invalidate).unwrap_or(0).to_le_bytes());
        b[8..16].copy_from_slice(&self.wr_id.to_le_bytes());
        b[16..24].copy_from_slice(&self.sge.addr.to_le_bytes());
        b[24..28].copy_from_slice(&self.sge.len.to_le_bytes());
        b[28..32].copy_from_slice(&self.sge.lkey.to_le_bytes());
        b[32..40].copy_from_slice(&self.remote.va.to_le_bytes());
        b[40..44].copy_from_slice(&self.remote.rkey.to_le_bytes());
        b[48..56].copy_from_slice(&self.compare_add.to_le_bytes());
        b[56..64].copy_from_slice(&self.swap.to_le_bytes());
        b
    }

    /// Decodes 64 WQE bytes (as the NIC does after fetching them); `None` for an unknown
    /// opcode.
    pub fn decode(b: &[u8]) -> Option<SqWqe> {
        if b.len() < 64 {
            return None;
        }
        let opcode = wr_from_code(b[0])?;
        let extra = u32_at(b, 4);
        Some(SqWqe {
            opcode,
            signaled: b[1] & 1 != 0,
            solicited: b[1] & 2 != 0,
            inline: b[1] & 16 != 0,
            imm: (b[1] & 4 != 0).then_some(extra),
            invalidate: (b[1] & 8 != 0).then_some(extra),
            wr_id: u64_at(b, 8),
            sge: Sge {
                addr: u64_at(b, 16),
                len: u32_at(b, 24),
                lkey: u32_at(b, 28),
            },
            remote: RemoteAddr {
                va: u64_at(b, 32),
                rkey: u32_at(b, 40),
            },
            compare_add: u64_at(b, 48),
            swap: u64_at(b, 56),
        })
    }

    /// The transport work request this WQE describes.
    pub fn to_send_wr(&self) -> SendWr {
        let needs_remote = self.opcode.needs_remote();
        SendWr {
            wr_id: self.wr_id,
            opcode: self.opcode,
            sgl: if self.sge.len > 0 || self.opcode.is_atomic() {
                Sgl::one(self.sge)
            } else {
                Sgl::new()
            },
            signaled: self.signaled,
            solicited: self.solicited,
            imm: self.imm,
            remote: needs_remote.then_some(self.remote),
            atomic: self.opcode.is_atomic().then_some(AtomicArgs {
                compare_add: self.compare_add,
                swap: self.swap,
            }),
            invalidate_rkey: self.invalidate,
        }
    }

    /// Bytes the NIC must read from host memory to send this WQE (the payload of SEND and
    /// WRITE; READ and atomics carry none).
    pub fn payload_to_read(&self) -> u64 {
        if self.inline {
            return 0;
        }
        match self.opcode {
            WrOpcode::Send
            | WrOpcode::SendImm
            | WrOpcode::SendInv
            | WrOpcode::Write
            | WrOpcode::WriteImm => u64::from(self.sge.len),
            _ => 0,
        }
    }
}

/// Encodes a receive WQE.
pub fn encode_rq_wqe(wr_id: u64, sge: Sge) -> [u8; 64] {
    let mut b = [0u8; 64];
    b[0..8].copy_from_slice(&wr_id.to_le_bytes());
    b[16..24].copy_from_slice(&sge.addr.to_le_bytes());
    b[24..28].copy_from_slice(&sge.len.to_le_bytes());
    b[28..32].copy_from_slice(&sge.lkey.to_le_bytes());
    b
}

/// Decodes a receive WQE into (wr_id, SGE).
pub fn decode_rq_wqe(b: &[u8]) -> (u64, Sge) {
    (
        u64_at(b, 0),
        Sge {
            addr: u64_at(b, 16),
            len: u32_at(b, 24),
            lkey: u32_at(b, 28),
        },
    )
}

const WC_STATUS: [WcStatus; 12] = [
    WcStatus::Success,
    WcStatus::LocLenErr,
    WcStatus::LocQpOpErr,
    WcStatus::LocProtErr,
    WcStatus::WrFlushErr,
    WcStatus::BadRespErr,
    WcStatus::LocAccessErr,
    WcStatus::RemInvReqErr,
    WcStatus::RemAccessErr,
    WcStatus::RemOpErr,
    WcStatus::RetryExcErr,
    WcStatus::RnrRetryExcErr,
];

/// The verbs name of a CQE status code (`RETRY_EXC_ERR`, ...).
pub fn wc_status_name(code: u8) -> String {
    WC_STATUS
        .get(usize::from(code))
        .map_or_else(|| format!("status {code}"), |s| s.verbs_name().to_string())
}

/// A CQE as the application reads it back.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cqe {
    /// Work request id.
    pub wr_id: u64,
    /// QPN.
    pub qpn: u32,
    /// Bytes transferred.
    pub byte_len: u32,
    /// Immediate data.
    pub imm: Option<u32>,
    /// Status (index into the `WcStatus` order; 0 = success).
    pub status: u8,
    /// Whether this completes a receive.
    pub is_recv: bool,
}

/// Encodes a completion into CQE bytes with the ring pass `pass`.
pub fn encode_cqe(c: &Completion, pass: u64) -> [u8; 64] {
    let mut b = [0u8; 64];
    b[0..8].copy_from_slice(&c.wr_id.to_le_bytes());
    b[8..12].copy_from_slice(&c.qpn.to_le_bytes());
    b[12..16].copy_from_slice(&c.byte_len.to_le_bytes());
    b[16..20].copy_from_slice(&c.imm.unwrap_or(0).to_le_bytes());
    b[20] = WC_STATUS.iter().position(|s| *s == c.status).unwrap_or(255) as u8;
    b[21] = wc_opcode_code(c.opcode);
    b[22] = u8::from(c.imm.is_some());
    b[23] = 1 + (pass & 1) as u8;
    b
}

fn wc_opcode_code(op: WcOpcode) -> u8 {
    match op {
        WcOpcode::Send => 0,
        WcOpcode::RdmaWrite => 1,
        WcOpcode::RdmaRead => 2,
        WcOpcode::CompSwap => 3,
        WcOpcode::FetchAdd => 4,
        WcOpcode::Recv => 5,
        WcOpcode::RecvRdmaWithImm => 6,
        #[allow(unreachable_patterns)]
        _ => 7,
    }
}

/// Decodes the CQE at a ring slot if it was written in pass `pass`.
pub fn decode_cqe(b: &[u8], pass: u64) -> Option<Cqe> {
    if b.len() < 64 || b[23] != 1 + (pass & 1) as u8 {
        return None;
    }
    Some(Cqe {
        wr_id: u64_at(b, 0),
        qpn: u32_at(b, 8),
        byte_len: u32_at(b, 12),
        imm: (b[22] & 1 != 0).then(|| u32_at(b, 16)),
        status: b[20],
        is_recv: b[21] >= 5,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wqe_round_trips() {
        let w = SqWqe {
            opcode: WrOpcode::FetchAdd,
            signaled: true,
            solicited: false,
            inline: false,
            imm: None,
            invalidate: None,
            wr_id: 0x1234_5678_9abc,
            sge: Sge {
                addr: SRC_BASE + 64,
                len: 8,
                lkey: 7,
            },
            remote: RemoteAddr {
                va: DST_BASE,
                rkey: 9,
            },
            compare_add: 5,
            swap: 6,
        };
        assert_eq!(SqWqe::decode(&w.encode()), Some(w));
        let inline = SqWqe {
            opcode: WrOpcode::Write,
            inline: true,
            ..w
        };
        assert_eq!(SqWqe::decode(&inline.encode()), Some(inline));
        assert_eq!(inline.payload_to_read(), 0);
        assert!(SqWqe::decode(&[0xff; 64]).is_none());
    }
}
