//! The paper's multi-tenant cloud service model: the tenant id and its class live in the QP
//! number, so every TX unit can tell, from the QPN alone, which WQE FIFO a WQE goes to and
//! whether it may be sliced.
//!
//! Bit layout of the 24-bit tagged QPN (the BTH's DestQP width):
//!
//! | bits | field | values |
//! |---|---|---|
//! | 23 | class | 1 = latency-sensitive (LS), 0 = bandwidth-sensitive (BS) |
//! | 22..16 | tenant id | 0..=127 |
//! | 15..0 | QP index within the NIC | 0..=65535 |
//!
//! Where the model departs: the transport and the wire keep the dense QPN the verbs layer
//! allocated (every per-QP table in the model is a vector indexed by it, and the default
//! architecture's numbers must not move); the NIC stores the tagged QPN with the QP's record
//! (`QpHw::iso_tag`) when the QP is created, and the isolation units read class and tenant
//! from the tag's bits only.

/// Bit of the class in the tagged QPN.
pub const CLASS_BIT: u32 = 23;
/// Lowest bit of the tenant id.
pub const TENANT_SHIFT: u32 = 16;
/// Tenant ids that fit in the tag (7 bits).
pub const MAX_TENANT: u16 = 127;
/// Mask of the QP index.
pub const INDEX_MASK: u32 = 0xFFFF;

/// The tagged QPN of QP `qpn` of `tenant`, LS when `ls`. A tenant id above [`MAX_TENANT`]
/// is refused by the run's checks before any QP is made; here it is masked.
pub fn tag(ls: bool, tenant: u16, qpn: u32) -> u32 {
    (u32::from(ls) << CLASS_BIT)
        | ((u32::from(tenant) & u32::from(MAX_TENANT)) << TENANT_SHIFT)
        | (qpn & INDEX_MASK)
}

/// Whether the tagged QPN is an LS tenant's.
pub fn is_ls(tag: u32) -> bool {
    tag >> CLASS_BIT & 1 == 1
}

/// The tenant id of the tagged QPN.
pub fn tenant(tag: u32) -> u16 {
    ((tag >> TENANT_SHIFT) & u32::from(MAX_TENANT)) as u16
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_round_trip() {
        for &(ls, t, q) in &[(true, 0, 1), (false, 127, 0xFFFF), (false, 5, 0x1_0003)] {
            let x = tag(ls, t, q);
            assert!(x < 1 << 24);
            assert_eq!(is_ls(x), ls);
            assert_eq!(tenant(x), t);
            assert_eq!(x & INDEX_MASK, q & INDEX_MASK);
        }
    }
}
