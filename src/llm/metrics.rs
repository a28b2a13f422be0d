//! Per-purpose LLM metrics: calls, tokens, cache hits, latency percentiles, failures, retries
//! and fail-safe answers. Shown in the HUD and printed at the end of headless runs.

use std::collections::BTreeMap;
use std::fmt::Write;
use std::time::Duration;

/// Counters for one purpose label.
#[derive(Debug, Clone, Default)]
pub struct PurposeStats {
    /// Requests submitted.
    pub calls: u64,
    /// Prompt tokens processed by a model.
    pub prompt_tokens: u64,
    /// Prompt tokens not decoded again thanks to a cached prefix.
    pub cached_prompt_tokens: u64,
    /// Tokens generated.
    pub gen_tokens: u64,
    /// Answered from the cache.
    pub cache_hits: u64,
    /// Failed attempts (timeouts, HTTP errors, invalid answers).
    pub failures: u64,
    /// Attempts repeated after a failure.
    pub retries: u64,
    /// Of those, repeated after an answer that did not fit its shape (sampled, in twice the
    /// room, what was wrong said).
    pub retries_after_shape: u64,
    /// Of those, repeated after an answer stopped in a loop (sampled, the loop said); the rest
    /// were after a timeout or a backend's error (the same request again).
    pub retries_after_loop: u64,
    /// Answers that did not fit their shape.
    pub parse_failures: u64,
    /// Answers stopped while they went round in a loop (counting "1, 2, 3, …"; a failed attempt).
    pub loops_stopped: u64,
    /// Requests answered with the fail-safe.
    pub fallbacks: u64,
    /// Answers not asked for because one given before was reused (not counted in `calls`).
    pub reused: u64,
    /// Last error seen.
    pub last_error: Option<String>,
    latencies_ms: Vec<f32>,
}

impl PurposeStats {
    /// Adds a latency sample (the last 2,000 are kept).
    pub fn record_latency(&mut self, d: Duration) {
        if self.latencies_ms.len() >= 2000 {
            self.latencies_ms.remove(0);
        }
        self.latencies_ms.push(d.as_secs_f32() * 1000.0);
    }

    /// Answers timed (the last 2,000 kept): with [`LlmStats::since`], those of the calls since.
    pub fn answered(&self) -> usize {
        self.latencies_ms.len()
    }

    /// The q-quantile latency in milliseconds (q in 0..=1).
    pub fn latency_ms(&self, q: f32) -> Option<f32> {
        if self.latencies_ms.is_empty() {
            return None;
        }
        let mut v = self.latencies_ms.clone();
        v.sort_by(|a, b| a.total_cmp(b));
        let i = ((v.len() - 1) as f32 * q).round() as usize;
        Some(v[i])
    }
}

/// All purposes.
#[derive(Debug, Clone, Default)]
pub struct LlmStats {
    /// By purpose label.
    pub by_purpose: BTreeMap<String, PurposeStats>,
}

impl LlmStats {
    /// The counters of a purpose (created on first use).
    pub fn purpose(&mut self, p: &str) -> &mut PurposeStats {
        self.by_purpose.entry(p.to_string()).or_default()
    }

