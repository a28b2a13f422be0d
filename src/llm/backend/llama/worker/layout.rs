//! How a decode's batch is laid out: which tokens of which slots go in, in what order.
//!
//! With the cache split by slot llama.cpp cuts a batch into passes (`split_equal`: from the
//! first sequence with tokens left, the sequences whose ids follow one by one in batch order,
//! the same number of tokens from each; see [`super::work::passes`]). On the CPU a pass's
//! matrix products choose their kernels by their rows (llamafile's tiled `sgemm` for two rows
//! or more, one-row kernels otherwise); the rows are the pass's tokens (the weights), its
//! tokens of one sequence (attention) and its tokens whose logits are read (the last layer's
//! feed-forward and the output). Whether the kernels sum alike depends on the CPU; what is
//! measured is that before this layout the same requests gave other answers with the timing
//! (two towns on one model, a busy core, a run resumed: docs/benchmarks.md) and with it they
//! do not. [`invariant`] lays a batch out so that every pass has two tokens or more and no
//! output or two or more, a generated token is always the only one of its sequence in its
//! pass and a read token never is, and (with `Slot::read`) only tokens read as a prompt are
//! reused from the cache: which kernels a token takes, and what it attends to, then depend
//! only on its own request.

/// With the cache split by slot llama.cpp makes a pass over the weights for each run of
/// consecutive slots and each share of tokens they have in common (see
/// [`super::work::passes`]), and a pass costs about as much as five more tokens in one.
/// How many tokens each busy slot adds to a batch of at most `cap` tokens, in slot order, from
/// what each can add (`can`: slot, tokens it has to read; 0 when it generates one token, which
/// it always adds). With equal shares (`equal`: the cache split by slot and `pack_batches`), every slot with something to read
/// takes one token and then the same number `k` more each, those with fewer waiting for the
/// next decode: `k` is the number that reads the most in one more pass (the larger on a tie).
/// Otherwise the generating slots come first and each reading slot takes what room is left, in
/// order (with one shared cache a batch is one pass whatever it holds).
pub(super) fn shares(can: &[(usize, usize)], cap: usize, equal: bool) -> Vec<(usize, usize)> {
    let generating = can.iter().filter(|(_, n)| *n == 0).count();
    let mut room = cap.saturating_sub(generating);
    if !equal {
        // The generating slots' tokens first, then each reading slot what room is left.
        let reading = can.iter().filter(|(_, n)| *n > 0).filter_map(|&(i, n)| {
            let take = n.min(room);
            room -= take;
            (take > 0).then_some((i, take))
        });
        let generating = can.iter().filter(|(_, n)| *n == 0).copied();
        return generating.chain(reading).collect();
    }
    // The first token of each slot that reads (as far as there is room).
    let mut reading = 0;
    let first: Vec<(usize, usize)> = can
        .iter()
        .map(|&(i, n)| {
            if n == 0 || reading >= room {
                (i, 0)
            } else {
                reading += 1;
                (i, n)
            }
        })
        .collect();
    let room = room - reading;
    let most = can
        .iter()
        .map(|(_, n)| n.saturating_sub(1))
        .max()
        .unwrap_or(0);
    let (mut k, mut best) = (0, 0);
    for kk in 1..=most {
        let c = can
            .iter()
            .filter(|(_, n)| n.saturating_sub(1) >= kk)
            .count();
        if kk * c <= room && kk * c >= best {
            (k, best) = (kk, kk * c);
        }
    }
    can.iter()
        .zip(first)
        .filter_map(|(&(i, n), (_, left))| {
            if n == 0 {
                return Some((i, 0));
            }
            if left == 0 {
                return None; // no room for it this time
            }
            Some((i, if k > 0 && n > k { 1 + k } else { 1 }))
        })
        .collect()
}

/// One slot's part of a batch, in batch order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Part {
    /// The slot (its sequence has the same number).
    pub slot: usize,
    /// Prompt (or forced) tokens it reads; 0: it adds the token it generated.
    pub take: usize,
    /// A companion: one token added to an otherwise free (or waiting) slot so that a slot
    /// generating alone does not decode alone; its logits are never read and its cache
    /// position is dropped after the decode.
    pub companion: bool,
}

