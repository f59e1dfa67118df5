//! RDMA connection management (IBA Vol. 1 §12.6): the REQ, REP and RTU messages that connect
//! an RC QP pair and the DREQ and DREP that take it down, and the SIDR_REQ and SIDR_REP
//! (§12.11) that resolve a UD service to its QPN and Q_Key, each one 256-byte MAD (24-byte common MAD header, 232 bytes of CM data) sent
//! as a UD SEND to QP1 (over RoCEv2: BTH + DETH with the GSI Q_Key). They carry what a WAN
//! accelerator needs to answer for Remote: both QPNs and both starting PSNs.
//!
//! `Packet<T>` is a zero-copy view of the MAD (`field` gives the byte layout); [`CmRepr`]
//! parses and emits the fields rnic uses, with the others (alternate path, private data,
//! reserved bits) zero on emit and ignored on parse. [`cm_frame`] wraps a message in a whole
//! RoCEv2 frame.

use crate::error::{check_len, Result, WireError};
use crate::view::packet_view;

/// Byte layout of a CM MAD.
pub mod field {
    use core::ops::Range;
    // The common MAD header.
    pub const BASE_VERSION: usize = 0;
    pub const MGMT_CLASS: usize = 1;
    pub const CLASS_VERSION: usize = 2;
    pub const METHOD: usize = 3;
    pub const STATUS: Range<usize> = 4..6;
    pub const TRANSACTION_ID: Range<usize> = 8..16;
    pub const ATTRIBUTE_ID: Range<usize> = 16..18;
    pub const ATTRIBUTE_MODIFIER: Range<usize> = 20..24;
    /// Start of the CM message (232 bytes).
    pub const DATA: usize = 24;
    // REQ (offsets from the MAD's start).
    pub const REQ_LOCAL_COMM_ID: Range<usize> = 24..28;
    pub const REQ_SERVICE_ID: Range<usize> = 32..40;
    pub const REQ_LOCAL_CA_GUID: Range<usize> = 40..48;
    pub const REQ_LOCAL_QKEY: Range<usize> = 52..56;
    /// Local QPN (24 bits), then responder resources (8).
    pub const REQ_LOCAL_QPN_RESOURCES: Range<usize> = 56..60;
    /// Local EECN (24 bits), then initiator depth (8).
    pub const REQ_LOCAL_EECN_DEPTH: Range<usize> = 60..64;
    /// Remote EECN (24), remote CM response timeout (5), transport service type (2),
    /// end-to-end flow control (1).
    pub const REQ_REMOTE_EECN_FLAGS: Range<usize> = 64..68;
    /// Starting PSN (24), local CM response timeout (5), retry count (3).
    pub const REQ_PSN_TIMEOUT_RETRY: Range<usize> = 68..72;
    pub const REQ_PKEY: Range<usize> = 72..74;
    /// Path MTU (4), RDC exists (1), RNR retry count (3).
    pub const REQ_MTU_RNR: usize = 74;
    /// Max CM retries (4), SRQ (1), extended transport type (3).
    pub const REQ_MAX_CM_RETRIES: usize = 75;
    pub const REQ_PRIMARY_LOCAL_LID: Range<usize> = 76..78;
    pub const REQ_PRIMARY_REMOTE_LID: Range<usize> = 78..80;
    pub const REQ_PRIMARY_LOCAL_GID: Range<usize> = 80..96;
    pub const REQ_PRIMARY_REMOTE_GID: Range<usize> = 96..112;
    /// Flow label (20), reserved (6), packet rate (6).
    pub const REQ_PRIMARY_FLOW_RATE: Range<usize> = 112..116;
    pub const REQ_PRIMARY_TRAFFIC_CLASS: usize = 116;
    pub const REQ_PRIMARY_HOP_LIMIT: usize = 117;
    /// SL (4), subnet local (1), reserved (3).
    pub const REQ_PRIMARY_SL: usize = 118;
    /// Local ACK timeout (5), reserved (3).
    pub const REQ_PRIMARY_ACK_TIMEOUT: usize = 119;
    /// The REQ's private data (92 bytes), for the applications' own use.
    pub const REQ_PRIVATE_DATA: Range<usize> = 164..256;
    // REP.
    pub const REP_LOCAL_COMM_ID: Range<usize> = 24..28;
    pub const REP_REMOTE_COMM_ID: Range<usize> = 28..32;
    pub const REP_LOCAL_QKEY: Range<usize> = 32..36;
    /// Local QPN (24), reserved (8).
    pub const REP_LOCAL_QPN: Range<usize> = 36..40;
    /// Starting PSN (24), reserved (8).
    pub const REP_STARTING_PSN: Range<usize> = 44..48;
    pub const REP_RESPONDER_RESOURCES: usize = 48;
    pub const REP_INITIATOR_DEPTH: usize = 49;
    /// Target ACK delay (5), failover accepted (2), end-to-end flow control (1).
    pub const REP_ACK_DELAY_FLAGS: usize = 50;
    /// RNR retry count (3), SRQ (1), reserved (4).
    pub const REP_RNR_SRQ: usize = 51;
    pub const REP_LOCAL_CA_GUID: Range<usize> = 52..60;
    // REJ.
    pub const REJ_REASON: Range<usize> = 34..36;
    // RTU.
    pub const RTU_LOCAL_COMM_ID: Range<usize> = 24..28;
    pub const RTU_REMOTE_COMM_ID: Range<usize> = 28..32;
    // DREQ.
    pub const DREQ_LOCAL_COMM_ID: Range<usize> = 24..28;
    pub const DREQ_REMOTE_COMM_ID: Range<usize> = 28..32;
    /// The receiver's QPN (24 bits), reserved (8).
    pub const DREQ_REMOTE_QPN: Range<usize> = 32..36;
    // DREP.
    pub const DREP_LOCAL_COMM_ID: Range<usize> = 24..28;
    pub const DREP_REMOTE_COMM_ID: Range<usize> = 28..32;
    // SIDR_REQ (IBA Vol. 1 §12.11: a UD service id resolved to a QPN and Q_Key).
    pub const SIDR_REQ_REQUEST_ID: Range<usize> = 24..28;
    pub const SIDR_REQ_PKEY: Range<usize> = 28..30;
    pub const SIDR_REQ_SERVICE_ID: Range<usize> = 32..40;
    /// The SIDR_REQ's private data (216 bytes; rdma_cm: its address header first).
    pub const SIDR_REQ_PRIVATE_DATA: Range<usize> = 40..256;
    // SIDR_REP.
    pub const SIDR_REP_REQUEST_ID: Range<usize> = 24..28;
    pub const SIDR_REP_STATUS: usize = 28;
    pub const SIDR_REP_ADDITIONAL_INFO_LEN: usize = 29;
    /// QPN (24 bits), reserved (8).
    pub const SIDR_REP_QPN: Range<usize> = 32..36;
    pub const SIDR_REP_SERVICE_ID: Range<usize> = 36..44;
    pub const SIDR_REP_QKEY: Range<usize> = 44..48;
    pub const SIDR_REP_ADDITIONAL_INFO: Range<usize> = 48..120;
    /// The SIDR_REP's private data (136 bytes).
    pub const SIDR_REP_PRIVATE_DATA: Range<usize> = 120..256;
}

