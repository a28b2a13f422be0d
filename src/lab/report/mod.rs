//! What every report folder holds besides its own tables: what it cost (wall time, requests and
//! tokens by purpose, per agent per game hour), tables and CSV, the note on the model (what was
//! run is kept by `runs::inputs`).

pub mod plot;
pub mod stats;

use crate::config::GameConfig;
use crate::llm::Llm;
use crate::llm::config::BackendConfig;
use crate::llm::metrics::LlmStats;
use bevy::prelude::*;
use serde::{Deserialize, Serialize};
use std::fmt::Write;

/// The cost of a phase.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Cost {
    /// What it was ("2 game days of the town", "awareness probes").
    pub phase: String,
    /// Wall seconds.
    pub wall_s: f64,
    /// Residents.
    pub agents: usize,
    /// Game hours simulated (0 for questions asked of a still town).
    pub game_hours: f64,
    /// Chat requests.
    pub chat_calls: u64,
    /// Prompt tokens.
    pub prompt_tokens: u64,
    /// Generated tokens.
    pub gen_tokens: u64,
    /// Embedding requests.
    pub embed_calls: u64,
    /// Fail-safe answers.
    pub fallbacks: u64,
    /// The table by purpose (and per agent per game hour, for a run).
    pub table: String,
    /// Only in a run's data while a sitting runs ([`crate::lab::town::Sitting`]): the game step this cost
    /// counts to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub to_step: Option<u64>,
    /// Only in a run's data while a sitting runs: the sitting's cost written with the checkpoint
    /// before.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub before: Option<Box<Cost>>,
}

impl Cost {
    /// The same cost, its phase named after `prefix` ("town 3: 48 game hours of the town").
    pub fn prefixed(&self, prefix: &str) -> Self {
        Self {
            phase: format!("{prefix}: {}", self.phase),
            ..self.clone()
        }
    }

    /// This cost, a sitting's at game step `step`, as a run's data keeps it in place of `kept`
    /// (the cost written with the checkpoint before).
    pub fn keeping(mut self, step: u64, kept: Option<Cost>) -> Self {
        self.to_step = Some(step);
        self.before = kept.map(|mut k| {
            k.before = None;
            Box::new(k)
        });
        self
    }

    /// The sitting's cost that a resume from a checkpoint at game step `step` keeps. A run's data
    /// is written just before its checkpoint, so a stop between the two leaves data a stretch
    /// ahead of the checkpoint; that stretch is run again, and keeping it here too would count it
    /// twice. So: this cost if it counts to `step` or before (or does not say, written by an
    /// older build), else the one written with the checkpoint before if that one does, else none.
    pub fn at_checkpoint(self, step: u64) -> Option<Self> {
        let within = |c: &Cost| c.to_step.is_none_or(|s| s <= step);
        let plain = |c: Cost| Self {
            to_step: None,
            before: None,
            ..c
        };
        if within(&self) {
            return Some(plain(self));
        }
        self.before.map(|b| *b).filter(within).map(plain)
    }

    /// The cost of the requests in `stats` (since a snapshot) over `wall_s`.
    pub fn of(phase: &str, stats: &LlmStats, wall_s: f64, agents: usize, game_hours: f64) -> Self {
        let chat = stats.chat_total();
        let embed = stats.embed_total();
        let mut table = stats.table();
        if game_hours > 0.0 {
            table.push_str(&stats.per_agent_hour(agents, game_hours));
        }
        Self {
            phase: phase.into(),
            wall_s,
            agents,
            game_hours,
            chat_calls: chat.calls,
            prompt_tokens: chat.prompt_tokens,
            gen_tokens: chat.gen_tokens,
            embed_calls: embed.calls,
            fallbacks: chat.fallbacks,
            table,
            to_step: None,
            before: None,
        }
    }

    /// One row of the cost table.
    pub fn row(&self) -> String {
        self.row_rated(self)
    }

    /// One row, its requests and tokens per agent per game hour those of `rate` (for the sum of
    /// all phases: those of the phases that ran game hours, without questions asked of a still
    /// town).
    fn row_rated(&self, rate: &Cost) -> String {
        let per = (rate.agents.max(1) as f64 * rate.game_hours).max(1e-9);
        let per_hour = if rate.game_hours > 0.0 {
            format!(
                "{:.1} / {:.0}",
                rate.chat_calls as f64 / per,
                (rate.prompt_tokens + rate.gen_tokens) as f64 / per
            )
        } else {
            "–".into()
        };
        format!(
            "| {} | {} | {} | {} | {} | {} | {} |",
            self.phase,
            crate::lab::report::stats::clock_words(self.wall_s),
            self.chat_calls,
            self.prompt_tokens + self.gen_tokens,
            self.embed_calls,
            self.fallbacks,
            per_hour
        )
    }
}

