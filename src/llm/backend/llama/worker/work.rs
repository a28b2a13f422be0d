//! What the model ran, counted by every llama worker of the process: decodes, the sequences
//! generating in each (how full the batches were), the prompt tokens read and the tokens
//! generated, and the time spent decoding and sampling. A bench takes a reading before and
//! after the hours it measures and prints the difference beside the bare loop's figures.

use std::fmt::Write as _;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// Upper bounds of the batch-size buckets (sequences generating in one decode): 1, 2–3, 4–7,
/// 8–15, 16 and more.
const BUCKETS: [u64; 5] = [1, 3, 7, 15, u64::MAX];

static DECODES: AtomicU64 = AtomicU64::new(0);
static GENERATED: AtomicU64 = AtomicU64::new(0);
static PROMPT: AtomicU64 = AtomicU64::new(0);
static DECODE_NS: AtomicU64 = AtomicU64::new(0);
static SAMPLE_NS: AtomicU64 = AtomicU64::new(0);
static RUNS: AtomicU64 = AtomicU64::new(0);
static BY_BATCH: [AtomicU64; 5] = [const { AtomicU64::new(0) }; 5];
static THREADS: AtomicU64 = AtomicU64::new(0);
static THREAD_ROUNDS: AtomicU64 = AtomicU64::new(0);
static THREAD_CHANGES: AtomicU64 = AtomicU64::new(0);
static RESTORED: AtomicU64 = AtomicU64::new(0);
static RESTORED_TOKENS: AtomicU64 = AtomicU64::new(0);
static PASSES: AtomicU64 = AtomicU64::new(0);
static FORCED: AtomicU64 = AtomicU64::new(0);
static ENDED_WHOLE: AtomicU64 = AtomicU64::new(0);

/// One decode: `generating` sequences each added their next token, `prompt` prompt tokens were
/// read, its sequences made `runs` runs of consecutive ids (with the cache split by slot,
/// llama.cpp makes a pass over the weights per run), in `took`.
pub(super) fn count_decode(generating: u64, prompt: u64, runs: u64, took: Duration) {
    DECODES.fetch_add(1, Ordering::Relaxed);
    RUNS.fetch_add(runs, Ordering::Relaxed);
    GENERATED.fetch_add(generating, Ordering::Relaxed);
    PROMPT.fetch_add(prompt, Ordering::Relaxed);
    DECODE_NS.fetch_add(took.as_nanos() as u64, Ordering::Relaxed);
    if generating > 0 {
        let b = BUCKETS.iter().position(|&m| generating <= m).unwrap_or(4);
        BY_BATCH[b].fetch_add(1, Ordering::Relaxed);
    }
}

/// A decode was split into `n` passes over the weights (llama.cpp's micro-batches).
pub(super) fn count_passes(n: u64) {
    PASSES.fetch_add(n, Ordering::Relaxed);
}

/// How many passes over the weights llama.cpp makes for a batch whose sequences add `tokens`
/// tokens each, in batch order (each sequence's tokens together, every sequence once), with
/// the cache split by sequence and micro-batches of at most `n_ubatch` tokens. It mirrors
/// llama.cpp's `split_equal(n_ubatch, sequential)`: a micro-batch takes, from the first
/// sequence with tokens left, the sequences whose ids follow one by one in batch order, and the
/// same number of tokens from each (as many as the one with fewest has left).
pub fn passes(batch: &[(i32, usize)], n_ubatch: usize) -> u64 {
    split_equal(batch, n_ubatch).len() as u64
}

/// The passes of [`passes`], each as the sequences in it: (index in `batch`, tokens it takes).
pub(super) fn split_equal(batch: &[(i32, usize)], n_ubatch: usize) -> Vec<Vec<(usize, usize)>> {
    let mut left: Vec<usize> = batch.iter().map(|(_, n)| *n).collect();
    let mut out = Vec::new();
    while let Some(first) = left.iter().position(|l| *l > 0) {
        let mut set = vec![first];
        let mut last = batch[first].0;
        for (i, (seq, _)) in batch.iter().enumerate().skip(first + 1) {
            if left[i] > 0 && *seq == last + 1 {
                set.push(i);
                last = *seq;
                if set.len() > n_ubatch {
                    break;
                }
            }
        }
        let fewest = set.iter().map(|&i| left[i]).min().unwrap_or(0);
        let each = fewest.min((n_ubatch / set.len()).max(1));
        for &i in &set {
            left[i] -= each;
        }
        out.push(set.into_iter().map(|i| (i, each)).collect());
    }
    out
}

