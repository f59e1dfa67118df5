//! The QP state of the IB state machine, apart so that the errors that name a state need
//! nothing else of the QP.

/// QP states of the IB state machine.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum QpState {
    #[default]
    Reset,
    Init,
    /// Ready to receive: the responder runs.
    Rtr,
    /// Ready to send: requester and responder run.
    Rts,
    /// Send queue drained: messages already started finish, new ones wait.
    Sqd,
    /// Send queue error (UC/UD only; an RC QP goes to ERR instead).
    Sqe,
    Err,
}