/// A town's costs, each phase named after the town ("town 3: …") when the run has `several`.
pub fn labelled(seed: u32, several: bool, costs: &[Cost]) -> Vec<Cost> {
    let town = format!("town {seed}");
    costs
        .iter()
        .map(|c| {
            if several {
                c.prefixed(&town)
            } else {
                c.clone()
            }
        })
        .collect()
}

/// The cost table of a report.
pub fn cost_section(costs: &[Cost]) -> String {
    let mut s = String::from(
        "## Cost\n\n| phase | wall time | chat requests | tokens | embeddings | fail-safe answers | requests / tokens per agent per game hour |\n|---|---|---|---|---|---|---|\n",
    );
    for c in costs {
        s.push_str(&c.row());
        s.push('\n');
    }
    if costs.len() > 1 {
        let hours: Vec<Cost> = costs
            .iter()
            .filter(|c| c.game_hours > 0.0)
            .cloned()
            .collect();
        let all = total(costs).row_rated(&total(&hours));
        s.push_str(&all);
        s.push('\n');
        s.push_str(&wall_by_town(costs));
    }
    s.push_str("\nBy purpose (`lab_*` are the lab's own questions and judging):\n\n");
    for c in costs {
        let _ = write!(s, "{}:\n\n```\n{}```\n\n", c.phase, c.table);
    }
    s
}

/// The phases summed (their wall times too: phases run one after another).
fn total(costs: &[Cost]) -> Cost {
    let mut t = Cost {
        phase: "**all**".into(),
        ..Default::default()
    };
    for c in costs {
        t.wall_s += c.wall_s;
        t.agents = t.agents.max(c.agents);
        t.game_hours += c.game_hours;
        t.chat_calls += c.chat_calls;
        t.prompt_tokens += c.prompt_tokens;
        t.gen_tokens += c.gen_tokens;
        t.embed_calls += c.embed_calls;
        t.fallbacks += c.fallbacks;
    }
    t
}

/// With several towns (phases named "town N: …"), each town's phases summed: towns run side by
/// side (`--together`) take about the longest, one after another the sum (the "all" row).
/// Empty for a run of one town.
fn wall_by_town(costs: &[Cost]) -> String {
    let mut towns: Vec<(String, f64)> = Vec::new();
    for c in costs {
        let Some((town, _)) = c
            .phase
            .split_once(": ")
            .filter(|(t, _)| t.starts_with("town "))
        else {
            continue;
        };
        match towns.iter_mut().find(|(t, _)| t == town) {
            Some((_, w)) => *w += c.wall_s,
            None => towns.push((town.to_string(), c.wall_s)),
        }
    }
    if towns.len() < 2 {
        return String::new();
    }
    let longest = towns.iter().map(|(_, w)| *w).fold(0.0, f64::max);
    format!(
        "\nWall time by town (its phases summed, each sitting up to its last checkpoint): {}. Towns run side by side (`--together`) take about the longest, {}; one after another, the sum in the last row.\n",
        towns
            .iter()
            .map(|(t, w)| format!("{t} {}", crate::lab::report::stats::clock_words(*w)))
            .collect::<Vec<_>>()
            .join(", "),
        crate::lab::report::stats::clock_words(longest)
    )
}

/// The LLM counters now.
pub fn stats(world: &World) -> LlmStats {
    world
        .get_resource::<Llm>()
        .map(|l| l.stats())
        .unwrap_or_default()
}

/// A markdown table.
pub fn table(head: &[&str], rows: &[Vec<String>]) -> String {
    let mut s = format!("| {} |\n|{}\n", head.join(" | "), "---|".repeat(head.len()));
    for r in rows {
        s.push_str(&format!("| {} |\n", r.join(" | ")));
    }
    s
}

/// A CSV file's text (fields with commas, quotes or line breaks quoted).
pub fn csv(head: &[&str], rows: &[Vec<String>]) -> String {
    let field = |f: &str| {
        if f.contains([',', '"', '\n']) {
            format!("\"{}\"", f.replace('"', "\"\""))
        } else {
            f.to_string()
        }
    };
    let mut s = head.iter().map(|h| field(h)).collect::<Vec<_>>().join(",");
    s.push('\n');
    for r in rows {
        s.push_str(&r.iter().map(|f| field(f)).collect::<Vec<_>>().join(","));
        s.push('\n');
    }
    s
}

