//! The NIC's per-QP records: ring addresses and indices, scheduling and TX state. In a real
//! NIC these live in the QPC; the model keeps them beside it so a unit can read them without
//! charging a QPC access (the QPC manager charges the accesses). 80 bytes a QP (a test pins
//! it), so 100,000 QPs take 8 MB.

/// Per-QP state the NIC keeps.
#[derive(Debug, Clone, Copy, Default)]
pub struct QpHw {
    /// SQ ring base address.
    pub sq_base: u64,
    /// RQ ring base address.
    pub rq_base: u64,
    /// SQ depth − 1 (power of two).
    pub sq_mask: u32,
    /// RQ depth − 1.
    pub rq_mask: u32,
    /// SQ producer index from the last doorbell.
    pub sq_pi: u32,
    /// SQ index of the next WQE to fetch.
    pub sq_fetched: u32,
    /// RQ producer index.
    pub rq_pi: u32,
    /// RQ index of the next receive WQE to fetch.
    pub rq_fetched: u32,
    /// RQ index up to which fetched receive WQEs have landed and gone to the transport:
    /// `rq_fetched − rq_landed` are on their way ([`super::rx_wait`]).
    pub rq_landed: u32,
    /// WQEs fetched and not yet completed.
    pub outstanding: u32,
    /// Application core (selects the CQs).
    pub core: u16,
    /// The QP is in the scheduler's ring.
    pub active: bool,
    /// The QP is in the TX engine's queue.
    pub in_tx: bool,
    /// The QP exists.
    pub valid: bool,
    /// WQEs the next scheduler visit reads: how many messages of the size last seen fit
    /// in `nic.chunk_bytes` (kept with the QP's scheduling-queue entry; 0 = not known yet,
    /// read `wqes_per_fetch`). See [`super::scheduler`].
    pub chunk_wqes: u8,
    /// This QP's bytes in the TX payload buffer (payload read started, not yet sent).
    pub tx_buffered_bytes: u32,
    /// Path MTU, bytes.
    pub pmtu: u32,
    /// The tenant the QP belongs to.
    pub tenant: u16,
    /// The QPN tagged with class and tenant ([`super::mech::isolation::tenant`]).
    pub iso_tag: u32,
    /// Send WRs the transport had finished when the NIC last looked (`Device::sq_done`):
    /// the outstanding count drops by what it finished since, CQE or not.
    pub sq_done_seen: u64,
    /// Received frames that end a message consuming a receive WQE (a SEND's or WRITE with
    /// immediate's last or only packet, a UD datagram) past the receive translation step
    /// and not yet handled by the transport: a SEND starting now lands in the receive WQE
    /// this many places behind the RQ head ([`super::rx_translate::consumes_recv`]).
    pub rx_recvs_ahead: u32,
}

#[cfg(test)]
mod size_tests {
    /// The per-QP record stays 80 bytes: a million QPs keep two of them per pair.
    #[test]
    fn a_qp_record_is_80_bytes() {
        assert_eq!(std::mem::size_of::<super::QpHw>(), 80);
    }
}