/// Length of a MAD, bytes.
pub const HEADER_LEN: usize = 256;
/// The CM management class.
pub const MGMT_CLASS_CM: u8 = 0x07;
/// The CM class version.
pub const CM_CLASS_VERSION: u8 = 2;
/// The method of CM messages (ComMgtSend).
pub const METHOD_SEND: u8 = 0x03;
/// Attribute ids.
pub const ATTR_REQ: u16 = 0x0010;
pub const ATTR_REP: u16 = 0x0013;
pub const ATTR_RTU: u16 = 0x0014;
pub const ATTR_DREQ: u16 = 0x0015;
pub const ATTR_DREP: u16 = 0x0016;
/// Service ID resolution (UD): the request and its reply.
pub const ATTR_SIDR_REQ: u16 = 0x0017;
pub const ATTR_SIDR_REP: u16 = 0x0018;
/// A reject: the peer refuses the connection (rnic never sends one; it reads its reason).
pub const ATTR_REJ: u16 = 0x0012;
/// The Q_Key of the general services interface (QP1).
pub const GSI_QKEY: u32 = 0x8001_0000;
/// The QP CM MADs are sent to and from.
pub const GSI_QPN: u32 = 1;

packet_view! {
    /// Zero-copy view of a CM MAD.
    "cm mad"
}

impl<T: AsRef<[u8]>> Packet<T> {
    /// The MAD's attribute id (which CM message).
    #[inline]
    pub fn attribute_id(&self) -> u16 {
        self.get(field::ATTRIBUTE_ID) as u16
    }

    /// The transaction id.
    #[inline]
    pub fn transaction_id(&self) -> u64 {
        self.get(field::TRANSACTION_ID)
    }

    /// Management class, class version and method.
    #[inline]
    pub fn class(&self) -> (u8, u8, u8) {
        let b = self.b();
        (
            b[field::MGMT_CLASS],
            b[field::CLASS_VERSION],
            b[field::METHOD],
        )
    }
}

/// The reason code of a CM REJ MAD (IBA Vol. 1 Table 112: 28 = consumer reject, 8 = invalid
/// service id, ...), or `None` when `mad` is not a whole CM REJ.
pub fn rej_reason(mad: &[u8]) -> Option<u16> {
    let p = Packet::new_checked(mad).ok()?;
    let is_rej =
        p.class() == (MGMT_CLASS_CM, CM_CLASS_VERSION, METHOD_SEND) && p.attribute_id() == ATTR_REJ;
    is_rej.then(|| rd(p.b(), field::REJ_REASON) as u16)
}

/// An IPv4 address as the IPv4-mapped GID RoCEv2 uses (::ffff:a.b.c.d).
pub fn ipv4_gid(ip: [u8; 4]) -> [u8; 16] {
    let mut g = [0u8; 16];
    g[10] = 0xFF;
    g[11] = 0xFF;
    g[12..].copy_from_slice(&ip);
    g
}

