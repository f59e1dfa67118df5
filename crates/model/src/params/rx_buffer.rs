//! Size and PFC levels of the NIC's receive buffer.

/// Size and PFC levels of a receive buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RxBufferParams {
    /// Bytes it holds at most (`nic.rx_buffer_bytes`).
    pub capacity_bytes: u64,
    /// Whether a filling buffer pauses the link peer (`net.pfc`) instead of only dropping.
    pub lossless: bool,
    /// Held bytes above which the NIC pauses its peer (`nic.rx_buffer_bytes` minus
    /// `nic.rx_pfc_headroom_bytes`).
    pub xoff_bytes: u64,
    /// Held bytes at or below which a paused peer is resumed (`nic.rx_pfc_xon_bytes`).
    pub xon_bytes: u64,
    /// The PCIe link's rate, Mb/s (`pcie.gbps`).
    pub pcie_mbps: u64,
    /// Payload bytes per write TLP (`pcie.mps_bytes`).
    pub mps_bytes: u64,
    /// Header bytes per TLP (`pcie.tlp_header_bytes`).
    pub tlp_header_bytes: u64,
}
