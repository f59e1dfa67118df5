//! The network: Ethernet ports, links, an output-queued switch, the impairment element and
//! the star topology that wires them. It knows frames only as byte lengths plus the
//! destination node (read from the IPv4 destination address); nothing of NIC internals.

pub mod impair;
pub mod link;
pub mod port;
pub mod switch;
pub mod topology;
