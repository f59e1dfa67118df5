//! Faults the network injects on request, so that tests can prove the model's checks fail
//! when they should: the switch corrupts or drops the n-th frame of a kind.

/// Test hooks (used by tests to prove that checks can fail).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Hooks {
    /// Flip one payload byte of the n-th payload-carrying frame in the switch (and fix
    /// up the ICRC, so the corruption is invisible to the transport).
    pub corrupt_data_frame: Option<u64>,
    /// Flip one byte of the value carried by the n-th ATOMIC ACKNOWLEDGE in the switch (and
    /// fix up the ICRC): the requester receives a wrong original value.
    pub corrupt_atomic_ack: Option<u64>,
    /// Change the R_Key of the n-th RDMA READ request in the switch (and fix up the ICRC):
    /// the responder refuses that READ with a remote access error.
    pub bad_read_rkey: Option<u64>,
    /// Drop the CM MADs with these numbers (1 = the first) that reach the first switch
    /// (connection setup must repair it).
    pub drop_cm_mads: [Option<u64>; 2],
}
