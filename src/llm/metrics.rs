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
    /// Answers that did not fit their shape.
    pub parse_failures: u64,
    /// Requests answered with the fail-safe.
    pub fallbacks: u64,
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

    /// Sum over purposes (latencies not merged).
    pub fn total(&self) -> PurposeStats {
        let mut t = PurposeStats::default();
        for p in self.by_purpose.values() {
            t.calls += p.calls;
            t.prompt_tokens += p.prompt_tokens;
            t.cached_prompt_tokens += p.cached_prompt_tokens;
            t.gen_tokens += p.gen_tokens;
            t.cache_hits += p.cache_hits;
            t.failures += p.failures;
            t.retries += p.retries;
            t.parse_failures += p.parse_failures;
            t.fallbacks += p.fallbacks;
        }
        t
    }

    /// A table for the terminal.
    pub fn table(&self) -> String {
        let mut s = String::new();
        let _ = writeln!(
            s,
            "{:<20} {:>7} {:>9} {:>8} {:>8} {:>6} {:>8} {:>8} {:>6} {:>6} {:>6}",
            "purpose", "calls", "prompt", "cached", "gen", "hits", "p50 ms", "p95 ms", "fail", "parse", "safe"
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
    }
}
