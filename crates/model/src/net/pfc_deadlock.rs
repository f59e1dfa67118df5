//! Whether the routes of a network can deadlock under PFC ([`crate::net::pfc`]): a cycle of
//! buffers that can each wait on the next. A property of the routes, computed over the
//! network; flow control only counts it (`buffer_cycle_links`).

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
    // Per destination, every link direction a frame toward it can cross (a breadth-first
    // walk from every other node's uplink through every output port the switches may pick,
    // one or, with ECMP, several), and where it can go next.
    let mut seen = vec![false; links];
    let mut frontier = Vec::new();
    for d in 0..nodes {
        seen.iter_mut().for_each(|s| *s = false);
        frontier.clear();
        for a in (0..nodes).filter(|&a| a != d) {
            let up = net.uplink[a];
            if !std::mem::replace(&mut seen[up], true) {
                frontier.push(up);
            }
        }
        while let Some(link) = frontier.pop() {
            let End::Switch(s) = net.links[link].to else {
                continue;
            };
            let sw = &net.switches[s];
            for &out in sw.outs_toward(d).iter().filter(|&&o| o != u32::MAX) {
                let on = sw.out_link[out as usize];
                next[link].insert(on);
                if !std::mem::replace(&mut seen[on], true) {
                    frontier.push(on);
                }
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
