//! Reflection's arithmetic: when to reflect, what to reflect on, and how cited evidence maps
//! back to memories. Every perceived event lowers a counter by its importance; when the counter
//! reaches zero (the summed importance since the last reflection passed the threshold, 150 by
//! default) the agent reflects and the counter starts again. Thoughts and chats do not count.

use super::stream::{MemoryNode, MemoryStream, NodeId, NodeKind};
use serde::{Deserialize, Serialize};

/// The reflection trigger of one agent.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReflectionTrigger {
    /// Summed importance that triggers a reflection.
    pub threshold: u32,
    /// Counts down from the threshold.
    pub remaining: i64,
    /// Events counted since the last reflection.
    pub events: u32,
    /// Reflections begun (the paper's "roughly two or three times a day"; `bench day` and the
    /// lab report them per resident per day).
    #[serde(default)]
    pub begun: u32,
}

impl ReflectionTrigger {
    /// A fresh trigger.
    pub fn new(threshold: u32) -> Self {
        Self {
            threshold,
            remaining: threshold as i64,
            events: 0,
            begun: 0,
        }
    }

    /// Counts one event's (final) importance; true when a reflection is due.
    pub fn record(&mut self, importance: u8) -> bool {
        self.remaining -= importance as i64;
        self.events += 1;
        self.due()
    }

    /// Whether the threshold has been passed.
    pub fn due(&self) -> bool {
        self.remaining <= 0
    }

    /// Starts counting again (when a reflection begins).
    pub fn reset(&mut self) {
        self.remaining = self.threshold as i64;
        self.events = 0;
    }
}

/// Reflections begun per resident per game day, in words: "median 4.0 (2.0–6.0; 100 in all)"
/// from each resident's count over `hours` game hours; `None` with no resident or no hours.
pub fn per_day_words(counts: &[u32], hours: f64) -> Option<String> {
    if counts.is_empty() || hours <= 0.0 {
        return None;
    }
    let mut v = counts.to_vec();
    v.sort();
    let per_day = |n: u32| n as f64 * 24.0 / hours;
    Some(format!(
        "median {:.1} ({:.1}–{:.1}; {} in all)",
        per_day(v[v.len() / 2]),
        per_day(v[0]),
        per_day(v[v.len() - 1]),
        v.iter().sum::<u32>()
    ))
}

/// The newest `n` memories a reflection looks at: events and thoughts, not idle ones, newest
/// first (the paper's "100 most recent records").
pub fn reflection_material(stream: &MemoryStream, n: usize) -> Vec<&MemoryNode> {
    stream
        .nodes()
        .iter()
        .rev()
        .filter(|x| x.kind != NodeKind::Chat && !x.is_idle())
        .take(n)
        .collect()
}

/// Maps the 1-based statement numbers a model cited to the memories that were shown under
/// those numbers; numbers outside the list are dropped, duplicates kept once.
pub fn cited_ids(shown: &[NodeId], cited: &[i64]) -> Vec<NodeId> {
    let mut out = Vec::new();
    for c in cited {
        if let Some(id) = usize::try_from(*c)
            .ok()
            .and_then(|i| i.checked_sub(1))
            .and_then(|i| shown.get(i))
            && !out.contains(id)
        {
            out.push(*id);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::memory::stream::NewNode;
    use crate::sim::time::GameTime;

    #[test]
    fn reflections_per_day_are_the_median_resident_over_the_hours() {
        assert_eq!(
            per_day_words(&[1, 3, 2], 12.0).as_deref(),
            Some("median 4.0 (2.0–6.0; 6 in all)")
        );
        assert_eq!(per_day_words(&[], 12.0), None);
        assert_eq!(per_day_words(&[1], 0.0), None);
    }

    #[test]
    fn trigger_counts_down_and_resets() {
        let mut t = ReflectionTrigger::new(150);
        for _ in 0..18 {
            assert!(!t.record(8)); // 144
        }
        assert_eq!(t.remaining, 6);
        assert!(!t.record(5)); // 149: not yet
        assert!(t.record(1), "exactly 150 triggers");
        assert_eq!(t.events, 20);
        t.reset();
        assert_eq!((t.remaining, t.events), (150, 0));
        assert!(!t.due());
        let mut small = ReflectionTrigger::new(10);
        assert!(small.record(10));
        assert!(small.record(3), "stays due until reset");
    }

    #[test]
    fn material_skips_idle_and_chats() {
        let mut m = MemoryStream::default();
        let now = GameTime::parse("2023-02-13 08:00").unwrap();
        m.add(
            NodeKind::Event,
            NewNode {
                description: "a".into(),
                ..Default::default()
            },
            now,
        );
        m.add(
            NodeKind::Event,
            NewNode {
                description: "bed is idle".into(),
                predicate: "is idle".into(),
                ..Default::default()
            },
            now,
        );
        m.add(
            NodeKind::Chat,
            NewNode {
                description: "talk".into(),
                ..Default::default()
            },
            now,
        );
        m.add(
            NodeKind::Thought,
            NewNode {
                description: "b".into(),
                ..Default::default()
            },
            now,
        );
        let got: Vec<&str> = reflection_material(&m, 100)
            .iter()
            .map(|n| n.description.as_str())
            .collect();
        assert_eq!(got, vec!["b", "a"]);
        assert_eq!(reflection_material(&m, 1).len(), 1);
    }

    #[test]
    fn citations_map_to_shown_ids() {
        let shown = [NodeId(7), NodeId(3), NodeId(9)];
        assert_eq!(
            cited_ids(&shown, &[1, 3, 3, 0, 4, -2]),
            vec![NodeId(7), NodeId(9)]
        );
        assert!(cited_ids(&shown, &[]).is_empty());
    }
}