/// A decode (or embedding round) ran on `n` threads.
pub(super) fn count_threads(n: i32) {
    THREADS.fetch_add(n.max(0) as u64, Ordering::Relaxed);
    THREAD_ROUNDS.fetch_add(1, Ordering::Relaxed);
}

/// The load changed a worker's thread count.
pub(super) fn count_threads_change() {
    THREAD_CHANGES.fetch_add(1, Ordering::Relaxed);
}

/// A kept identity prefix of `tokens` tokens was copied into a slot instead of being read.
pub(super) fn count_restored(tokens: usize) {
    RESTORED.fetch_add(1, Ordering::Relaxed);
    RESTORED_TOKENS.fetch_add(tokens as u64, Ordering::Relaxed);
}

/// `tokens` tokens an answer's shape forces were written into it instead of sampled.
pub(super) fn count_forced(tokens: usize) {
    FORCED.fetch_add(tokens as u64, Ordering::Relaxed);
}

/// An answer was delivered the moment it was whole (no decode for its end-of-text token).
pub(super) fn count_ended_whole() {
    ENDED_WHOLE.fetch_add(1, Ordering::Relaxed);
}

/// Sampling after a decode (grammar checks included) took `took`.
pub(super) fn count_sampling(took: Duration) {
    SAMPLE_NS.fetch_add(took.as_nanos() as u64, Ordering::Relaxed);
}

/// A reading of the counters (take two and subtract for a stretch of time).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct ModelWork {
    /// Decodes run.
    pub decodes: u64,
    /// Tokens generated (one per generating sequence per decode).
    pub generated: u64,
    /// Prompt tokens read by the model (not those taken from the cache).
    pub prompt: u64,
    /// Time in decodes.
    pub decode_secs: f64,
    /// Time sampling after decodes.
    pub sample_secs: f64,
    /// Decodes with generating sequences, by how many: 1, 2–3, 4–7, 8–15, 16+.
    pub by_batch: [u64; 5],
    /// Runs of consecutive sequence ids, summed over decodes.
    pub runs: u64,
    /// Passes over the weights (llama.cpp's micro-batches), summed over decodes.
    pub passes: u64,
    /// Threads, summed over decodes and embedding rounds.
    pub threads: u64,
    /// Decodes and embedding rounds counted in `threads`.
    pub thread_rounds: u64,
    /// Times the load changed a worker's thread count.
    pub thread_changes: u64,
    /// Kept prefixes (identities, stable parts) copied into a slot instead of being read.
    pub restored: u64,
    /// Prompt tokens those prefixes held.
    pub restored_tokens: u64,
    /// Tokens of answers written because their shape forced them, not sampled.
    pub forced: u64,
    /// Answers delivered the moment they were whole.
    pub ended_whole: u64,
}

/// The counters now.
pub fn model_work() -> ModelWork {
    let ld = |a: &AtomicU64| a.load(Ordering::Relaxed);
    ModelWork {
        decodes: ld(&DECODES),
        generated: ld(&GENERATED),
        prompt: ld(&PROMPT),
        decode_secs: ld(&DECODE_NS) as f64 / 1e9,
        sample_secs: ld(&SAMPLE_NS) as f64 / 1e9,
        by_batch: std::array::from_fn(|i| ld(&BY_BATCH[i])),
        runs: ld(&RUNS),
        passes: ld(&PASSES),
        threads: ld(&THREADS),
        thread_rounds: ld(&THREAD_ROUNDS),
        thread_changes: ld(&THREAD_CHANGES),
        restored: ld(&RESTORED),
        restored_tokens: ld(&RESTORED_TOKENS),
        forced: ld(&FORCED),
        ended_whole: ld(&ENDED_WHOLE),
    }
}

impl ModelWork {
    /// What ran between `earlier` and this reading.
    pub fn since(&self, earlier: &ModelWork) -> ModelWork {
        ModelWork {
            decodes: self.decodes - earlier.decodes,
            generated: self.generated - earlier.generated,
            prompt: self.prompt - earlier.prompt,
            decode_secs: self.decode_secs - earlier.decode_secs,
            sample_secs: self.sample_secs - earlier.sample_secs,
            by_batch: std::array::from_fn(|i| self.by_batch[i] - earlier.by_batch[i]),
            runs: self.runs - earlier.runs,
            passes: self.passes - earlier.passes,
            threads: self.threads - earlier.threads,
            thread_rounds: self.thread_rounds - earlier.thread_rounds,
            thread_changes: self.thread_changes - earlier.thread_changes,
            restored: self.restored - earlier.restored,
            restored_tokens: self.restored_tokens - earlier.restored_tokens,
            forced: self.forced - earlier.forced,
            ended_whole: self.ended_whole - earlier.ended_whole,
        }
    }

