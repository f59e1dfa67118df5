//! How `--mrs N` splits a node's buffer slots into memory regions: N contiguous groups, slot
//! `s` of `slots` in group `s × N / slots`. Registration needs each group's slot range and a
//! post needs the group of its slot; both come from here so the two cannot disagree.

/// The group of slot `slot` among `slots` slots in `groups` contiguous groups.
pub(crate) fn group_of_slot(slot: u32, slots: u32, groups: u32) -> u32 {
    (u64::from(slot) * u64::from(groups) / u64::from(slots.max(1))) as u32
}

/// The first slot of group `g` (`slots` when the group is empty or past the end): group `g`
/// holds the slots `[first_slot(g), first_slot(g + 1))`.
pub(crate) fn first_slot(g: u32, slots: u32, groups: u32) -> u32 {
    ((u64::from(g) * u64::from(slots)).div_ceil(u64::from(groups.max(1))) as u32).min(slots)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_slot_lies_in_the_range_of_its_group() {
        for slots in 1..40 {
            for groups in 1..50 {
                for s in 0..slots {
                    let g = group_of_slot(s, slots, groups);
                    assert!(g < groups);
                    assert!(
                        first_slot(g, slots, groups) <= s && s < first_slot(g + 1, slots, groups),
                        "slot {s} of {slots}, {groups} groups: group {g}"
                    );
                }
                assert_eq!(first_slot(0, slots, groups), 0);
                assert_eq!(first_slot(groups, slots, groups), slots);
            }
        }
    }
}
