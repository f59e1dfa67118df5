//! Whether the routes of a network can deadlock under PFC: a cycle of buffers that can
//! each wait on the next.

use crate::net::graph::{End, Network};

/// A cycle of link directions whose buffers can wait on each other under PFC, if the
/// routes of `net` form one: a frame that came in over each one can be forwarded on the
/// next, and the last leads back to the first. Then every switch in it can be paused by
/// the next at once: the cyclic buffer dependency a PFC deadlock needs. `None`: no PFC
/// deadlock is possible whatever the traffic.
pub fn buffer_dependency_cycle(net: &Network) -> Option<Vec<usize>> {
    let links = net.links.len();
    let mut next: Vec<std::collections::BTreeSet<usize>> = vec![Default::default(); links];
    let nodes = net.nodes();
    for a in 0..nodes {
        for d in (0..nodes).filter(|&d| d != a) {
            // Follow a frame from a to d through the routing tables, at most once per link.
            let mut link = net.uplink[a];
            for _ in 0..links {
                let End::Switch(s) = net.links[link].to else {
                    break;
                };
                let out = net.switches[s].route[d];
                if out == u32::MAX {
                    break;
                }
                let on = net.switches[s].out_link[out as usize];
                next[link].insert(on);
                link = on;
            }
        }
    }
    // Depth-first search for a back edge: 0 unseen, 1 on the path, 2 done.
    let mut state = vec![0u8; links];
    for start in 0..links {
        if state[start] != 0 {
            continue;
        }
        let mut path = vec![start];
        let mut iters = vec![next[start].iter()];
        state[start] = 1;
        while let Some(it) = iters.last_mut() {
            match it.next().copied() {
                Some(n) if state[n] == 1 => {
                    let from = path.iter().position(|&l| l == n).unwrap_or(0);
                    return Some(path[from..].to_vec());
                }
                Some(n) if state[n] == 0 => {
                    state[n] = 1;
                    path.push(n);
                    iters.push(next[n].iter());
                }
                Some(_) => {}
                None => {
                    iters.pop();
                    if let Some(l) = path.pop() {
                        state[l] = 2;
                    }
                }
            }
        }
    }
    None
}
