//! How a switch's packet buffer is divided among its ports (`net.switch_buffer`).

use super::declare::config_enum;

config_enum! {
    /// How a switch's ports hold their frames.
    pub enum SwitchBufferMode {
        /// Each output port has net.switch_buffer_bytes of its own (the model before shared
        /// buffers; PFC pauses at the fixed net.pfc_xoff_bytes).
        PerPort = "per_port",
        /// The ports share one pool of net.switch_buffer_bytes per switch, as a shared-memory
        /// switch's MMU divides it: headroom and a reserve per ingress port, the rest shared;
        /// with PFC each ingress pauses at a threshold derived from the pool (net.pfc_xoff_bytes
        /// and net.pfc_xon_bytes are then not used), without PFC each egress queue may hold
        /// at most the pool's free bytes (a dynamic threshold).
        Shared = "shared",
    }
}
