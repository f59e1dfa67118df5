//! Addresses of the simulated nodes: node i has MAC 02:00:00:00:hi:lo and IPv4 10.0.hi.lo
//! (hi:lo = i + 1), so switches route on the destination IP.

/// MAC address of node `i`.
pub fn node_mac(i: usize) -> [u8; 6] {
    let v = (i + 1) as u16;
    [0x02, 0, 0, 0, (v >> 8) as u8, v as u8]
}

/// IPv4 address of node `i`.
pub fn node_ip(i: usize) -> [u8; 4] {
    let v = (i + 1) as u16;
    [10, 0, (v >> 8) as u8, v as u8]
}

/// Node index of an IPv4 address (inverse of [`node_ip`]).
pub fn ip_node(ip: [u8; 4]) -> Option<usize> {
    if ip[0] != 10 || ip[1] != 0 {
        return None;
    }
    let v = (usize::from(ip[2]) << 8) | usize::from(ip[3]);
    v.checked_sub(1)
}

/// Destination node of a frame (its IPv4 destination address).
pub fn frame_dst_node(frame: &[u8]) -> Option<usize> {
    let ip = frame.get(rnic_wire::frame::IPV4_OFFSET..)?;
    let ip = rnic_wire::ipv4::Packet::new_checked(ip).ok()?;
    ip_node(ip.dst())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_round_trip() {
        for i in [0usize, 1, 10, 300] {
            assert_eq!(ip_node(node_ip(i)), Some(i));
        }
    }
}