    /// The counts since an earlier snapshot, with the latencies recorded since (all that are
    /// kept, when more than the 2,000 kept were recorded).
    pub fn since(&self, earlier: &LlmStats) -> LlmStats {
        let mut out = LlmStats::default();
        for (name, p) in &self.by_purpose {
            let e = earlier.by_purpose.get(name).cloned().unwrap_or_default();
            let d = out.purpose(name);
            d.calls = p.calls - e.calls;
            d.prompt_tokens = p.prompt_tokens - e.prompt_tokens;
            d.cached_prompt_tokens = p.cached_prompt_tokens - e.cached_prompt_tokens;
            d.gen_tokens = p.gen_tokens - e.gen_tokens;
            d.cache_hits = p.cache_hits - e.cache_hits;
            d.failures = p.failures - e.failures;
            d.retries = p.retries - e.retries;
            d.retries_after_shape = p.retries_after_shape - e.retries_after_shape;
            d.retries_after_loop = p.retries_after_loop - e.retries_after_loop;
            d.parse_failures = p.parse_failures - e.parse_failures;
            d.loops_stopped = p.loops_stopped - e.loops_stopped;
            d.fallbacks = p.fallbacks - e.fallbacks;
            d.reused = p.reused - e.reused;
            d.last_error = p.last_error.clone();
            let new = (p.calls - e.calls) as usize;
            d.latencies_ms = p.latencies_ms[p.latencies_ms.len().saturating_sub(new)..].to_vec();
        }
        out.by_purpose.retain(|_, p| p.calls > 0 || p.reused > 0);
        out
    }

    /// Sum over purposes (latencies not merged).
    pub fn total(&self) -> PurposeStats {
        self.sum_where(|_| true)
    }

    /// The cost per agent per game hour, by purpose and in total: calls, prompt and generated
    /// tokens (chat work; embeddings are counted apart), the prompt tokens taken from the prefix
    /// cache rather than read, answer-cache hits and fail-safe answers.
    pub fn per_agent_hour(&self, agents: usize, game_hours: f64) -> String {
        let d = (agents.max(1) as f64 * game_hours).max(1e-9);
        let mut s = String::new();
        let _ = writeln!(
            s,
            "per agent per game hour ({agents} agents × {game_hours:.2} game hours):"
        );
        let _ = writeln!(
            s,
            "{:<20} {:>8} {:>10} {:>9} {:>9} {:>7} {:>6} {:>8} {:>9}",
            "purpose",
            "calls",
            "prompt tok",
            "of cache",
            "gen tok",
            "hits",
            "safe",
            "retried",
            "p50 wait"
        );
        let row = |s: &mut String, name: &str, p: &PurposeStats| {
            let _ = writeln!(
                s,
                "{:<20} {:>8.2} {:>10.0} {:>9.0} {:>9.0} {:>7.2} {:>6.2} {:>8} {:>9}",
                name,
                p.calls as f64 / d,
                p.prompt_tokens as f64 / d,
                p.cached_prompt_tokens as f64 / d,
                p.gen_tokens as f64 / d,
                p.cache_hits as f64 / d,
                p.fallbacks as f64 / d,
                p.retries,
                p.latency_ms(0.5)
                    .map(|ms| format!("{:.2} s", ms / 1000.0))
                    .unwrap_or_else(|| "-".into())
            );
        };
        for (name, p) in &self.by_purpose {
            row(&mut s, name, p);
        }
        row(&mut s, "all chat requests", &self.chat_total());
        row(&mut s, "all embeddings", &self.embed_total());
        let t = self.total();
        if t.failures > 0 {
            let _ = writeln!(
                s,
                "  failed attempts by cause: {} answers not in their shape, {} stopped going round in a loop, {} timeouts or backend errors; retried: {} after an answer not in its shape (sampled, twice the room, what was wrong said), {} after a loop (sampled, the loop said), {} after a timeout or error (as asked); {} fail-safe",
                t.parse_failures,
                t.loops_stopped,
                t.failures
                    .saturating_sub(t.parse_failures + t.loops_stopped),
                t.retries_after_shape,
                t.retries_after_loop,
                t.retries
                    .saturating_sub(t.retries_after_shape + t.retries_after_loop),
                t.fallbacks
            );
        }
        let reused: Vec<String> = self
            .by_purpose
            .iter()
            .filter(|(_, p)| p.reused > 0)
            .map(|(name, p)| format!("{name} {:.2}", p.reused as f64 / d))
            .collect();
        if !reused.is_empty() {
            let _ = writeln!(
                s,
                "  answers reused instead of asked (per agent per game hour): {}",
                reused.join(", ")
            );
        }
        for (name, p) in &self.by_purpose {
            if let Some(e) = p.last_error.as_ref().filter(|_| p.failures > 0) {
                let _ = writeln!(
                    s,
                    "  {name}: {} failed attempt(s), the last: {e}",
                    p.failures
                );
            }
        }
        s
    }

