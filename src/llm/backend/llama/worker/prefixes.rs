//! Residents' identity prefixes kept beside the KV cache. Every prompt of a resident opens with
//! the same identity block (its system message), whatever it asks; with 16 slots and 25
//! residents asking in turn, the slot that last held a resident's prompt has mostly been taken
//! by someone else when it asks again, so the block was read again: in the 25-resident morning
//! about 120 of a request's 330 prompt tokens came from the cache. Here the KV entries of each
//! identity block, once decoded, are copied out of the cache (llama.cpp's sequence state, a few
//! megabytes on the small model) and copied back into the slot of the next request that opens
//! with the same tokens, instead of being read again. The tokens are compared one by one, so a
//! kept prefix is only ever used for the very tokens it was decoded from; the least recently
//! used give way when the store is full.
//!
//! A prompt may also mark where a part that the resident's next prompt opens with too ends
//! ([`crate::llm::ChatMessage::stable`]: a conversation's lines so far, which only grow); that
//! prefix is kept the same way, so the speaker's next line reads only what is new: the two
//! lines since, its memories and its topics. A resident keeps one such prefix (in a group named
//! by its identity's tokens): a newer one replaces it.

use super::Worker;

/// Where a request's reading stops so that what it read so far is kept: the prompt tokens up to
/// there and, for a stable part, the length of the identity that names its group.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct SavePoint {
    /// Prompt tokens read when it is kept.
    pub at: usize,
    /// For a stable part: the tokens of the identity it follows (one kept per identity).
    pub group: Option<usize>,
}

/// Kept prefixes: their tokens and the state to restore (`S`: llama.cpp's sequence state; any
/// value in tests), up to a size in bytes.
pub struct Prefixes<T, S> {
    entries: Vec<Entry<T, S>>,
    bytes: usize,
    max_bytes: usize,
    /// A counter for least-recently-used order.
    clock: u64,
}

struct Entry<T, S> {
    tokens: Vec<T>,
    state: S,
    bytes: usize,
    used: u64,
    /// Its group: its first this many tokens (one entry kept per group).
    group: Option<usize>,
}

impl<T: PartialEq + Clone, S> Prefixes<T, S> {
    /// A store of at most `max_bytes` (0: keeps nothing).
    pub fn new(max_bytes: usize) -> Self {
        Self {
            entries: Vec::new(),
            bytes: 0,
            max_bytes,
            clock: 0,
        }
    }

    /// Whether it keeps anything at all.
    pub fn on(&self) -> bool {
        self.max_bytes > 0
    }

    /// Whether exactly these tokens are kept.
    pub fn holds(&self, tokens: &[T]) -> bool {
        self.entries.iter().any(|e| e.tokens == tokens)
    }

    /// The longest kept prefix of `tokens` shorter than all of them (the last prompt token is
    /// always decoded, for its logits): its tokens and state, marked as used.
    pub fn longest_in(&mut self, tokens: &[T]) -> Option<(&[T], &S)> {
        let i = self
            .entries
            .iter()
            .enumerate()
            .filter(|(_, e)| e.tokens.len() < tokens.len() && tokens.starts_with(&e.tokens))
            .max_by_key(|(_, e)| e.tokens.len())
            .map(|(i, _)| i)?;
        self.clock += 1;
        let e = &mut self.entries[i];
        e.used = self.clock;
        Some((&e.tokens, &e.state))
    }

    /// Keeps a prefix of `bytes` bytes (the least recently used give way); one larger than the
    /// whole store is not kept. With a `group` (its first this many tokens), it replaces the
    /// one kept with the same first tokens in a group of that size.
    pub fn keep(&mut self, tokens: Vec<T>, state: S, bytes: usize, group: Option<usize>) {
        if bytes > self.max_bytes || self.holds(&tokens) {
            return;
        }
        if let Some(n) = group.filter(|n| *n <= tokens.len()) {
            let head = &tokens[..n];
            if let Some(i) = self
                .entries
                .iter()
                .position(|e| e.group == Some(n) && e.tokens.starts_with(head))
            {
                self.bytes -= self.entries.swap_remove(i).bytes;
            }
        }
        while self.bytes + bytes > self.max_bytes {
            let Some(oldest) = (0..self.entries.len()).min_by_key(|i| self.entries[*i].used) else {
                break;
            };
            self.bytes -= self.entries.swap_remove(oldest).bytes;
        }
        self.clock += 1;
        self.bytes += bytes;
        self.entries.push(Entry {
            tokens,
            state,
            bytes,
            used: self.clock,
            group,
        });
    }

    /// Prefixes kept.
    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.entries.len()
    }
}