/// A connection request: the active side's QP and its starting PSN.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct CmReq {
    pub local_comm_id: u32,
    pub service_id: u64,
    pub local_ca_guid: u64,
    pub local_qkey: u32,
    pub local_qpn: u32,
    pub responder_resources: u8,
    pub initiator_depth: u8,
    /// 4.096 µs × 2^n.
    pub remote_cm_response_timeout: u8,
    pub starting_psn: u32,
    pub local_cm_response_timeout: u8,
    pub retry_count: u8,
    pub pkey: u16,
    /// IB MTU code (5 = 4096 B).
    pub path_mtu: u8,
    pub rnr_retry_count: u8,
    pub max_cm_retries: u8,
    /// The primary path: the two ports' GIDs (IPv4-mapped on RoCEv2), hop limit, traffic
    /// class, local ACK timeout.
    pub local_gid: [u8; 16],
    pub remote_gid: [u8; 16],
    pub hop_limit: u8,
    pub traffic_class: u8,
    pub local_ack_timeout: u8,
    /// The 92-byte private data, which the applications on the two sides agree on (rnic's
    /// simulator: the connection's number between the two hosts, so the passive side binds
    /// the QP it prepared for it; rdma_cm: its address header, [`crate::cma`], then the
    /// application's own bytes).
    pub private_data: [u8; REQ_PRIVATE_DATA_LEN],
}

/// Bytes of the REQ's private data.
pub const REQ_PRIVATE_DATA_LEN: usize = 92;

impl Default for CmReq {
    fn default() -> Self {
        CmReq {
            local_comm_id: 0,
            service_id: 0,
            local_ca_guid: 0,
            local_qkey: 0,
            local_qpn: 0,
            responder_resources: 0,
            initiator_depth: 0,
            remote_cm_response_timeout: 0,
            starting_psn: 0,
            local_cm_response_timeout: 0,
            retry_count: 0,
            pkey: 0,
            path_mtu: 0,
            rnr_retry_count: 0,
            max_cm_retries: 0,
            local_gid: [0; 16],
            remote_gid: [0; 16],
            hop_limit: 0,
            traffic_class: 0,
            local_ack_timeout: 0,
            private_data: [0; REQ_PRIVATE_DATA_LEN],
        }
    }
}

/// A connection reply: the passive side's QP and its starting PSN.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct CmRep {
    pub local_comm_id: u32,
    pub remote_comm_id: u32,
    pub local_qkey: u32,
    pub local_qpn: u32,
    pub starting_psn: u32,
    pub responder_resources: u8,
    pub initiator_depth: u8,
    pub target_ack_delay: u8,
    pub rnr_retry_count: u8,
    pub local_ca_guid: u64,
}

/// Ready to use: the active side has moved its QP to RTS.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct CmRtu {
    pub local_comm_id: u32,
    pub remote_comm_id: u32,
}

/// A disconnection request: the sender tears its end of the connection down.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct CmDreq {
    pub local_comm_id: u32,
    pub remote_comm_id: u32,
    /// The receiver's QP (24 bits).
    pub remote_qpn: u32,
}

/// The answer to a DREQ: the receiver has left the connection too.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct CmDrep {
    pub local_comm_id: u32,
    pub remote_comm_id: u32,
}

/// Bytes of the SIDR_REQ's private data.
pub const SIDR_REQ_PRIVATE_DATA_LEN: usize = 216;

/// A service ID resolution request: which UD QP (and Q_Key) serves `service_id` on the
/// receiver's host. rdma_cm sends one for `RDMA_PS_UDP` ids, its address header first in the
/// private data, where the REQ of an RC connection carries it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct CmSidrReq {
    pub request_id: u32,
    pub pkey: u16,
    pub service_id: u64,
    pub private_data: [u8; SIDR_REQ_PRIVATE_DATA_LEN],
}

impl Default for CmSidrReq {
    fn default() -> Self {
        CmSidrReq {
            request_id: 0,
            pkey: 0,
            service_id: 0,
            private_data: [0; SIDR_REQ_PRIVATE_DATA_LEN],
        }
    }
}

/// The status of a SIDR_REP (IBA Vol. 1 §12.11.2): 0 = the service is there, and the QPN and
/// Q_Key answer the request; otherwise why not (1 = no such service id, 2 = the service
/// rejected it, 3 = no QP, 4 = redirect, 5 = unsupported class version).
pub const SIDR_STATUS_SUCCESS: u8 = 0;
pub const SIDR_STATUS_UNSUPPORTED_ID: u8 = 1;
pub const SIDR_STATUS_REJECT: u8 = 2;

/// A service ID resolution reply: the serving UD QP and the Q_Key its senders use.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct CmSidrRep {
    /// The request's id, echoed.
    pub request_id: u32,
    pub status: u8,
    /// The serving QP (24 bits).
    pub qpn: u32,
    pub service_id: u64,
    pub qkey: u32,
}

/// One CM message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CmMessage {
    Req(CmReq),
    Rep(CmRep),
    Rtu(CmRtu),
    Dreq(CmDreq),
    Drep(CmDrep),
    SidrReq(CmSidrReq),
    SidrRep(CmSidrRep),
}

/// A CM MAD: the transaction id (the same for the three messages of one connection) and the
/// message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct CmRepr {
    pub transaction_id: u64,
    pub message: CmMessage,
}

fn rd(b: &[u8], r: core::ops::Range<usize>) -> u64 {
    crate::be::read(&b[r])
}

fn wr(b: &mut [u8], r: core::ops::Range<usize>, v: u64) {
    crate::be::write(&mut b[r], v)
}

