//! What a frame that is not RoCEv2 is, by its EtherType and IP protocol, so a capture's
//! other traffic is broken down (TCP 10, IPv6 4, ARP 4) rather than counted as one number:
//! a capture of the wrong interface or filter says at once what it holds instead.

/// 802.1Q, 802.1ad and the older QinQ tag types (a tag is passed over, as the decoder does).
const VLAN_TAGS: [u16; 3] = [0x8100, 0x88A8, 0x9100];

/// The kind of the Ethernet frame `data` (not RoCEv2): "TCP", "UDP", "ICMP", "IPv4 protocol
/// 47", "IPv6", "ARP", "LLDP", "MAC control (PFC, PAUSE)", "802.3 LLC", "EtherType 0x88e5",
/// or "too short for Ethernet".
pub fn other_kind(data: &[u8]) -> String {
    let mut at = 12;
    let mut ethertype = be16(data, at);
    // At most two tags, as QinQ stacks them.
    for _ in 0..2 {
        if ethertype.is_some_and(|t| VLAN_TAGS.contains(&t)) {
            at += 4;
            ethertype = be16(data, at);
        }
    }
    let Some(ethertype) = ethertype else {
        return "too short for Ethernet".into();
    };
    let payload = at + 2;
    match ethertype {
        0x0800 => ipv4_kind(data.get(payload..).unwrap_or_default()),
        0x86DD => "IPv6".into(),
        0x0806 => "ARP".into(),
        0x88CC => "LLDP".into(),
        0x8808 => "MAC control (PFC, PAUSE)".into(),
        0x8035 => "RARP".into(),
        0x8915 => "RoCE v1 (not decoded)".into(),
        t if t < 0x0600 => "802.3 LLC".into(),
        t => format!("EtherType {t:#06x}"),
    }
}

fn ipv4_kind(ip: &[u8]) -> String {
    match ip.get(9) {
        None => "IPv4 (cut short)".into(),
        Some(6) => "TCP".into(),
        Some(17) => "UDP".into(),
        Some(1) => "ICMP".into(),
        Some(2) => "IGMP".into(),
        Some(p) => format!("IPv4 protocol {p}"),
    }
}

fn be16(b: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_be_bytes([*b.get(at)?, *b.get(at + 1)?]))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn eth(ethertype: u16, rest: &[u8]) -> Vec<u8> {
        let mut f = vec![0u8; 12];
        f.extend_from_slice(&ethertype.to_be_bytes());
        f.extend_from_slice(rest);
        f
    }

    #[test]
    fn frames_are_named_by_ethertype_and_ip_protocol() {
        let mut ip = [0u8; 20];
        ip[9] = 6;
        assert_eq!(other_kind(&eth(0x0800, &ip)), "TCP");
        ip[9] = 47;
        assert_eq!(other_kind(&eth(0x0800, &ip)), "IPv4 protocol 47");
        assert_eq!(other_kind(&eth(0x0806, &[0; 28])), "ARP");
        assert_eq!(other_kind(&eth(0x86DD, &[0; 40])), "IPv6");
        assert_eq!(other_kind(&eth(0x88E5, &[])), "EtherType 0x88e5");
        assert_eq!(other_kind(&eth(0x0040, &[])), "802.3 LLC");
        assert_eq!(other_kind(&[0; 5]), "too short for Ethernet");
        // A VLAN tag is passed over.
        let mut tagged = eth(0x8100, &[0x60, 0x05, 0x08, 0x06]);
        tagged.extend_from_slice(&[0; 28]);
        assert_eq!(other_kind(&tagged), "ARP");
    }
}
