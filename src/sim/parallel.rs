//! Per-resident work that reads shared data and writes only the resident's own components,
//! spread over the cores when there is enough of it (a village's step is too short to hand to
//! other threads). The results come back in the items' order, so nothing depends on which
//! thread ran what.

use rayon::prelude::*;

/// `f` over every item, in parallel from `parallel_from` items on; results in the items' order.
pub fn map_mut<T: Send, R: Send>(
    items: &mut [T],
    parallel_from: usize,
    f: impl Fn(&mut T) -> R + Sync + Send,
) -> Vec<R> {
    if items.len() >= parallel_from {
        items.par_iter_mut().map(f).collect()
    } else {
        items.iter_mut().map(f).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn results_keep_the_items_order_either_way() {
        for from in [1, 1000] {
            let mut v: Vec<u32> = (0..200).collect();
            let out = map_mut(&mut v, from, |x| {
                *x += 1;
                *x * 2
            });
            assert_eq!(out, (1..=200).map(|x| x * 2).collect::<Vec<_>>());
            assert_eq!(v, (1..=200).collect::<Vec<_>>());
        }
    }
}