impl CmRepr {
    /// Parses a CM MAD: the class must be CM version 2 with the Send method, and the
    /// attribute a REQ, REP, RTU, DREQ, DREP, SIDR_REQ or SIDR_REP.
    pub fn parse<T: AsRef<[u8]> + ?Sized>(packet: &Packet<&T>) -> Result<CmRepr> {
        let b = packet.b();
        check_len("cm mad", HEADER_LEN, b.len())?;
        let bad = |field: &'static str, value: u64| WireError::BadField {
            layer: "cm mad",
            field,
            value,
        };
        let (class, version, method) = packet.class();
        if class != MGMT_CLASS_CM {
            return Err(bad("management class", class.into()));
        }
        if version != CM_CLASS_VERSION {
            return Err(bad("class version", version.into()));
        }
        if method != METHOD_SEND {
            return Err(bad("method", method.into()));
        }
        let message = match packet.attribute_id() {
            ATTR_REQ => CmMessage::Req(parse_req(b)?),
            ATTR_REP => CmMessage::Rep(CmRep {
                local_comm_id: rd(b, field::REP_LOCAL_COMM_ID) as u32,
                remote_comm_id: rd(b, field::REP_REMOTE_COMM_ID) as u32,
                local_qkey: rd(b, field::REP_LOCAL_QKEY) as u32,
                local_qpn: (rd(b, field::REP_LOCAL_QPN) >> 8) as u32,
                starting_psn: (rd(b, field::REP_STARTING_PSN) >> 8) as u32,
                responder_resources: b[field::REP_RESPONDER_RESOURCES],
                initiator_depth: b[field::REP_INITIATOR_DEPTH],
                target_ack_delay: b[field::REP_ACK_DELAY_FLAGS] >> 3,
                rnr_retry_count: b[field::REP_RNR_SRQ] >> 5,
                local_ca_guid: rd(b, field::REP_LOCAL_CA_GUID),
            }),
            ATTR_RTU => CmMessage::Rtu(CmRtu {
                local_comm_id: rd(b, field::RTU_LOCAL_COMM_ID) as u32,
                remote_comm_id: rd(b, field::RTU_REMOTE_COMM_ID) as u32,
            }),
            ATTR_DREQ => CmMessage::Dreq(CmDreq {
                local_comm_id: rd(b, field::DREQ_LOCAL_COMM_ID) as u32,
                remote_comm_id: rd(b, field::DREQ_REMOTE_COMM_ID) as u32,
                remote_qpn: (rd(b, field::DREQ_REMOTE_QPN) >> 8) as u32,
            }),
            ATTR_DREP => CmMessage::Drep(CmDrep {
                local_comm_id: rd(b, field::DREP_LOCAL_COMM_ID) as u32,
                remote_comm_id: rd(b, field::DREP_REMOTE_COMM_ID) as u32,
            }),
            ATTR_SIDR_REQ => CmMessage::SidrReq(parse_sidr_req(b)),
            ATTR_SIDR_REP => CmMessage::SidrRep(parse_sidr_rep(b)?),
            other => {
                return Err(bad(
                    "attribute id (REQ, REP, RTU, DREQ, DREP, SIDR_REQ or SIDR_REP)",
                    other.into(),
                ))
            }
        };
        Ok(CmRepr {
            transaction_id: packet.transaction_id(),
            message,
        })
    }

    /// Writes the MAD (256 bytes) into `buf`, which must hold at least that many; fields
    /// rnic does not use are zero.
    pub fn emit(&self, buf: &mut [u8]) {
        let b = &mut buf[..HEADER_LEN];
        b.fill(0);
        b[field::BASE_VERSION] = 1;
        b[field::MGMT_CLASS] = MGMT_CLASS_CM;
        b[field::CLASS_VERSION] = CM_CLASS_VERSION;
        b[field::METHOD] = METHOD_SEND;
        wr(b, field::STATUS, 0);
        wr(b, field::TRANSACTION_ID, self.transaction_id);
        wr(b, field::ATTRIBUTE_MODIFIER, 0);
        let attr = match self.message {
            CmMessage::Req(r) => {
                wr(b, field::REQ_LOCAL_COMM_ID, r.local_comm_id.into());
                wr(b, field::REQ_SERVICE_ID, r.service_id);
                wr(b, field::REQ_LOCAL_CA_GUID, r.local_ca_guid);
                wr(b, field::REQ_LOCAL_QKEY, r.local_qkey.into());
                let qpn = u64::from(r.local_qpn & 0x00FF_FFFF);
                wr(
                    b,
                    field::REQ_LOCAL_QPN_RESOURCES,
                    qpn << 8 | u64::from(r.responder_resources),
                );
                wr(b, field::REQ_LOCAL_EECN_DEPTH, r.initiator_depth.into());
                // Remote EECN 0, transport service type RC (0), no end-to-end flow control.
                let t = u64::from(r.remote_cm_response_timeout & 0x1F);
                wr(b, field::REQ_REMOTE_EECN_FLAGS, t << 3);
                let psn = u64::from(r.starting_psn & 0x00FF_FFFF) << 8
                    | u64::from(r.local_cm_response_timeout & 0x1F) << 3
                    | u64::from(r.retry_count & 0x7);
                wr(b, field::REQ_PSN_TIMEOUT_RETRY, psn);
                wr(b, field::REQ_PKEY, r.pkey.into());
                b[field::REQ_MTU_RNR] = (r.path_mtu & 0xF) << 4 | (r.rnr_retry_count & 0x7);
                b[field::REQ_MAX_CM_RETRIES] = (r.max_cm_retries & 0xF) << 4;
                // RoCEv2 has no LIDs: the permissive LID, as rdma_cm sends.
                wr(b, field::REQ_PRIMARY_LOCAL_LID, 0xFFFF);
                wr(b, field::REQ_PRIMARY_REMOTE_LID, 0xFFFF);
                b[field::REQ_PRIMARY_LOCAL_GID].copy_from_slice(&r.local_gid);
                b[field::REQ_PRIMARY_REMOTE_GID].copy_from_slice(&r.remote_gid);
                b[field::REQ_PRIMARY_TRAFFIC_CLASS] = r.traffic_class;
                b[field::REQ_PRIMARY_HOP_LIMIT] = r.hop_limit;
                b[field::REQ_PRIMARY_ACK_TIMEOUT] = (r.local_ack_timeout & 0x1F) << 3;
                b[field::REQ_PRIVATE_DATA].copy_from_slice(&r.private_data);
                ATTR_REQ
            }
            CmMessage::Rep(r) => {
                wr(b, field::REP_LOCAL_COMM_ID, r.local_comm_id.into());
                wr(b, field::REP_REMOTE_COMM_ID, r.remote_comm_id.into());
                wr(b, field::REP_LOCAL_QKEY, r.local_qkey.into());
                wr(
                    b,
                    field::REP_LOCAL_QPN,
                    u64::from(r.local_qpn & 0x00FF_FFFF) << 8,
                );
                wr(
                    b,
                    field::REP_STARTING_PSN,
                    u64::from(r.starting_psn & 0x00FF_FFFF) << 8,
                );
                b[field::REP_RESPONDER_RESOURCES] = r.responder_resources;
                b[field::REP_INITIATOR_DEPTH] = r.initiator_depth;
                b[field::REP_ACK_DELAY_FLAGS] = (r.target_ack_delay & 0x1F) << 3;
                b[field::REP_RNR_SRQ] = (r.rnr_retry_count & 0x7) << 5;
                wr(b, field::REP_LOCAL_CA_GUID, r.local_ca_guid);
                ATTR_REP
            }
            CmMessage::Rtu(r) => {
                wr(b, field::RTU_LOCAL_COMM_ID, r.local_comm_id.into());
                wr(b, field::RTU_REMOTE_COMM_ID, r.remote_comm_id.into());
                ATTR_RTU
            }
            CmMessage::Dreq(r) => {
                wr(b, field::DREQ_LOCAL_COMM_ID, r.local_comm_id.into());
                wr(b, field::DREQ_REMOTE_COMM_ID, r.remote_comm_id.into());
                let qpn = u64::from(r.remote_qpn & 0x00FF_FFFF);
                wr(b, field::DREQ_REMOTE_QPN, qpn << 8);
                ATTR_DREQ
            }
            CmMessage::Drep(r) => {
                wr(b, field::DREP_LOCAL_COMM_ID, r.local_comm_id.into());
                wr(b, field::DREP_REMOTE_COMM_ID, r.remote_comm_id.into());
                ATTR_DREP
            }
            CmMessage::SidrReq(r) => {
                wr(b, field::SIDR_REQ_REQUEST_ID, r.request_id.into());
                wr(b, field::SIDR_REQ_PKEY, r.pkey.into());
                wr(b, field::SIDR_REQ_SERVICE_ID, r.service_id);
                b[field::SIDR_REQ_PRIVATE_DATA].copy_from_slice(&r.private_data);
                ATTR_SIDR_REQ
            }
            CmMessage::SidrRep(r) => {
                wr(b, field::SIDR_REP_REQUEST_ID, r.request_id.into());
                b[field::SIDR_REP_STATUS] = r.status;
                let qpn = u64::from(r.qpn & 0x00FF_FFFF);
                wr(b, field::SIDR_REP_QPN, qpn << 8);
                wr(b, field::SIDR_REP_SERVICE_ID, r.service_id);
                wr(b, field::SIDR_REP_QKEY, r.qkey.into());
                ATTR_SIDR_REP
            }
        };
        wr(b, field::ATTRIBUTE_ID, attr.into());
    }
}

