//! Tables indexed by QPN, grown with little slack.
//!
//! The model keeps many per-QP tables (`Vec<T>` indexed by QPN) that grow as QPs first use
//! them. Grown with `resize`, such a table doubles: at a million QPs a table may hold up to
//! twice the room it needs, and a freshly grown one briefly holds both copies. [`grow_for`]
//! grows by an eighth instead (still amortised constant time per QP).

/// Makes `v` long enough for index `i`, filling new entries with `fill`. The room grows by
/// at least an eighth of what it was, so creating QPs in order costs amortised O(1) each.
pub(crate) fn grow_for<T>(v: &mut Vec<T>, i: usize, fill: impl FnMut() -> T) {
    if i < v.len() {
        return;
    }
    let cap = v.capacity();
    if i >= cap {
        let want = (i + 1).max(cap + cap / 8).max(16);
        v.reserve_exact(want - v.len());
    }
    v.resize_with(i + 1, fill);
}

/// Appends `item` to a per-QP queue that usually holds one or a few entries: its room goes
/// 1, 2, 4, ... (amortised O(1) still), where a `VecDeque`'s first growth takes 4 entries,
/// three of them never used by a QP that has one WQE in flight (a million QPs at `-t 1`).
pub(crate) fn push_small<T>(q: &mut std::collections::VecDeque<T>, item: T) {
    if q.len() == q.capacity() {
        q.reserve_exact(q.capacity().max(1));
    }
    q.push_back(item);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_small_queue_grows_one_then_doubling() {
        let mut q = std::collections::VecDeque::new();
        let mut caps = Vec::new();
        for i in 0..9u32 {
            push_small(&mut q, i);
            caps.push(q.capacity());
        }
        assert_eq!(caps, [1, 2, 4, 4, 8, 8, 8, 8, 16]);
        assert!(q.iter().copied().eq(0..9));
    }

    #[test]
    fn grows_to_the_index_with_bounded_slack() {
        let mut v: Vec<u32> = Vec::new();
        for i in 0..100_000 {
            grow_for(&mut v, i, || 7);
            assert_eq!(v.len(), i + 1);
            assert!(v.capacity() <= (i + 1) + (i + 1) / 8 + 16);
        }
        assert!(v.iter().all(|&x| x == 7));
        grow_for(&mut v, 5, || 0);
        assert_eq!(v.len(), 100_000);
    }
}
