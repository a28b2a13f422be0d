//! Interview answers judged: two answers to the same question compared by a judge model at a
//! time, and the conditions ranked by TrueSkill over the comparisons.

use crate::cognition::config::Ablation;
use crate::lab::report::stats::{KruskalWallis, Outcome, Rating, kruskal_wallis, ratings};
use bevy::prelude::*;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use std::collections::BTreeMap;

/// The name of a condition in reports.
pub fn condition_name(c: &str) -> String {
    match c {
        "Full" => Ablation::Full.label().into(),
        "NoReflection" => Ablation::NoReflection.label().into(),
        "NoReflectionNoPlanning" => Ablation::NoReflectionNoPlanning.label().into(),
        "NoMemory" => Ablation::NoMemory.label().into(),
        "Human" => "human-written".into(),
        other => other.into(),
    }
}

/// One answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Answered {
    /// The condition (`Full`, …, `Human`).
    pub condition: String,
    /// The resident.
    pub resident: String,
    /// The category.
    pub category: String,
    /// The question as asked.
    pub question: String,
    /// The answer.
    pub answer: String,
    /// The model gave no valid answer.
    pub fallback: bool,
}

/// One judged pair.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Judged {
    /// The resident and question.
    pub resident: String,
    /// The question.
    pub question: String,
    /// Shown as A.
    pub a: String,
    /// Shown as B.
    pub b: String,
    /// "A", "B", "same", or "invalid" (counted as a tie).
    pub verdict: String,
}

/// Who the judge is (its prompt's identity block).
pub const JUDGE: &str = "You compare answers given in interviews with the people of a small town, and say which sounds more like the person really living their life.";

/// The judge's schema.
pub fn judge_schema() -> Value {
    json!({
        "type": "object",
        "properties": {"better": {"type": "string", "enum": ["A", "B", "same"]}},
        "required": ["better"],
        "additionalProperties": false
    })
}

/// Ratings, per-question scores and the test, by condition.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Ranking {
    /// Conditions, in the order of the report.
    pub conditions: Vec<String>,
    /// TrueSkill per condition.
    pub ratings: Vec<Rating>,
    /// Wins, ties, losses per condition.
    pub record: Vec<(usize, usize, usize)>,
    /// Kruskal–Wallis over the per-question scores.
    pub test: Option<KruskalWallis>,
    /// Judge answers that were no valid preference (ties).
    pub invalid: usize,
}

/// Rates the conditions from the judgements (taken in an order drawn by `seed`).
pub fn rank(conditions: &[String], judged: &[Judged], seed: u32) -> Ranking {
    let idx = |c: &str| conditions.iter().position(|x| x == c);
    let mut games: Vec<(u32, usize, usize, Outcome)> = judged
        .iter()
        .enumerate()
        .filter_map(|(k, j)| {
            let (a, b) = (idx(&j.a)?, idx(&j.b)?);
            let o = match j.verdict.as_str() {
                "A" => Outcome::Win,
                "B" => Outcome::Loss,
                _ => Outcome::Draw,
            };
            let order = crate::sim::hash::fnv1a_32(format!("{seed}|{k}").as_bytes());
            Some((order, a, b, o))
        })
        .collect();
    games.sort_by_key(|g| g.0);
    let list: Vec<(usize, usize, Outcome)> = games.iter().map(|g| (g.1, g.2, g.3)).collect();
    let r = ratings(conditions.len(), &list);
    let mut record = vec![(0, 0, 0); conditions.len()];
    let mut score: BTreeMap<(String, String), Vec<f64>> = BTreeMap::new();
    for j in judged {
        let (Some(a), Some(b)) = (idx(&j.a), idx(&j.b)) else {
            continue;
        };
        let s = score
            .entry((j.resident.clone(), j.question.clone()))
            .or_insert_with(|| vec![0.0; conditions.len()]);
        match j.verdict.as_str() {
            "A" => {
                record[a].0 += 1;
                record[b].2 += 1;
                s[a] += 1.0;
            }
            "B" => {
                record[b].0 += 1;
                record[a].2 += 1;
                s[b] += 1.0;
            }
            _ => {
                record[a].1 += 1;
                record[b].1 += 1;
                s[a] += 0.5;
                s[b] += 0.5;
            }
        }
    }
    let groups: Vec<Vec<f64>> = (0..conditions.len())
        .map(|c| score.values().map(|s| s[c]).collect())
        .collect();
    Ranking {
        conditions: conditions.to_vec(),
        ratings: r,
        record,
        test: kruskal_wallis(&groups),
        invalid: judged.iter().filter(|j| j.verdict == "invalid").count(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn j(a: &str, b: &str, verdict: &str) -> Judged {
        Judged {
            resident: "R".into(),
            question: "Q".into(),
            a: a.into(),
            b: b.into(),
            verdict: verdict.into(),
        }
    }

    #[test]
    fn fixed_preferences_give_the_hand_computed_ratings() {
        let c = vec!["Full".to_string(), "NoMemory".to_string()];
        // One comparison, Full preferred: the published one-win values.
        let r = rank(&c, &[j("NoMemory", "Full", "B")], 7);
        assert!((r.ratings[0].mu - 29.396).abs() < 2e-3, "{r:?}");
        assert!((r.ratings[1].mu - 20.604).abs() < 2e-3, "{r:?}");
        assert_eq!(r.record, vec![(1, 0, 0), (0, 0, 1)]);
        // An answer that is no valid preference is a tie, and counted.
        let r = rank(&c, &[j("Full", "NoMemory", "invalid")], 7);
        assert!((r.ratings[0].mu - 25.0).abs() < 1e-9 && (r.ratings[0].sigma - 6.458).abs() < 2e-3);
        assert_eq!(r.invalid, 1);
        assert_eq!(r.record, vec![(0, 1, 0), (0, 1, 0)]);
    }
}