/// The fields of a REQ MAD `b` (whole, 256 bytes); only RC is accepted.
fn parse_req(b: &[u8]) -> Result<CmReq> {
    let qpn_res = rd(b, field::REQ_LOCAL_QPN_RESOURCES);
    let flags = rd(b, field::REQ_REMOTE_EECN_FLAGS);
    let psn = rd(b, field::REQ_PSN_TIMEOUT_RETRY);
    if (flags >> 1) & 0x3 != 0 {
        return Err(WireError::BadField {
            layer: "cm mad",
            field: "transport service type (RC = 0)",
            value: (flags >> 1) & 0x3,
        });
    }
    let mut r = CmReq {
        local_comm_id: rd(b, field::REQ_LOCAL_COMM_ID) as u32,
        service_id: rd(b, field::REQ_SERVICE_ID),
        local_ca_guid: rd(b, field::REQ_LOCAL_CA_GUID),
        local_qkey: rd(b, field::REQ_LOCAL_QKEY) as u32,
        local_qpn: (qpn_res >> 8) as u32,
        responder_resources: qpn_res as u8,
        initiator_depth: rd(b, field::REQ_LOCAL_EECN_DEPTH) as u8,
        remote_cm_response_timeout: ((flags >> 3) & 0x1F) as u8,
        starting_psn: (psn >> 8) as u32,
        local_cm_response_timeout: ((psn >> 3) & 0x1F) as u8,
        retry_count: (psn & 0x7) as u8,
        pkey: rd(b, field::REQ_PKEY) as u16,
        path_mtu: b[field::REQ_MTU_RNR] >> 4,
        rnr_retry_count: b[field::REQ_MTU_RNR] & 0x7,
        max_cm_retries: b[field::REQ_MAX_CM_RETRIES] >> 4,
        hop_limit: b[field::REQ_PRIMARY_HOP_LIMIT],
        traffic_class: b[field::REQ_PRIMARY_TRAFFIC_CLASS],
        local_ack_timeout: b[field::REQ_PRIMARY_ACK_TIMEOUT] >> 3,
        ..CmReq::default()
    };
    r.local_gid
        .copy_from_slice(&b[field::REQ_PRIMARY_LOCAL_GID]);
    r.remote_gid
        .copy_from_slice(&b[field::REQ_PRIMARY_REMOTE_GID]);
    r.private_data.copy_from_slice(&b[field::REQ_PRIVATE_DATA]);
    Ok(r)
}