    /// Whether a purpose is embedding work (its name is "embed" or ends in "_query").
    pub fn is_embedding(purpose: &str) -> bool {
        purpose == "embed" || purpose.ends_with("_query")
    }

    fn sum_where(&self, keep: impl Fn(&str) -> bool) -> PurposeStats {
        let mut t = PurposeStats::default();
        for (_, p) in self.by_purpose.iter().filter(|(n, _)| keep(n)) {
            t.calls += p.calls;
            t.prompt_tokens += p.prompt_tokens;
            t.cached_prompt_tokens += p.cached_prompt_tokens;
            t.gen_tokens += p.gen_tokens;
            t.cache_hits += p.cache_hits;
            t.failures += p.failures;
            t.retries += p.retries;
            t.retries_after_shape += p.retries_after_shape;
            t.retries_after_loop += p.retries_after_loop;
            t.parse_failures += p.parse_failures;
            t.loops_stopped += p.loops_stopped;
            t.fallbacks += p.fallbacks;
            t.reused += p.reused;
        }
        t
    }

    /// All chat (not embedding) requests together.
    pub fn chat_total(&self) -> PurposeStats {
        self.sum_where(|n| !Self::is_embedding(n))
    }

    /// All embedding requests together.
    pub fn embed_total(&self) -> PurposeStats {
        self.sum_where(Self::is_embedding)
    }

    /// A table for the terminal.
    pub fn table(&self) -> String {
        let mut s = String::new();
        let _ = writeln!(
            s,
            "{:<20} {:>7} {:>9} {:>8} {:>8} {:>6} {:>8} {:>8} {:>6} {:>6} {:>6}",
            "purpose",
            "calls",
            "prompt",
            "cached",
            "gen",
            "hits",
            "p50 ms",
            "p95 ms",
            "fail",
            "parse",
            "safe"
        );
        for (name, p) in &self.by_purpose {
            let f = |x: Option<f32>| x.map(|v| format!("{v:.0}")).unwrap_or_else(|| "-".into());
            let _ = writeln!(
                s,
                "{:<20} {:>7} {:>9} {:>8} {:>8} {:>6} {:>8} {:>8} {:>6} {:>6} {:>6}",
                name,
                p.calls,
                p.prompt_tokens,
                p.cached_prompt_tokens,
                p.gen_tokens,
                p.cache_hits,
                f(p.latency_ms(0.5)),
                f(p.latency_ms(0.95)),
                p.failures,
                p.parse_failures,
                p.fallbacks
            );
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles() {
        let mut p = PurposeStats::default();
        assert_eq!(p.latency_ms(0.5), None);
        for ms in 1..=100 {
            p.record_latency(Duration::from_millis(ms));
        }
        assert!((p.latency_ms(0.5).unwrap() - 50.0).abs() <= 1.0);
        assert!((p.latency_ms(0.95).unwrap() - 95.0).abs() <= 1.0);
        // A stretch keeps the latencies recorded in it.
        let mut stats = LlmStats::default();
        stats.purpose("converse").calls = 2;
        stats
            .purpose("converse")
            .record_latency(Duration::from_millis(900));
        stats
            .purpose("converse")
            .record_latency(Duration::from_millis(1000));
        let before = stats.clone();
        stats.purpose("converse").calls = 3;
        stats
            .purpose("converse")
            .record_latency(Duration::from_millis(4000));
        let d = stats.since(&before);
        assert_eq!(d.by_purpose["converse"].latency_ms(0.5), Some(4000.0));
        assert!(d.per_agent_hour(1, 1.0).contains("4.00 s"));
    }
}