impl Worker<'_> {
    /// Keeps the prefix of each slot that has just read up to one of its save points.
    pub(super) fn keep_prefixes(&mut self) {
        for s in self.slots.iter_mut() {
            let Some(j) = s.job.as_mut() else { continue };
            let read = s.cached.len();
            let Some(point) = j.save_at.iter().find(|p| p.at == read).copied() else {
                continue;
            };
            j.save_at.retain(|p| p.at > read);
            if self.prefixes.holds(&s.cached) {
                continue;
            }
            if let Ok(state) = self.ctx.state_seq_get(
                s.seq,
                llama_cpp_2::context::session::LlamaStateSeqFlags::empty(),
            ) {
                let bytes = state.byte_len();
                self.prefixes
                    .keep(s.cached.clone(), state, bytes, point.group);
            }
        }
    }
}

/// The first save point still ahead of `read` prompt tokens.
pub(super) fn next_save(points: &[SavePoint], read: usize) -> Option<usize> {
    points.iter().map(|p| p.at).find(|at| *at > read)
}

#[cfg(test)]
mod tests {
    use super::Prefixes;

    #[test]
    fn the_longest_kept_prefix_of_the_very_same_tokens_is_found() {
        let mut p: Prefixes<u32, &str> = Prefixes::new(100);
        p.keep(vec![1, 2, 3], "abc", 10, None);
        p.keep(vec![1, 2, 3, 4, 5], "abcde", 10, None);
        p.keep(vec![7, 8], "gh", 10, None);
        assert_eq!(p.longest_in(&[1, 2, 3, 4, 5, 6]).unwrap().1, &"abcde");
        assert_eq!(p.longest_in(&[1, 2, 3, 9]).unwrap().1, &"abc");
        // Never the whole prompt: its last token must be decoded.
        assert_eq!(p.longest_in(&[1, 2, 3, 4, 5]).unwrap().1, &"abc");
        assert!(p.longest_in(&[2, 3, 4]).is_none(), "a prefix, not a part");
        assert!(p.longest_in(&[1, 2]).is_none());
    }

    #[test]
    fn the_least_recently_used_give_way_when_full() {
        let mut p: Prefixes<u32, u32> = Prefixes::new(30);
        p.keep(vec![1, 1], 1, 10, None);
        p.keep(vec![2, 2], 2, 10, None);
        p.keep(vec![3, 3], 3, 10, None);
        assert!(p.longest_in(&[1, 1, 0]).is_some()); // 1 used: 2 is now the oldest
        p.keep(vec![4, 4], 4, 10, None);
        assert_eq!(p.len(), 3);
        assert!(!p.holds(&[2, 2]) && p.holds(&[1, 1]) && p.holds(&[4, 4]));
        // Kept once; a state larger than the store is not kept; an empty store keeps nothing.
        p.keep(vec![4, 4], 4, 10, None);
        p.keep(vec![5, 5], 5, 31, None);
        assert_eq!(p.len(), 3);
        let mut off: Prefixes<u32, u32> = Prefixes::new(0);
        off.keep(vec![1, 1], 1, 1, None);
        assert!(!off.on() && off.len() == 0);
    }

    #[test]
    fn a_residents_newer_stable_part_replaces_its_older_one_not_its_identity_nor_anothers() {
        let mut p: Prefixes<u32, &str> = Prefixes::new(100);
        // Identities [1, 1] and [2, 2]; their conversations so far, grouped by the identity.
        p.keep(vec![1, 1], "id 1", 10, None);
        p.keep(vec![2, 2], "id 2", 10, None);
        p.keep(vec![1, 1, 5, 6], "1 talks", 10, Some(2));
        p.keep(vec![2, 2, 5, 6], "2 talks", 10, Some(2));
        // Resident 1's next line: its conversation so far, two lines longer.
        assert_eq!(p.longest_in(&[1, 1, 5, 6, 7, 8, 9]).unwrap().1, &"1 talks");
        p.keep(vec![1, 1, 5, 6, 7, 8], "1 talks on", 10, Some(2));
        assert_eq!(p.len(), 4, "the older part gave way");
        assert!(!p.holds(&[1, 1, 5, 6]) && p.holds(&[1, 1]) && p.holds(&[2, 2, 5, 6]));
        assert_eq!(
            p.longest_in(&[1, 1, 5, 6, 7, 8, 9]).unwrap().1,
            &"1 talks on"
        );
        // Another conversation of resident 1 (it does not open with the lines before): its
        // identity is still found, and its new part replaces the last.
        assert_eq!(p.longest_in(&[1, 1, 3, 3]).unwrap().1, &"id 1");
        p.keep(vec![1, 1, 3], "1 talks anew", 10, Some(2));
        assert!(!p.holds(&[1, 1, 5, 6, 7, 8]) && p.holds(&[1, 1, 3]) && p.bytes == 40);
        // The first save point ahead of what was read.
        let points = [
            super::SavePoint { at: 4, group: None },
            super::SavePoint {
                at: 9,
                group: Some(4),
            },
        ];
        assert_eq!(super::next_save(&points, 0), Some(4));
        assert_eq!(super::next_save(&points, 4), Some(9));
        assert_eq!(super::next_save(&points, 9), None);
    }
}