/// The fields of a SIDR_REQ MAD `b` (whole, 256 bytes).
fn parse_sidr_req(b: &[u8]) -> CmSidrReq {
    let mut r = CmSidrReq {
        request_id: rd(b, field::SIDR_REQ_REQUEST_ID) as u32,
        pkey: rd(b, field::SIDR_REQ_PKEY) as u16,
        service_id: rd(b, field::SIDR_REQ_SERVICE_ID),
        ..CmSidrReq::default()
    };
    r.private_data
        .copy_from_slice(&b[field::SIDR_REQ_PRIVATE_DATA]);
    r
}

/// The fields of a SIDR_REP MAD `b` (whole, 256 bytes); the additional information (a
/// redirect's class port info) may not exceed its 72 bytes.
fn parse_sidr_rep(b: &[u8]) -> Result<CmSidrRep> {
    let info = b[field::SIDR_REP_ADDITIONAL_INFO_LEN];
    if usize::from(info) > field::SIDR_REP_ADDITIONAL_INFO.len() {
        return Err(WireError::BadField {
            layer: "cm mad",
            field: "SIDR_REP additional information length (at most 72)",
            value: info.into(),
        });
    }
    Ok(CmSidrRep {
        request_id: rd(b, field::SIDR_REP_REQUEST_ID) as u32,
        status: b[field::SIDR_REP_STATUS],
        qpn: (rd(b, field::SIDR_REP_QPN) >> 8) as u32,
        service_id: rd(b, field::SIDR_REP_SERVICE_ID),
        qkey: rd(b, field::SIDR_REP_QKEY) as u32,
    })
}

/// A whole RoCEv2 frame carrying `cm` from QP1 to QP1 (UD SEND only, GSI Q_Key) with
/// addressing `addr`, PSN `psn` and IPv4 identification `ip_ident`.
pub fn cm_frame(addr: crate::FrameAddr, ip_ident: u16, psn: u32, cm: &CmRepr, buf: &mut Vec<u8>) {
    let mut mad = [0u8; HEADER_LEN];
    cm.emit(&mut mad);
    let bth = crate::BthRepr {
        opcode: crate::Opcode::UdSendOnly,
        solicited: false,
        mig_req: false,
        pad_count: 0,
        tver: 0,
        pkey: 0xFFFF,
        fecn: false,
        becn: false,
        dest_qp: GSI_QPN,
        ack_req: false,
        psn,
    };
    let mut roce = crate::RoceRepr::new(bth, &mad);
    roce.deth = Some(crate::DethRepr {
        qkey: GSI_QKEY,
        src_qp: GSI_QPN,
    });
    crate::FrameRepr {
        addr,
        ip_ident,
        roce,
    }
    .emit(buf);
}

/// The CM MAD of a RoCEv2 frame (parsed and checked, ICRC included) sent to QP1.
pub fn parse_cm_frame(frame: &[u8]) -> Result<CmRepr> {
    parse_cm_frame_from(frame).map(|(_, m)| m)
}