/// The batch-invariant layout (see the module's doc) for what each busy slot can add (`can`,
/// in slot order: slot, tokens it has to read, 0 when it generates), with `slots` slots, at
/// most `cap` tokens, and `room(slot)`: whether a slot's cache has room for a companion. A slot
/// that reads takes 2 tokens or more and never leaves exactly one for later (a slot with one
/// token to read, which admission avoids, reads it anyway); generating slots whose numbers
/// follow one another share a pass, a slot generating alone gets a companion in a neighbouring
/// slot (a free one, else one that reads waits a decode), and each slot that reads has a pass
/// of its own. The parts are ordered by descending slot number (a run of generating slots and
/// its companion in ascending order), so that llama.cpp never joins a slot to the run of the
/// slot numbered one below it unless both generate.
pub(super) fn invariant(
    can: &[(usize, usize)],
    slots: usize,
    cap: usize,
    room: impl Fn(usize) -> bool,
) -> Vec<Part> {
    let generating: Vec<usize> = can
        .iter()
        .filter(|(_, n)| *n == 0)
        .map(|(i, _)| *i)
        .collect();
    let mut reading: Vec<(usize, usize)> = can.iter().filter(|(_, n)| *n > 0).copied().collect();
    let is_gen = |i: usize| generating.contains(&i);
    // Companions for slots generating alone (no generating neighbour).
    let mut companions: Vec<usize> = Vec::new();
    for &g in &generating {
        let lone = !(g > 0 && is_gen(g - 1)) && !is_gen(g + 1);
        if !lone || companions.iter().any(|c| c + 1 == g || *c == g + 1) {
            continue; // a neighbour generates, or is already a companion
        }
        let near = [g + 1, g.wrapping_sub(1)];
        let usable = |c: usize| c < slots && !is_gen(c) && !companions.contains(&c) && room(c);
        let free = near
            .iter()
            .copied()
            .find(|&c| usable(c) && !reading.iter().any(|(r, _)| *r == c));
        let pick = free.or_else(|| near.iter().copied().find(|&c| usable(c)));
        if let Some(c) = pick {
            reading.retain(|(r, _)| *r != c); // it reads next time
            companions.push(c);
        }
    }
    let mut room_left = cap.saturating_sub(generating.len() + companions.len());
    let mut units: Vec<Vec<Part>> = Vec::new();
    for (i, n) in reading {
        let mut take = n.min(room_left);
        if take < n && n - take == 1 {
            take -= 1;
        }
        if take < 2 && !(n == 1 && take == 1) {
            continue; // no room for two now
        }
        room_left -= take;
        units.push(vec![Part {
            slot: i,
            take,
            companion: false,
        }]);
    }
    // Runs of consecutive generating slots and companions, each in ascending order.
    let mut run_ids: Vec<usize> = generating.iter().chain(&companions).copied().collect();
    run_ids.sort_unstable();
    for (k, &i) in run_ids.iter().enumerate() {
        let part = Part {
            slot: i,
            take: 0,
            companion: companions.contains(&i),
        };
        if k > 0 && run_ids[k - 1] + 1 == i {
            units.last_mut().expect("a run").push(part);
        } else {
            units.push(vec![part]);
        }
    }
    units.sort_by_key(|u| std::cmp::Reverse(u[0].slot));
    units.into_iter().flatten().collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slots_that_read_take_one_token_then_an_equal_share_in_one_more_pass() {
        // Generating slots add their token; one prompt reads all of it.
        assert_eq!(
            shares(&[(0, 0), (1, 0), (2, 300)], 512, true),
            [(0, 0), (1, 0), (2, 300)]
        );
        // Two prompts: the share that reads most in one pass (the longer alone here: 299
        // more against 2 × 39); the shorter reads one token now, the rest next time.
        assert_eq!(shares(&[(3, 40), (4, 300)], 512, true), [(3, 1), (4, 300)]);
        // Three alike and one short: 3 × 99 more beats 1 × 299 and 4 × 5.
        assert_eq!(
            shares(&[(0, 100), (1, 100), (2, 6), (3, 100)], 512, true),
            [(0, 100), (1, 100), (2, 1), (3, 100)]
        );
        // A forced run of 6 beside a generating slot: one more pass for its five.
        assert_eq!(shares(&[(0, 0), (1, 6)], 512, true), [(0, 0), (1, 6)]);
        // Room: at most `cap` tokens, the generating ones first.
        let t = shares(&[(0, 0), (1, 400), (2, 400)], 512, true);
        assert_eq!(t, [(0, 0), (1, 255), (2, 255)]);
        assert!(t.iter().map(|(_, n)| (*n).max(1)).sum::<usize>() <= 512);
        // Without equal shares: the generating slots first, then what room is left, in order.
        assert_eq!(
            shares(&[(0, 400), (1, 0), (2, 400)], 512, false),
            [(1, 0), (0, 400), (2, 111)]
        );
        assert!(shares(&[], 512, true).is_empty());
    }

    /// llama.cpp's passes of a batch ([`super::super::work::split_equal`]), each as its
    /// sequences with their tokens and outputs: `batch` is (sequence, output flag of each
    /// token) in batch order.
    fn passes_of(batch: &[(usize, Vec<bool>)], n_ubatch: usize) -> Vec<Vec<(usize, usize, usize)>> {
        let sizes: Vec<(i32, usize)> = batch.iter().map(|(s, f)| (*s as i32, f.len())).collect();
        let mut at = vec![0; batch.len()];
        super::super::work::split_equal(&sizes, n_ubatch)
            .into_iter()
            .map(|pass| {
                pass.into_iter()
                    .map(|(i, each)| {
                        let flags = &batch[i].1[at[i]..at[i] + each];
                        at[i] += each;
                        (batch[i].0, each, flags.iter().filter(|o| **o).count())
                    })
                    .collect()
            })
            .collect()
    }

    #[test]
    fn every_pass_of_an_invariant_batch_takes_the_same_kernels_for_each_token() {
        let mut seed = 0x2545_f491_u64;
        let mut rand = |n: u64| {
            seed = seed.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
            (seed >> 33) % n
        };
        for case in 0..3000 {
            let slots = 1 + rand(16) as usize;
            let mut can: Vec<(usize, usize)> = Vec::new();
            for i in 0..slots {
                if rand(3) == 0 {
                    continue;
                }
                let n = match rand(4) {
                    0 | 1 => 0,
                    2 => 2 + rand(8) as usize,
                    _ => 2 + rand(700) as usize,
                };
                can.push((i, n));
            }
            let parts = invariant(&can, slots, 512, |_| true);
            let batch: Vec<(usize, Vec<bool>)> = parts
                .iter()
                .map(|p| {
                    let n = can.iter().find(|(i, _)| *i == p.slot).map_or(0, |c| c.1);
                    let flags = if p.take == 0 {
                        vec![true]
                    } else {
                        // Finishing: the last two tokens' logits, else none.
                        (0..p.take)
                            .map(|k| p.take == n && k + 2 >= p.take)
                            .collect()
                    };
                    (p.slot, flags)
                })
                .collect();
            let total: usize = batch.iter().map(|(_, f)| f.len()).sum();
            assert!(total <= 512, "case {case}: {total} tokens");
            for (i, n) in &can {
                if *n == 0 {
                    assert!(
                        parts.iter().any(|p| p.slot == *i && !p.companion),
                        "case {case}"
                    );
                }
            }
            let generating = |s: usize| parts.iter().any(|p| p.slot == s && p.take == 0);
            let lone_ok = slots == 1;
            for pass in passes_of(&batch, 512) {
                let tokens: usize = pass.iter().map(|(_, k, _)| k).sum();
                let outputs: usize = pass.iter().map(|(_, _, o)| o).sum();
                let ctx = format!("case {case}: can {can:?}, parts {parts:?}, pass {pass:?}");
                assert!(tokens >= 2 || lone_ok, "{ctx}");
                assert!(outputs != 1 || lone_ok, "{ctx}");
                for &(s, k, _) in &pass {
                    if generating(s) {
                        assert!(
                            k == 1 && pass.iter().all(|(t, _, _)| generating(*t)),
                            "{ctx}"
                        );
                    } else {
                        assert!(k >= 2 && pass.len() == 1, "{ctx}");
                    }
                }
            }
        }
        // Two generating slots apart with a free slot between: one companion joins them.
        let parts = invariant(&[(3, 0), (5, 0)], 16, 512, |_| true);
        assert_eq!(
            parts
                .iter()
                .map(|p| (p.slot, p.companion))
                .collect::<Vec<_>>(),
            [(3, false), (4, true), (5, false)]
        );
        // Never one token left to read: two generating leave room for 510, and 511 to read
        // would leave one; it reads 509. A slot generating alone beside one that reads and no
        // free neighbour: the reader waits and is its companion.
        let parts = invariant(&[(0, 0), (1, 0), (3, 511)], 16, 512, |_| true);
        assert_eq!(parts.iter().find(|p| p.slot == 3).unwrap().take, 509);
        let parts = invariant(&[(0, 0), (1, 40)], 2, 512, |_| true);
        assert_eq!(
            parts,
            [
                Part {
                    slot: 0,
                    take: 0,
                    companion: false
                },
                Part {
                    slot: 1,
                    take: 0,
                    companion: true
                }
            ]
        );
    }
}
