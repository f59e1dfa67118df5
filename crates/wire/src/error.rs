//! The one error type of the crate: every way untrusted bytes can fail to be a RoCEv2 frame.

use thiserror::Error;

/// Why a buffer was rejected. Every variant names the layer and field that was wrong, so a
/// dropped packet can be counted and explained without re-parsing it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Error)]
pub enum WireError {
    /// The buffer ends before the header (or trailer) named by `layer` does.
    #[error("{layer}: truncated, need {need} bytes, have {have}")]
    Truncated {
        layer: &'static str,
        need: usize,
        have: usize,
    },
    /// A length field disagrees with the bytes actually present.
    #[error("{layer}: {field} states {stated} bytes, but {actual} are present")]
    LengthMismatch {
        layer: &'static str,
        field: &'static str,
        stated: usize,
        actual: usize,
    },
    /// The Ethernet II type is not IPv4 (0x0800); VLAN tags and IPv6 are not supported.
    #[error("ethernet: ethertype {ethertype:#06x} is not IPv4")]
    NotIpv4 { ethertype: u16 },
    /// The IPv4 protocol is not UDP (17).
    #[error("ipv4: protocol {protocol} is not UDP")]
    NotUdp { protocol: u8 },
    /// The UDP destination port is not the RoCEv2 port 4791.
    #[error("udp: destination port {dst_port} is not RoCEv2 (4791)")]
    NotRoce { dst_port: u16 },
    /// The IPv4 version nibble is not 4.
    #[error("ipv4: version {0} is not 4")]
    BadIpVersion(u8),
    /// The IPv4 IHL is not 5 (options are not supported).
    #[error("ipv4: header length {0} words is not 5 (options unsupported)")]
    BadIpHeaderLen(u8),
    /// The IPv4 header checksum does not verify.
    #[error("ipv4: header checksum does not verify")]
    BadIpChecksum,
    /// The BTH opcode is not one this crate knows.
    #[error("bth: unknown opcode {0:#04x}")]
    UnknownOpcode(u8),
    /// The BTH transport header version is not 0.
    #[error("bth: transport version {0} is not 0")]
    BadTransportVersion(u8),
    /// The BTH pad count does not fit the opcode or the payload length.
    #[error("bth: pad count {pad} invalid for opcode {opcode:#04x} and its payload length")]
    BadPadCount { opcode: u8, pad: u8 },
    /// The invariant CRC stored in the frame differs from the one computed over it.
    #[error("icrc: stated {stated:#010x}, computed {computed:#010x}")]
    BadIcrc { stated: u32, computed: u32 },
    /// A header field holds a value that is not allowed there.
    #[error("{layer}: field {field} has invalid value {value:#x}")]
    BadField {
        layer: &'static str,
        field: &'static str,
        value: u64,
    },
}

/// Result with [`WireError`].
pub type Result<T> = core::result::Result<T, WireError>;

/// Checks that `have` bytes hold at least `need`; the helper every `new_checked` uses.
#[inline]
pub(crate) fn check_len(layer: &'static str, need: usize, have: usize) -> Result<()> {
    if have < need {
        Err(WireError::Truncated { layer, need, have })
    } else {
        Ok(())
    }
}