/// The IPv4 source address and the CM MAD of a RoCEv2 frame sent to QP1 (parsed and
/// checked, ICRC included).
pub fn parse_cm_frame_from(frame: &[u8]) -> Result<([u8; 4], CmRepr)> {
    let f = crate::FrameRepr::parse(frame)?;
    let src = f.addr.src_ip;
    if f.roce.bth.dest_qp != GSI_QPN || f.roce.bth.opcode != crate::Opcode::UdSendOnly {
        return Err(WireError::BadField {
            layer: "cm mad",
            field: "destination QP (CM MADs go to QP1 as UD SEND only)",
            value: f.roce.bth.dest_qp.into(),
        });
    }
    Ok((src, CmRepr::parse(&Packet::new_checked(f.roce.payload)?)?))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn req() -> CmRepr {
        CmRepr {
            transaction_id: 0x0000_0001_2345_6789,
            message: CmMessage::Req(CmReq {
                local_comm_id: 0x1111_2222,
                service_id: 0x0000_0000_0106_4791,
                local_ca_guid: 0x0200_00ff_fe00_0001,
                local_qkey: 0,
                local_qpn: 0x00_0123,
                responder_resources: 16,
                initiator_depth: 16,
                remote_cm_response_timeout: 20,
                starting_psn: 0xAB_CDEF,
                local_cm_response_timeout: 20,
                retry_count: 7,
                pkey: 0xFFFF,
                path_mtu: 5,
                rnr_retry_count: 7,
                max_cm_retries: 15,
                local_gid: ipv4_gid([10, 0, 0, 1]),
                remote_gid: ipv4_gid([10, 0, 0, 2]),
                hop_limit: 64,
                traffic_class: 0,
                local_ack_timeout: 14,
                private_data: [0x5a; REQ_PRIVATE_DATA_LEN],
            }),
        }
    }

    #[test]
    fn req_fields_sit_where_the_spec_puts_them() {
        let mut b = [0u8; HEADER_LEN];
        req().emit(&mut b);
        assert_eq!(&b[0..4], &[1, 0x07, 2, 0x03]);
        assert_eq!(&b[16..18], &[0x00, 0x10]);
        assert_eq!(&b[24..28], &[0x11, 0x11, 0x22, 0x22]);
        // Local QPN then responder resources.
        assert_eq!(&b[56..60], &[0x00, 0x01, 0x23, 16]);
        // Starting PSN, then CM response timeout 20 (5 bits) and retry count 7 (3 bits).
        assert_eq!(&b[68..72], &[0xAB, 0xCD, 0xEF, 20 << 3 | 7]);
        assert_eq!(b[74], 0x57);
        assert_eq!(&b[92..96], &[10, 0, 0, 1]);
        assert_eq!(&b[108..112], &[10, 0, 0, 2]);
    }

    #[test]
    fn req_rep_rtu_round_trip() {
        let rep = CmRepr {
            transaction_id: 7,
            message: CmMessage::Rep(CmRep {
                local_comm_id: 5,
                remote_comm_id: 0x1111_2222,
                local_qkey: 0,
                local_qpn: 0x45_6789,
                starting_psn: 0x12_3456,
                responder_resources: 16,
                initiator_depth: 16,
                target_ack_delay: 15,
                rnr_retry_count: 7,
                local_ca_guid: 0x0200_00ff_fe00_0002,
            }),
        };
        let rtu = CmRepr {
            transaction_id: 7,
            message: CmMessage::Rtu(CmRtu {
                local_comm_id: 0x1111_2222,
                remote_comm_id: 5,
            }),
        };
        let dreq = CmRepr {
            transaction_id: 8,
            message: CmMessage::Dreq(CmDreq {
                local_comm_id: 0x1111_2222,
                remote_comm_id: 5,
                remote_qpn: 0x45_6789,
            }),
        };
        let drep = CmRepr {
            transaction_id: 8,
            message: CmMessage::Drep(CmDrep {
                local_comm_id: 5,
                remote_comm_id: 0x1111_2222,
            }),
        };
        for m in [req(), rep, rtu, dreq, drep] {
            let mut b = [0u8; HEADER_LEN];
            m.emit(&mut b);
            assert_eq!(CmRepr::parse(&Packet::new_checked(&b[..]).unwrap()), Ok(m));
        }
    }

    #[test]
    fn req_private_data_fills_the_mads_last_92_bytes() {
        let mut r = req();
        let CmMessage::Req(ref mut q) = r.message else {
            unreachable!()
        };
        for (i, b) in q.private_data.iter_mut().enumerate() {
            *b = i as u8 + 1;
        }
        let mut b = [0u8; HEADER_LEN];
        r.emit(&mut b);
        assert_eq!(b[164], 1);
        assert_eq!(b[255], 92);
        assert_eq!(CmRepr::parse(&Packet::new_checked(&b[..]).unwrap()), Ok(r));
    }

    #[test]
    fn dreq_and_drep_fields_sit_where_the_spec_puts_them() {
        let dreq = CmRepr {
            transaction_id: 3,
            message: CmMessage::Dreq(CmDreq {
                local_comm_id: 0x0102_0304,
                remote_comm_id: 0x0506_0708,
                remote_qpn: 0x11,
            }),
        };
        let mut b = [0u8; HEADER_LEN];
        dreq.emit(&mut b);
        assert_eq!(&b[16..18], &[0x00, 0x15]);
        assert_eq!(&b[24..36], &[1, 2, 3, 4, 5, 6, 7, 8, 0, 0, 0x11, 0]);
        let drep = CmRepr {
            transaction_id: 3,
            message: CmMessage::Drep(CmDrep {
                local_comm_id: 0x0506_0708,
                remote_comm_id: 0x0102_0304,
            }),
        };
        drep.emit(&mut b);
        assert_eq!(&b[16..18], &[0x00, 0x16]);
        assert_eq!(&b[24..32], &[5, 6, 7, 8, 1, 2, 3, 4]);
    }

    #[test]
    fn bad_mads_are_errors_naming_the_field() {
        let mut b = [0u8; HEADER_LEN];
        req().emit(&mut b);
        let mut other_class = b;
        other_class[1] = 0x04;
        let e = CmRepr::parse(&Packet::new_checked(&other_class[..]).unwrap()).unwrap_err();
        assert!(e.to_string().contains("management class"), "{e}");
        let mut other_attr = b;
        other_attr[17] = 0x12;
        let e = CmRepr::parse(&Packet::new_checked(&other_attr[..]).unwrap()).unwrap_err();
        assert!(e.to_string().contains("attribute id"), "{e}");
        assert!(Packet::new_checked(&b[..100]).is_err());
    }

    #[test]
    fn a_rej_is_recognised_with_its_reason() {
        let mut b = [0u8; HEADER_LEN];
        req().emit(&mut b);
        assert_eq!(rej_reason(&b), None, "a REQ is no REJ");
        b[16..18].copy_from_slice(&ATTR_REJ.to_be_bytes());
        b[34..36].copy_from_slice(&28u16.to_be_bytes());
        assert_eq!(rej_reason(&b), Some(28));
        assert_eq!(rej_reason(&b[..40]), None, "truncated");
    }

    fn sidr() -> (CmRepr, CmRepr) {
        let mut private_data = [0u8; SIDR_REQ_PRIVATE_DATA_LEN];
        for (i, b) in private_data.iter_mut().enumerate() {
            *b = i as u8 ^ 0xA5;
        }
        let req = CmRepr {
            transaction_id: 0x0000_0002_0000_0009,
            message: CmMessage::SidrReq(CmSidrReq {
                request_id: 0x0A0B_0C0D,
                pkey: 0xFFFF,
                service_id: 0x0000_0000_0111_4B3F,
                private_data,
            }),
        };
        let rep = CmRepr {
            transaction_id: 0x0000_0002_0000_0009,
            message: CmMessage::SidrRep(CmSidrRep {
                request_id: 0x0A0B_0C0D,
                status: SIDR_STATUS_SUCCESS,
                qpn: 0x12_3456,
                service_id: 0x0000_0000_0111_4B3F,
                qkey: 0x0123_4567,
            }),
        };
        (req, rep)
    }

    #[test]
    fn sidr_req_and_rep_round_trip() {
        let (req, rep) = sidr();
        let mut rejected = rep;
        if let CmMessage::SidrRep(ref mut r) = rejected.message {
            r.status = SIDR_STATUS_REJECT;
        }
        for m in [req, rep, rejected] {
            let mut b = [0u8; HEADER_LEN];
            m.emit(&mut b);
            assert_eq!(CmRepr::parse(&Packet::new_checked(&b[..]).unwrap()), Ok(m));
        }
    }

    #[test]
    fn sidr_fields_sit_where_the_spec_puts_them() {
        let (req, rep) = sidr();
        let mut b = [0u8; HEADER_LEN];
        req.emit(&mut b);
        assert_eq!(&b[0..4], &[1, 0x07, 2, 0x03]);
        assert_eq!(&b[16..18], &[0x00, 0x17]);
        // Request id, P_Key, reserved, service id.
        assert_eq!(&b[24..32], &[0x0A, 0x0B, 0x0C, 0x0D, 0xFF, 0xFF, 0, 0]);
        assert_eq!(&b[32..40], &[0, 0, 0, 0, 0x01, 0x11, 0x4B, 0x3F]);
        // The private data fills the rest of the MAD.
        assert_eq!((b[40], b[255]), (0xA5, 215 ^ 0xA5));
        rep.emit(&mut b);
        assert_eq!(&b[16..18], &[0x00, 0x18]);
        // Request id, status, additional information length, reserved.
        assert_eq!(&b[24..32], &[0x0A, 0x0B, 0x0C, 0x0D, 0, 0, 0, 0]);
        // QPN (24 bits) then reserved, service id, Q_Key.
        assert_eq!(&b[32..36], &[0x12, 0x34, 0x56, 0]);
        assert_eq!(&b[40..44], &[0x01, 0x11, 0x4B, 0x3F]);
        assert_eq!(&b[44..48], &[0x01, 0x23, 0x45, 0x67]);
        assert!(b[48..].iter().all(|&x| x == 0), "no info, no private data");
    }

    #[test]
    fn malformed_or_short_sidr_mads_are_refused_naming_the_field() {
        let (req, rep) = sidr();
        let mut b = [0u8; HEADER_LEN];
        rep.emit(&mut b);
        b[29] = 73;
        let e = CmRepr::parse(&Packet::new_checked(&b[..]).unwrap()).unwrap_err();
        assert!(
            e.to_string().contains("additional information length"),
            "{e}"
        );
        req.emit(&mut b);
        let short = &b[..field::SIDR_REQ_PRIVATE_DATA.start];
        let e = Packet::new_checked(short).unwrap_err();
        assert!(e.to_string().contains("cm mad"), "{e}");
        let e = CmRepr::parse(&Packet::new_unchecked(short)).unwrap_err();
        assert!(e.to_string().contains("cm mad"), "{e}");
    }
}
