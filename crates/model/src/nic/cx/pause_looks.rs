//! A paused NIC's TX engine, parked: the looks it would take every pause quantum while
//! its switch's XON cannot be foreseen ([`crate::net::pfc`]), taken without events.
//!
//! A paused port answers a look at `t` with `t` + a quantum + the engine's lead when the
//! XON cannot be foreseen; the engine, running `slack` ahead of its port, looks again at
//! that answer less its slack. While nothing the answer depends on changes (the pause, the
//! switch ingress's XON outlook), those looks follow one another a fixed step apart and
//! change nothing, until the one that finds the pause ends within a quantum and wakes the
//! engine at the pause's end (less its slack). A parked engine schedules only that last
//! wake; the network keeps its looks ([`ParkedLooks`]) and, when something they look at
//! changes, wakes it at the first look that would have seen the change: the engine sends
//! at exactly the times it did when it took every look.

use rnic_sim::TimePs;

/// What a paused port answers a NIC's look (the network's [`super::Wire::look_again`]):
/// it is asked about `t` (the look's time, or later when the port is still serializing),
/// the pause ends at `until`, and the answer is `t + ahead` (a quantum and the engine's lead).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PauseLook {
    /// The time the port was asked about.
    pub t: TimePs,
    /// The pause's end.
    pub until: TimePs,
    /// The answer's distance from `t`.
    pub ahead: TimePs,
}

/// The looks a paused NIC's TX engine would have taken, one every `step` from `first` to
/// `last`, while nothing it looks at changes; at `end` (its one pending wake) it sends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ParkedLooks {
    /// The first look after the one that parked the engine.
    pub first: TimePs,
    /// The time between looks.
    pub step: TimePs,
    /// The last look (the one that finds the pause ends within a quantum).
    pub last: TimePs,
    /// The engine's pending wake: it sends then if nothing changed.
    pub end: TimePs,
    /// The end of the pause they were computed for.
    pub until: TimePs,
}

impl ParkedLooks {
    /// The first look at or after `t` that is not the pending wake itself, if any.
    pub fn first_from(&self, t: TimePs) -> Option<TimePs> {
        let g = if t <= self.first {
            self.first
        } else {
            self.first + (t - self.first).div_ceil(self.step) * self.step
        };
        (g <= self.last && g < self.end).then_some(g)
    }
}

/// The looks an engine whose unit is free from `unit_free` and whose look at `now` got the
/// answer `look` would take, if it may park: its port is free (`look.t == now`), its unit
/// too, and the answer is a look again (not the pause's end). Else `None`: it wakes at the
/// answer as it did.
pub fn parked_looks(
    now: TimePs,
    unit_free: TimePs,
    slack: TimePs,
    look: PauseLook,
) -> Option<ParkedLooks> {
    let PauseLook { t, until, ahead } = look;
    if t != now || unit_free > now || ahead <= slack || now + ahead >= until {
        return None;
    }
    let step = ahead - slack;
    // The k-th look after this one is the last: the first whose answer reaches `until`.
    let k = (until - ahead - now).div_ceil(step);
    let last = now + k * step;
    let end = last.max(until.saturating_sub(slack));
    Some(ParkedLooks {
        first: now + step,
        step,
        last,
        end,
        until,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The looks taken one by one as the engine took them: (times of the looks after
    /// `now`, the time it sends), the port free and the pause standing unchanged.
    fn one_by_one(now: TimePs, slack: TimePs, until: TimePs, ahead: TimePs) -> (Vec<u64>, u64) {
        let mut looks = Vec::new();
        let mut n = now;
        loop {
            let answer = if n < until {
                until.min(n + ahead).max(n)
            } else {
                n
            };
            let wake = answer.saturating_sub(slack);
            if wake <= n {
                return (looks, n);
            }
            looks.push(wake);
            n = wake;
        }
    }

    #[test]
    fn parked_looks_are_the_looks_taken_one_by_one() {
        for now in [0u64, 7, 1000] {
            for slack in [0u64, 3, 655] {
                for ahead in [slack + 1, slack + 5, 5120 + 655] {
                    for until in now..now + 3 * ahead + 20 {
                        let (looks, sends) = one_by_one(now, slack, until, ahead);
                        let look = PauseLook {
                            t: now,
                            until,
                            ahead,
                        };
                        let Some(p) = parked_looks(now, now, slack, look) else {
                            // Not parked: it wakes at most once before sending.
                            assert!(looks.len() <= 1, "{now} {slack} {ahead} {until}");
                            continue;
                        };
                        assert_eq!(p.end, sends, "{now} {slack} {ahead} {until}");
                        let parked: Vec<u64> = (0..)
                            .map(|j| p.first + j * p.step)
                            .take_while(|&g| g <= p.last)
                            .collect();
                        let mut taken = looks.clone();
                        if taken.last() == Some(&p.end) && parked.last() != Some(&p.end) {
                            taken.pop();
                        }
                        assert_eq!(parked, taken, "{now} {slack} {ahead} {until}");
                        for c in now..=sends {
                            let want = looks.iter().copied().find(|&g| g >= c && g < sends);
                            assert_eq!(p.first_from(c), want, "{now} {slack} {ahead} {until} {c}");
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn busy_port_or_unit_or_a_near_end_does_not_park() {
        let look = PauseLook {
            t: 10,
            until: 1000,
            ahead: 50,
        };
        assert!(
            parked_looks(5, 0, 10, look).is_none(),
            "port still serializing"
        );
        assert!(parked_looks(10, 11, 10, look).is_none(), "unit busy");
        let near = PauseLook { until: 60, ..look };
        assert!(
            parked_looks(10, 0, 10, near).is_none(),
            "the answer is the end"
        );
        assert!(parked_looks(10, 0, 10, look).is_some());
    }
}