    /// Lines for a bench's summary over `wall_secs` of wall time (empty when nothing ran).
    pub fn report(&self, wall_secs: f64) -> String {
        let mut s = String::new();
        if self.decodes == 0 {
            return s;
        }
        let gen_decodes: u64 = self.by_batch.iter().sum();
        let pct = |n: u64| 100.0 * n as f64 / gen_decodes.max(1) as f64;
        let _ = writeln!(
            s,
            "  the model ran {} decodes in {:.0} s ({:.0}% of the wall time) and sampled for {:.0} s: {} prompt tokens read and {} generated, {:.0} tokens a second of decoding",
            self.decodes,
            self.decode_secs,
            100.0 * self.decode_secs / wall_secs.max(1e-9),
            self.sample_secs,
            self.prompt,
            self.generated,
            (self.prompt + self.generated) as f64 / self.decode_secs.max(1e-9)
        );
        let _ = writeln!(
            s,
            "  sequences generating together: {:.1} on average; decodes with 1: {:.0}%, 2–3: {:.0}%, 4–7: {:.0}%, 8–15: {:.0}%, 16+: {:.0}% (bare figures at each size: `simulacra bench llm`)",
            self.generated as f64 / gen_decodes.max(1) as f64,
            pct(self.by_batch[0]),
            pct(self.by_batch[1]),
            pct(self.by_batch[2]),
            pct(self.by_batch[3]),
            pct(self.by_batch[4]),
        );
        let _ = writeln!(
            s,
            "  runs of consecutive sequences per decode: {:.2}; passes over the weights per decode: {:.2} (with the cache split by slot llama.cpp makes one for each run and each share of tokens the sequences have in common)",
            self.runs as f64 / self.decodes as f64,
            self.passes as f64 / self.decodes as f64,
        );
        let _ = writeln!(
            s,
            "  threads per decode: {:.2} on average, changed {} time(s) by the load (`adapt_threads`)",
            self.threads as f64 / self.thread_rounds.max(1) as f64,
            self.thread_changes,
        );
        let _ = writeln!(
            s,
            "  kept prefixes (identities, conversations so far) copied back into the cache instead of read: {} ({} prompt tokens; `kept_prefixes_mb`)",
            self.restored, self.restored_tokens,
        );
        let _ = writeln!(
            s,
            "  answer tokens their shapes forced, read with the token before them instead of sampled: {}; answers ended once whole, without a decode for their end: {} (`write_forced`)",
            self.forced, self.ended_whole,
        );
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passes_follow_llama_cpps_equal_split() {
        // Consecutive sequences with one token each: one pass.
        assert_eq!(passes(&[(0, 1), (1, 1), (2, 1)], 512), 1);
        // A gap in the ids: a pass for each run.
        assert_eq!(passes(&[(0, 1), (1, 1), (5, 1), (6, 1)], 512), 2);
        // Generating 0, 1, 2, 5, 6 and reading 200 prompt tokens for 3: {0, 1, 2, 3} one token
        // each, then {5, 6}, then the rest of 3's prompt.
        assert_eq!(
            passes(&[(0, 1), (1, 1), (2, 1), (5, 1), (6, 1), (3, 200)], 512),
            3
        );
        // Two prompts side by side: a share in common, then the longer one's rest.
        assert_eq!(passes(&[(3, 100), (4, 300)], 512), 2);
        // One long prompt in micro-batches of 512.
        assert_eq!(passes(&[(0, 1000)], 512), 2);
        assert_eq!(passes(&[], 512), 0);
    }

    #[test]
    fn a_stretch_is_the_difference_of_two_readings_and_batches_fall_in_their_buckets() {
        let a = model_work();
        count_decode(1, 100, 1, Duration::from_millis(10));
        count_decode(9, 0, 2, Duration::from_millis(10));
        count_decode(0, 50, 1, Duration::from_millis(10));
        count_sampling(Duration::from_millis(5));
        count_restored(200);
        count_forced(7);
        count_ended_whole();
        let d = model_work().since(&a);
        // Other tests may decode at the same time: at least what this one counted.
        assert!(d.decodes >= 3 && d.generated >= 10 && d.prompt >= 150 && d.runs >= 4);
        assert!(d.by_batch[0] >= 1 && d.by_batch[3] >= 1);
        assert!(d.restored >= 1 && d.restored_tokens >= 200);
        assert!(d.forced >= 7 && d.ended_whole >= 1);
        assert!(d.report(1.0).contains("decodes"));
        assert_eq!(ModelWork::default().report(1.0), "");
    }
}