/// The note every report on the embedded small model carries.
pub fn model_note(config: &GameConfig) -> String {
    let aids = &config.cognition.aids;
    let aids_line = if aids.on().is_empty() {
        "> **Aids:** none: what residents said, heard, decided and did came from the model's answers (`lab … --aids`, docs/society.md).\n>\n".to_string()
    } else {
        format!(
            "> **Aids on:** {}: rules made some of what the figures count (docs/society.md).\n>\n",
            aids.on()
                .iter()
                .map(|n| {
                    let what = crate::cognition::config::Aids::NAMES
                        .iter()
                        .find(|(a, _)| a == n)
                        .map(|(_, w)| *w)
                        .unwrap_or("");
                    format!("`{n}` ({what})")
                })
                .collect::<Vec<_>>()
                .join(", ")
        )
    };
    aids_line + &model_only(config)
}

/// The model part of the report's note.
fn model_only(config: &GameConfig) -> String {
    let small = config
        .llm
        .backends
        .iter()
        .any(|b| matches!(b, BackendConfig::Llama(c) if c.model.contains("135M")));
    if small {
        "> **Model:** the embedded SmolLM2-135M (see `models.txt`). On a model this small the \
         figures are a check that the pipeline measures what the paper measured, not a \
         reproduction of the paper's numbers; the same command runs unchanged against a server \
         running a bigger model (`--config`).\n\n"
            .into()
    } else {
        "> **Model:** see `models.txt`.\n\n".into()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cost(phase: &str, wall_s: f64, chat_calls: u64, game_hours: f64) -> Cost {
        Cost {
            phase: phase.into(),
            wall_s,
            agents: 25,
            game_hours,
            chat_calls,
            prompt_tokens: 1000,
            gen_tokens: 100,
            ..Default::default()
        }
    }

    /// A stop between a sitting's data write and its checkpoint leaves data that counts a
    /// stretch the resume runs again: the resume keeps the cost written with the checkpoint it
    /// goes on from.
    #[test]
    fn a_resume_keeps_the_sittings_cost_its_checkpoint_had() {
        // Written at steps 60 and 120, each with its checkpoint.
        let at_60 = cost("1.0 game hours", 600.0, 10, 1.0).keeping(60, None);
        let at_120 = cost("2.0 game hours", 1300.0, 25, 2.0).keeping(120, Some(at_60));
        // The checkpoint at 120 written too: that cost.
        let kept = at_120.clone().at_checkpoint(120).unwrap();
        assert_eq!(
            (kept.wall_s, kept.to_step, kept.before),
            (1300.0, None, None)
        );
        // Stopped before the checkpoint at 120: the one at 60 (which it replaced).
        let kept = at_120.clone().at_checkpoint(60).unwrap();
        assert_eq!(
            (kept.phase.as_str(), kept.chat_calls),
            ("1.0 game hours", 10)
        );
        assert_eq!((kept.to_step, kept.before), (None, None));
        // The sitting's first write ahead of its first checkpoint: nothing of it is kept.
        let first = cost("0.5 game hours", 300.0, 5, 0.5).keeping(30, None);
        assert_eq!(first.at_checkpoint(0), None);
        // Data of a build that did not say where its cost counts to: kept as it is.
        assert_eq!(
            cost("older", 1.0, 1, 1.0)
                .at_checkpoint(0)
                .map(|c| c.wall_s),
            Some(1.0)
        );
    }

    #[test]
    fn several_towns_costs_are_summed_and_each_towns_wall_time_given() {
        let costs: Vec<Cost> = [(1, 3600.0), (2, 5400.0)]
            .into_iter()
            .flat_map(|(seed, w)| {
                labelled(
                    seed,
                    true,
                    &[cost("probes", 60.0, 50, 0.0), cost("hours", w, 9, 24.0)],
                )
            })
            .collect();
        assert_eq!(costs[2].phase, "town 2: probes");
        let md = cost_section(&costs);
        // All phases: 9,120 s, 118 requests, 4 × 1,100 tokens; per agent per game hour those of
        // the 48 game hours of 25 (18 requests, 2,200 tokens), not the probes'.
        assert!(
            md.contains("| **all** | 2h32m | 118 | 4400 | 0 | 0 | 0.0 / 2 |"),
            "{md}"
        );
        assert!(
            md.contains("town 1 1h01m, town 2 1h31m")
                && md.contains("take about the longest, 1h31m"),
            "{md}"
        );
        // One town: its phases as they were, and no line by town.
        let one = labelled(1, false, &[cost("hours", 60.0, 1, 24.0)]);
        assert_eq!(one[0].phase, "hours");
        assert!(!cost_section(&one).contains("**all**"));
    }
}
