//! Admission of waiting chats into free slots: the per-request budget, room in the shared KV
//! cache, the choice of slot by shared prefix, prefix reuse or copy, and eviction of idle
//! slots' cached prompts.

use super::{Active, Worker};
use crate::llm::backend::llama::{build_sampler, render_prompt};
use crate::llm::backend::{BackendError, ErrorKind, Work, WorkDone, WorkKind, WorkOutcome};
use crate::llm::forced::Forcer;
use crossbeam_channel::Sender;
use llama_cpp_2::token::LlamaToken;
use std::ops::ControlFlow;
use std::sync::atomic::Ordering;
use std::time::Instant;

/// Identity prefixes (and stable parts beyond them) shorter than this are not kept (copying
/// them back saves little).
const MIN_KEPT_PREFIX: usize = 32;

/// What became of a kept prefix for a new request.
enum Restore {
    /// Copied into the slot: this many prompt tokens need no reading.
    Done(usize),
    /// None kept, or none longer than what the slots' caches offer.
    NotWorth,
    /// Copying failed and the slot's cache was emptied.
    Failed,
}

/// How many of a prompt's `tokens` are its identity prefix (the system message and what the
/// chat template writes before it) and how many end where its stable part does (a message's
/// [`crate::llm::ChatMessage::stable`]: a conversation's lines so far, found after the system
/// message); 0 for either it does not have. Found in the rendered prompt and compared token by
/// token, so each is always a true prefix of `tokens`.
fn kept_lens(
    vocab: &llama_cpp_2::vocab::LlamaVocab,
    prompt: &str,
    messages: &[crate::llm::ChatMessage],
    tokens: &[LlamaToken],
) -> (usize, usize) {
    // Templates may trim the message.
    let system = messages
        .first()
        .filter(|m| m.role == "system" && !m.content.is_empty())
        .map(|m| m.content.trim());
    let (identity, after) = match system.and_then(|c| Some((c, prompt.find(c)?))) {
        Some((c, at)) => (head_len(vocab, prompt, at + c.len(), tokens), at + c.len()),
        None => (0, 0),
    };
    let stable = messages
        .iter()
        .find_map(|m| m.content.get(..m.stable?))
        .map(str::trim_start)
        .filter(|h| !h.is_empty())
        .and_then(|h| Some(after + prompt.get(after..)?.find(h)? + h.len()))
        .map_or(0, |end| head_len(vocab, prompt, end, tokens));
    (identity, stable)
}

/// How many of `tokens` the rendered `prompt` holds up to byte `end`, compared token by token;
/// never all of them.
fn head_len(
    vocab: &llama_cpp_2::vocab::LlamaVocab,
    prompt: &str,
    end: usize,
    tokens: &[LlamaToken],
) -> usize {
    let head = vocab.tokenize(prompt[..end].as_bytes(), false, true);
    shared_prefix(&head, tokens).min(tokens.len().saturating_sub(1))
}

/// The length of the prefix two token lists share.
fn shared_prefix(cached: &[LlamaToken], tokens: &[LlamaToken]) -> usize {
    cached
        .iter()
        .zip(tokens)
        .take_while(|(a, b)| a == b)
        .count()
}

