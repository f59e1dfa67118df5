//! QPC requesters: the piece of each RDMA-engine unit that asks for QPCs and keeps the work
//! waiting on them (csRNA §4.4, Fig. 5b; baseline §3, Fig. 2).
//!
//! * [`NonBlockingRequester`] — csRNA's requester. Responses may come back in any order
//!   (challenge C1: "how to locate relevant information based on the returned QPC"), so
//!   each request gets a unique *index* popped from the **index FIFO** (initially
//!   `0, 1, …, ooo_cap − 1`), the waiting information is written to the **waiting SRAM** at
//!   that address, and the index travels with the request and back with the response.
//!   Response handling reads the information at the returned index and pushes the index
//!   back to the index FIFO. The number of indices is the out-of-order capacity `ooo_cap`;
//!   indices are 8 bits wide (§4.4). With no free index the unit stalls.
//! * [`FcfsRequester`] — the baseline **waiting FIFO**: information is queued in request
//!   order and the head is taken on each response, which is correct only if responses come
//!   back in request order (the FCFS manager guarantees it; the non-blocking one does not).
//!
//! The waiting information `T` is opaque here: a doorbell for the descriptor unit, a WQE for
//! the requester unit, a received packet for the responder unit (§4.4).

use std::collections::VecDeque;
use std::fmt;

use super::types::{ConfigError, MAX_OOO_CAP};

/// No index (or waiting-FIFO slot) is free: the unit must stall. The information is handed
/// back so nothing is lost.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stall<T>(pub T);

/// A response the requester cannot match.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RequesterError {
    /// No request with this index is outstanding.
    UnknownIndex(u8),
    /// FCFS only: the response is not for the oldest outstanding request.
    OutOfOrder {
        /// Index of the oldest outstanding request.
        expected: u8,
        /// Index in the response.
        got: u8,
    },
}

impl fmt::Display for RequesterError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RequesterError::UnknownIndex(i) => write!(f, "no outstanding request with index {i}"),
            RequesterError::OutOfOrder { expected, got } => {
                write!(
                    f,
                    "response for index {got} but waiting FIFO head is {expected}"
                )
            }
        }
    }
}

impl std::error::Error for RequesterError {}

/// What both requesters offer a pipeline unit.
pub trait QpcRequester<T> {
    /// Stores `info` and returns the index to send with the QPC request.
    fn request(&mut self, info: T) -> Result<u8, Stall<T>>;
    /// Takes back the information of the answered request `index`, freeing its slot.
    fn respond(&mut self, index: u8) -> Result<T, RequesterError>;
    /// Requests sent and not yet answered.
    fn outstanding(&self) -> usize;
    /// Requests that can still be sent before stalling.
    fn free(&self) -> usize;
}

fn check_cap(cap: usize) -> Result<(), ConfigError> {
    if cap == 0 || cap > MAX_OOO_CAP {
        Err(ConfigError::OooCap(cap))
    } else {
        Ok(())
    }
}

/// csRNA's non-blocking QPC requester (Fig. 5b).
#[derive(Debug, Clone)]
pub struct NonBlockingRequester<T> {
    index_fifo: VecDeque<u8>,
    waiting_sram: Vec<Option<T>>,
}

impl<T> NonBlockingRequester<T> {
    /// A requester with `ooo_cap` indices (1..=256).
    pub fn new(ooo_cap: usize) -> Result<Self, ConfigError> {
        check_cap(ooo_cap)?;
        Ok(NonBlockingRequester {
            // 0..=255 fits u8 because ooo_cap <= 256.
            index_fifo: (0..ooo_cap).filter_map(|i| u8::try_from(i).ok()).collect(),
            waiting_sram: std::iter::repeat_with(|| None).take(ooo_cap).collect(),
        })
    }

    /// Out-of-order capacity (number of indices).
    pub fn ooo_cap(&self) -> usize {
        self.waiting_sram.len()
    }

    /// The information waiting at `index`, if a request with it is outstanding.
    pub fn peek(&self, index: u8) -> Option<&T> {
        self.waiting_sram.get(usize::from(index))?.as_ref()
    }
}

impl<T> QpcRequester<T> for NonBlockingRequester<T> {
    fn request(&mut self, info: T) -> Result<u8, Stall<T>> {
        let Some(index) = self.index_fifo.pop_front() else {
            return Err(Stall(info));
        };
        self.waiting_sram[usize::from(index)] = Some(info);
        Ok(index)
    }

