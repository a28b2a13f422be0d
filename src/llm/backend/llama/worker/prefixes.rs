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
    /// whole store is not kept.
    pub fn keep(&mut self, tokens: Vec<T>, state: S, bytes: usize) {
        if bytes > self.max_bytes || self.holds(&tokens) {
            return;
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
        });
    }

    /// Prefixes kept.
    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.entries.len()
    }
}

#[cfg(test)]
mod tests {
    use super::Prefixes;

    #[test]
    fn the_longest_kept_prefix_of_the_very_same_tokens_is_found() {
        let mut p: Prefixes<u32, &str> = Prefixes::new(100);
        p.keep(vec![1, 2, 3], "abc", 10);
        p.keep(vec![1, 2, 3, 4, 5], "abcde", 10);
        p.keep(vec![7, 8], "gh", 10);
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
        p.keep(vec![1, 1], 1, 10);
        p.keep(vec![2, 2], 2, 10);
        p.keep(vec![3, 3], 3, 10);
        assert!(p.longest_in(&[1, 1, 0]).is_some()); // 1 used: 2 is now the oldest
        p.keep(vec![4, 4], 4, 10);
        assert_eq!(p.len(), 3);
        assert!(!p.holds(&[2, 2]) && p.holds(&[1, 1]) && p.holds(&[4, 4]));
        // Kept once; a state larger than the store is not kept; an empty store keeps nothing.
        p.keep(vec![4, 4], 4, 10);
        p.keep(vec![5, 5], 5, 31);
        assert_eq!(p.len(), 3);
        let mut off: Prefixes<u32, u32> = Prefixes::new(0);
        off.keep(vec![1, 1], 1, 1);
        assert!(!off.on() && off.len() == 0);
    }
}