impl Worker<'_> {
    /// Admits waiting chats while a slot is free.
    pub(super) fn admit(&mut self) {
        while self.slots.iter().any(|s| s.job.is_none()) {
            let Some((w, d)) = self.queue.pop_front() else {
                break;
            };
            if self.admit_one(w, d).is_break() {
                break;
            }
        }
    }

    /// Puts one chat into a free slot, or fails it; `Break` when it must wait (put back at the
    /// front of the queue) for the shared KV cache to have room.
    fn admit_one(&mut self, w: Work, d: Sender<WorkDone>) -> ControlFlow<()> {
        // Time waiting here for a slot does not count against the request: its time limit
        // runs from when it reached this worker and is renewed by every decode it takes part in.
        let arrived_at = self.arrived.remove(&w.id).unwrap_or_else(Instant::now);
        if w.cancelled.load(Ordering::Relaxed) {
            return ControlFlow::Continue(());
        }
        let WorkKind::Chat {
            messages,
            shape: shp,
            sampling,
        } = &w.kind
        else {
            return ControlFlow::Continue(());
        };
        let index = self.index;
        let fail = |kind: ErrorKind, msg: String| {
            let _ = d.send(WorkDone {
                id: w.id,
                backend: index,
                endpoint: None,
                outcome: WorkOutcome::Failed(BackendError::new(kind, msg)),
            });
        };
        let prompt = match render_prompt(self.model, &self.template, messages) {
            Ok(p) => p,
            Err(e) => {
                fail(ErrorKind::Fatal, format!("chat template: {e}"));
                return ControlFlow::Continue(());
            }
        };
        let tokens = self.vocab.tokenize(prompt.as_bytes(), false, true);
        let per_request = self.per_request;
        // A prompt that fits leaves what room there is to the answer (an answer cut short
        // is validated like any other); one that does not fit cannot be taken.
        if tokens.is_empty() || tokens.len() + 16 > per_request {
            fail(
                ErrorKind::Fatal,
                format!(
                    "prompt of {} tokens exceeds the per-request budget of {per_request} (llm context / slots{})",
                    tokens.len(),
                    if self.split { "" } else { " / 2" }
                ),
            );
            return ControlFlow::Continue(());
        }
        let max_tokens = sampling.max_tokens.min((per_request - tokens.len()) as u32);
        // Admit only what the shared KV cache can hold to the end (prompt + every token it
        // may generate, beside what the running requests may still need): a request that
        // does not fit waits here instead of overflowing the cache, which would cost a
        // running request all its work.
        let limit = self.cfg.context as usize * 9 / 10;
        let busy_need = self.busy_need();
        let need = tokens.len() + max_tokens as usize;
        if !self.split && busy_need > 0 && busy_need + need > limit {
            self.arrived.insert(w.id, arrived_at);
            self.queue.push_front((w, d));
            return ControlFlow::Break(());
        }
        let sampler = match build_sampler(self.model, shp, sampling) {
            Ok(s) => s,
            Err(e) => {
                fail(ErrorKind::Fatal, e);
                return ControlFlow::Continue(());
            }
        };
        let (slot_i, reuse) = self.choose_slot(&tokens);
        let reuse = self.take_prefix(slot_i, &tokens, reuse);
        // The identity prefix and the stable part are kept once read (unless they are kept
        // already or came from a slot's cache).
        let save_at = if self.prefixes.on() {
            let (identity, stable) = kept_lens(&self.vocab, &prompt, messages, &tokens);
            self.save_points(&tokens, reuse, identity, stable)
        } else {
            Vec::new() // nothing is kept: the prompt's head is not tokenized a second time
        };
        self.make_room(slot_i, busy_need, need, limit);
        let mut job = Active {
            id: w.id,
            done: d.clone(),
            cancelled: w.cancelled.clone(),
            timeout: w
                .deadline
                .saturating_duration_since(arrived_at)
                .max(std::time::Duration::from_secs(1)),
            last_progress: Instant::now(),
            pending: tokens[reuse..].to_vec(),
            sampler,
            watch: if self.cfg.stop_loops {
                super::super::loops::Watch::for_shape(shp)
            } else {
                super::super::loops::Watch::Nothing
            },
            i_batch: None,
            last: None,
            out: Vec::new(),
            n_gen: 0,
            max_tokens: max_tokens.max(1),
            prompt_tokens: tokens.len() as u32,
            cached_tokens: reuse as u32,
            save_at,
            forcer: if self.cfg.write_forced {
                Forcer::for_shape(shp)
            } else {
                Forcer::Free
            },
            prompt_left: tokens.len() - reuse,
        };
        // What the answer must open with is read with the prompt.
        let (forced, whole) = super::take_forced(&self.vocab, &mut job);
        job.pending.extend(forced);
        if whole {
            super::deliver(self.index, job, None, true);
        } else {
            self.slots[slot_i].job = Some(job);
        }
        ControlFlow::Continue(())
    }

    /// Where a prompt's reading stops so that its identity (`identity` tokens) and its stable
    /// part (to `stable`) are kept: each when it is long enough, beyond what the cache gave
    /// (`reuse`) and not kept yet, and (with `batch_invariant`) with two tokens or more read
    /// before and after it.
    fn save_points(
        &self,
        tokens: &[LlamaToken],
        reuse: usize,
        identity: usize,
        stable: usize,
    ) -> Vec<super::prefixes::SavePoint> {
        let gap = if self.exact() { 2 } else { 1 };
        let mut from = reuse;
        let mut points = Vec::new();
        for (at, group) in [(identity, None), (stable, Some(identity))] {
            if at >= MIN_KEPT_PREFIX
                && at >= from + gap
                && tokens.len() >= at + gap
                && group.is_none_or(|n| n >= MIN_KEPT_PREFIX && at >= n + MIN_KEPT_PREFIX)
                && !self.prefixes.holds(&tokens[..at])
            {
                points.push(super::prefixes::SavePoint { at, group });
                from = at;
            }
        }
        points
    }

    /// What the running requests may still need of the KV cache (cached tokens, prompt tokens
    /// still to decode, tokens they may still generate).
    fn busy_need(&self) -> usize {
        self.slots
            .iter()
            .filter_map(|s| {
                s.job.as_ref().map(|j| {
                    s.cached.len() + j.pending.len() + j.max_tokens.saturating_sub(j.n_gen) as usize
                })
            })
            .sum()
    }

    /// The free slot for a prompt and how many of its cached tokens can be kept. With the cache
    /// split by slot and `pack_batches`, the lowest free slot, so that busy slots stay together and llama.cpp
    /// decodes them in one pass (a longer prefix held by another slot, or a kept identity
    /// prefix, is then copied in by [`Self::take_prefix`]); otherwise the one sharing the
    /// longest prefix with it. (Keeping busy slots together before identity prefixes were kept
    /// and before prefixes were copied from idle slots lost more to prompts read again than it
    /// won: a 25-resident planning hour took 330 s against 255 s.)
    fn choose_slot(&self, tokens: &[LlamaToken]) -> (usize, usize) {
        let exact = self.exact();
        let lcp = |s: &super::Slot| shared_prefix(s.reusable(exact), tokens);
        let free = || {
            self.slots
                .iter()
                .enumerate()
                .filter(|(_, s)| s.job.is_none())
        };
        let (slot_i, reuse) = if !self.cfg.prefix_cache {
            (free().next().expect("a free slot exists").0, 0)
        } else if self.split && self.cfg.pack_batches {
            let (i, s) = free().next().expect("a free slot exists");
            (i, lcp(s))
        } else {
            free()
                .map(|(i, s)| (i, lcp(s)))
                .max_by_key(|(_, l)| *l)
                .expect("a free slot exists")
        };
        (slot_i, reuse.min(self.most_reused(tokens)))
    }

    /// The most of a prompt a cache may give: never the whole prompt (the last token must be
    /// decoded for its logits), and with `batch_invariant` never all but one (a token read
    /// alone would take other kernels than in a longer read).
    fn most_reused(&self, tokens: &[LlamaToken]) -> usize {
        tokens
            .len()
            .saturating_sub(if self.exact() { 2 } else { 1 })
    }

    /// Keeps the slot's reusable prefix in the KV cache (or copies a longer one from another
    /// slot, or a kept identity prefix) and drops the rest; returns how many prompt tokens
    /// need no decoding.
    fn take_prefix(&mut self, slot_i: usize, tokens: &[LlamaToken], mut reuse: usize) -> usize {
        let (exact, most) = (self.exact(), self.most_reused(tokens));
        let lcp = |s: &super::Slot| shared_prefix(s.reusable(exact), tokens);
        let seq = self.slots[slot_i].seq;
        // A longer prefix in another slot (busy or not) is copied instead of decoded.
        let donor = if self.cfg.prefix_cache {
            self.slots
                .iter()
                .filter(|s| s.seq != seq)
                .map(|s| (s.seq, lcp(s).min(most)))
                .max_by_key(|(_, l)| *l)
                .filter(|(_, l)| *l >= reuse + 16)
        } else {
            None
        };
        match self.restore_prefix(slot_i, tokens, donor.map_or(reuse, |(_, l)| l), most) {
            Restore::Done(n) => return n,
            Restore::Failed => reuse = 0,
            Restore::NotWorth => {}
        }
        let ctx = &mut self.ctx;
        if let Some((src, l)) = donor {
            let _ = ctx.kv_cache_seq_rm(seq, None, None);
            if self.split {
                // Across streams llama.cpp copies a whole stream (a partial copy would
                // abort): copy it, then cut it back to the shared prefix.
                let _ = ctx.kv_cache_seq_cp(src, seq, None, None);
                let _ = ctx.kv_cache_seq_rm(seq, Some(l as u32), None);
            } else {
                let _ = ctx.kv_cache_seq_cp(src, seq, Some(0), Some(l as u32));
            }
            let prefix = self
                .slots
                .iter()
                .find(|s| s.seq == src)
                .expect("donor exists")
                .cached[..l]
                .to_vec();
            self.slots[slot_i].cached = prefix;
            let donor_read = self
                .slots
                .iter()
                .find(|s| s.seq == src)
                .map_or(0, |s| s.read);
            self.slots[slot_i].read = donor_read.min(l);
            reuse = l;
        } else if ctx.kv_cache_seq_rm(seq, Some(reuse as u32), None).is_err() {
            let _ = ctx.kv_cache_seq_rm(seq, None, None);
            reuse = 0;
        }
        let slot = &mut self.slots[slot_i];
        slot.cached.truncate(reuse);
        slot.read = slot.read.min(reuse);
        reuse
    }

    /// Copies the longest kept prefix of `tokens` (an identity, or a stable part) into the slot
    /// when it is longer than `than` (what the slots' caches offer) by a worthwhile margin.
    fn restore_prefix(
        &mut self,
        slot_i: usize,
        tokens: &[LlamaToken],
        than: usize,
        most: usize,
    ) -> Restore {
        let Worker {
            prefixes,
            ctx,
            slots,
            ..
        } = self;
        let Some((kept, state)) = prefixes.longest_in(tokens) else {
            return Restore::NotWorth;
        };
        if kept.len() < than + 16 || kept.len() > most {
            return Restore::NotWorth;
        }
        let slot = &mut slots[slot_i];
        let _ = ctx.kv_cache_seq_rm(slot.seq, None, None);
        slot.cached.clear();
        slot.read = 0;
        if ctx.state_seq_set(state, slot.seq).is_err() {
            // No room in the slot's part of the cache for it in one piece: read as usual.
            let _ = ctx.kv_cache_seq_rm(slot.seq, None, None);
            return Restore::Failed;
        }
        slot.cached = kept.to_vec();
        slot.read = kept.len(); // a kept prefix is kept once read
        super::work::count_restored(kept.len());
        Restore::Done(kept.len())
    }

    /// Idle slots' cached prompts give way, the biggest first, until the new request fits.
    fn make_room(&mut self, slot_i: usize, busy_need: usize, need: usize, limit: usize) {
        let slots = &mut self.slots;
        let mut idle_cached: Vec<usize> = (0..slots.len())
            .filter(|i| *i != slot_i && slots[*i].job.is_none() && !slots[*i].cached.is_empty())
            .collect();
        idle_cached.sort_by_key(|i| std::cmp::Reverse(slots[*i].cached.len()));
        let mut held: usize = idle_cached.iter().map(|i| slots[*i].cached.len()).sum();
        for i in idle_cached {
            if self.split || busy_need + need + held <= limit {
                break;
            }
            held -= slots[i].cached.len();
            let _ = self.ctx.kv_cache_seq_rm(slots[i].seq, None, None);
            slots[i].cached.clear();
            slots[i].read = 0;
        }
    }
}