    fn respond(&mut self, index: u8) -> Result<T, RequesterError> {
        let info = self
            .waiting_sram
            .get_mut(usize::from(index))
            .and_then(Option::take)
            .ok_or(RequesterError::UnknownIndex(index))?;
        self.index_fifo.push_back(index);
        Ok(info)
    }

    fn outstanding(&self) -> usize {
        self.ooo_cap() - self.index_fifo.len()
    }

    fn free(&self) -> usize {
        self.index_fifo.len()
    }
}

/// The baseline requester: a waiting FIFO of `depth` entries (Fig. 2). The index it returns
/// is the FIFO slot (write pointer modulo `depth`), unique among outstanding requests, so it
/// satisfies the same manager contract as the non-blocking requester.
#[derive(Debug, Clone)]
pub struct FcfsRequester<T> {
    waiting_fifo: VecDeque<(u8, T)>,
    depth: usize,
    write_ptr: usize,
}

impl<T> FcfsRequester<T> {
    /// A waiting FIFO of `depth` entries (1..=256).
    pub fn new(depth: usize) -> Result<Self, ConfigError> {
        check_cap(depth)?;
        Ok(FcfsRequester {
            waiting_fifo: VecDeque::with_capacity(depth),
            depth,
            write_ptr: 0,
        })
    }

    /// Depth of the waiting FIFO.
    pub fn depth(&self) -> usize {
        self.depth
    }
}

impl<T> QpcRequester<T> for FcfsRequester<T> {
    fn request(&mut self, info: T) -> Result<u8, Stall<T>> {
        if self.waiting_fifo.len() >= self.depth {
            return Err(Stall(info));
        }
        let Ok(slot) = u8::try_from(self.write_ptr) else {
            return Err(Stall(info));
        };
        self.write_ptr = (self.write_ptr + 1) % self.depth;
        self.waiting_fifo.push_back((slot, info));
        Ok(slot)
    }

    fn respond(&mut self, index: u8) -> Result<T, RequesterError> {
        match self.waiting_fifo.front() {
            None => Err(RequesterError::UnknownIndex(index)),
            Some(&(head, _)) if head != index => Err(RequesterError::OutOfOrder {
                expected: head,
                got: index,
            }),
            Some(_) => self
                .waiting_fifo
                .pop_front()
                .map(|(_, info)| info)
                .ok_or(RequesterError::UnknownIndex(index)),
        }
    }

    fn outstanding(&self) -> usize {
        self.waiting_fifo.len()
    }

    fn free(&self) -> usize {
        self.depth - self.waiting_fifo.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn indices_start_consecutive_and_are_recycled() {
        let mut r = NonBlockingRequester::new(3).unwrap();
        assert_eq!(r.request("a"), Ok(0));
        assert_eq!(r.request("b"), Ok(1));
        assert_eq!(r.request("c"), Ok(2));
        assert_eq!(r.request("d"), Err(Stall("d")));
        assert_eq!(r.outstanding(), 3);
        // Out-of-order response: index 1 first.
        assert_eq!(r.respond(1), Ok("b"));
        assert_eq!(r.respond(1), Err(RequesterError::UnknownIndex(1)));
        assert_eq!(r.request("e"), Ok(1));
        assert_eq!(r.peek(1), Some(&"e"));
        assert_eq!(r.respond(0), Ok("a"));
        assert_eq!(r.respond(200), Err(RequesterError::UnknownIndex(200)));
        assert_eq!(r.free(), 1);
    }

    #[test]
    fn full_8_bit_index_space() {
        let mut r = NonBlockingRequester::new(256).unwrap();
        for i in 0..256u32 {
            assert_eq!(r.request(i).map(u32::from), Ok(i));
        }
        assert_eq!(r.request(999), Err(Stall(999)));
        assert!(NonBlockingRequester::<u8>::new(257).is_err());
        assert!(NonBlockingRequester::<u8>::new(0).is_err());
    }

    #[test]
    fn fcfs_requester_needs_in_order_responses() {
        let mut r = FcfsRequester::new(2).unwrap();
        assert_eq!(r.request('x'), Ok(0));
        assert_eq!(r.request('y'), Ok(1));
        assert_eq!(r.request('z'), Err(Stall('z')));
        assert_eq!(
            r.respond(1),
            Err(RequesterError::OutOfOrder {
                expected: 0,
                got: 1
            })
        );
        assert_eq!(r.respond(0), Ok('x'));
        assert_eq!(r.request('z'), Ok(0));
        assert_eq!(r.respond(1), Ok('y'));
        assert_eq!(r.respond(0), Ok('z'));
        assert_eq!(r.respond(0), Err(RequesterError::UnknownIndex(0)));
    }
}
