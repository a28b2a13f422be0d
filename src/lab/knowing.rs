//! Who knows whom: every resident asked "Do you know <name>?" about every other, each yes
//! checked against its memories; the network's density; who met whom in the conversation log.

use crate::agent::conversation::ConversationLog;
use crate::cognition::config::Ablation;
use crate::lab::ask::{Ask, Shape, ask_all};
use crate::lab::facts::streams;
use crate::lab::report::stats::density;
use crate::lab::report::stats::pct;
use crate::lab::town::Progress;
use crate::memory::stream::MemoryStream;
use crate::sim::clock::SimClock;
use crate::sim::time::GameTime;
use bevy::prelude::*;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};
use std::time::Instant;

/// One answer: does `asker` know `about`?
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Know {
    /// Who was asked.
    pub asker: String,
    /// About whom.
    pub about: String,
    /// Said yes.
    pub yes: bool,
    /// A memory of the asker's names the other.
    pub grounded: bool,
    /// What it said.
    pub says: String,
    /// The model gave no valid answer.
    pub fallback: bool,
    /// Its words say the opposite of its yes or no.
    #[serde(default)]
    pub contradicts: bool,
}

/// A round of answers.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct KnowRound {
    /// "start" or "end".
    pub label: String,
    /// When.
    pub at: GameTime,
    /// Residents.
    pub names: Vec<String>,
    /// Every ordered pair's answer.
    pub answers: Vec<Know>,
}

/// Whether a memory stream names a person (full name, or a first name no other resident has).
pub fn remembers(s: &MemoryStream, name: &str, first_unique: bool, at: GameTime) -> bool {
    let first = name.split_whitespace().next().unwrap_or(name);
    s.nodes().iter().filter(|n| n.created <= at).any(|n| {
        let has = |t: &str| t.contains(name) || (first_unique && t.contains(first));
        has(&n.description) || n.chat.iter().any(|(w, l)| w == name || has(l))
    })
}

impl KnowRound {
    /// Undirected edges: pairs where both said yes (`grounded`: both yes with memories behind).
    pub fn edges(&self, grounded: bool) -> BTreeSet<(String, String)> {
        self.mutual(|k| k.yes && (!grounded || k.grounded))
    }

    /// Density of the graph of mutual yes answers.
    pub fn density(&self, grounded: bool) -> f64 {
        density(self.names.len(), self.edges(grounded).len())
    }

    /// Pairs where each holds a memory naming the other, whatever they answered: who knows
    /// whom by memory, the figure that means something on any model.
    pub fn memory_edges(&self) -> BTreeSet<(String, String)> {
        self.mutual(|k| k.grounded)
    }

    /// Undirected edges: the pairs whose answers about each other both pass `holds`.
    fn mutual(&self, holds: impl Fn(&Know) -> bool) -> BTreeSet<(String, String)> {
        let held: BTreeSet<(&str, &str)> = self
            .answers
            .iter()
            .filter(|k| holds(k))
            .map(|k| (k.asker.as_str(), k.about.as_str()))
            .collect();
        held.iter()
            .filter(|(a, b)| a < b && held.contains(&(*b, *a)))
            .map(|(a, b)| (a.to_string(), b.to_string()))
            .collect()
    }

    /// Density of [`Self::memory_edges`].
    pub fn density_by_memory(&self) -> f64 {
        density(self.names.len(), self.memory_edges().len())
    }

    /// Answers that contradict their own words, and whether the round is informative.
    pub fn contradictions(&self) -> (usize, bool) {
        let contra = self.answers.iter().filter(|k| k.contradicts).count();
        (
            contra,
            crate::lab::ask::informative(contra, self.answers.len()),
        )
    }

    /// The round's figures as a table row: densities (mutual yes, grounded, by memory), edges,
    /// yes answers with no memory behind them, answers contradicting their own words.
    pub fn row(&self) -> Vec<String> {
        let yes = self.answers.iter().filter(|k| k.yes).count();
        let halluc = self.answers.iter().filter(|k| k.yes && !k.grounded).count();
        let (contra, informative) = self.contradictions();
        let mark = if informative {
            ""
        } else {
            " (not informative)"
        };
        vec![
            format!("{:.3}{mark}", self.density(false)),
            format!("{:.3}", self.density(true)),
            format!("{:.3}", self.density_by_memory()),
            format!("{} edges", self.edges(false).len()),
            format!("{halluc} of {yes} ({}){mark}", pct(halluc, yes)),
            format!(
                "{contra} of {} ({})",
                self.answers.len(),
                pct(contra, self.answers.len())
            ),
        ]
    }
}

/// Asks every resident about every other now (`town`: which town, for the progress line).
pub fn know_round(world: &mut World, label: &str, town: &str) -> KnowRound {
    let residents = crate::lab::town::residents(world);
    let now = world.resource::<SimClock>().now;
    let names: Vec<String> = residents.iter().map(|(n, _)| n.clone()).collect();
    let mut asks = Vec::new();
    let mut pairs = Vec::new();
    for (a, e) in &residents {
        for b in &names {
            if a != b {
                asks.push(Ask {
                    who: *e,
                    question: format!("Do you know {b}?"),
                    shape: Shape::YesNo,
                    ablation: Ablation::Full,
                });
                pairs.push((a.clone(), b.clone()));
            }
        }
    }
    let started = Instant::now();
    let mut progress = Progress::new(&format!("who knows whom ({town}, {label})"));
    let answers = ask_all(world, &asks, |d, n| {
        progress.draw(d as f64, n as f64, started, &format!("{d} of {n} answers"))
    });
    progress.end();
    let all = streams(world);
    let first_unique = |n: &str| {
        let f = n.split_whitespace().next().unwrap_or(n);
        names
            .iter()
            .filter(|m| m.split_whitespace().next() == Some(f))
            .count()
            == 1
    };
    let answers = pairs
        .into_iter()
        .zip(answers)
        .map(|((a, b), ans)| Know {
            grounded: all
                .get(&a)
                .is_some_and(|s| remembers(s, &b, first_unique(&b), now)),
            yes: ans.yes == Some(true),
            says: ans.text,
            fallback: ans.fallback,
            contradicts: ans.contradicts,
            asker: a,
            about: b,
        })
        .collect();
    KnowRound {
        label: label.into(),
        at: now,
        names,
        answers,
    }
}

/// How many conversations each pair had (from the log).
pub fn meetings(world: &World) -> BTreeMap<(String, String), usize> {
    let Some(log) = world.get_resource::<ConversationLog>() else {
        return BTreeMap::new();
    };
    let mut seen: BTreeSet<(Entity, String, String)> = BTreeSet::new();
    for l in &log.lines {
        let (a, b) = if l.speaker < l.listener {
            (l.speaker.clone(), l.listener.clone())
        } else {
            (l.listener.clone(), l.speaker.clone())
        };
        seen.insert((l.conversation, a, b));
    }
    let mut out = BTreeMap::new();
    for (_, a, b) in seen {
        *out.entry((a, b)).or_insert(0) += 1;
    }
    out
}

/// [`meetings`] as a list of (resident, resident, conversations).
pub fn met_list(world: &World) -> Vec<(String, String, usize)> {
    meetings(world)
        .into_iter()
        .map(|((a, b), n)| (a, b, n))
        .collect()
}

/// GraphML of a round (mutual yes edges; `grounded` and `met` as edge data).
pub fn graphml(r: &KnowRound, met: &[(String, String, usize)]) -> String {
    let esc = |s: &str| {
        s.replace('&', "&amp;")
            .replace('<', "&lt;")
            .replace('>', "&gt;")
            .replace('"', "&quot;")
    };
    let grounded = r.edges(true);
    let mut s = String::from(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<graphml xmlns=\"http://graphml.graphdrawing.org/xmlns\">\n  <key id=\"grounded\" for=\"edge\" attr.name=\"grounded\" attr.type=\"boolean\"/>\n  <key id=\"met\" for=\"edge\" attr.name=\"conversations\" attr.type=\"int\"/>\n  <graph id=\"knows\" edgedefault=\"undirected\">\n",
    );
    for n in &r.names {
        s.push_str(&format!("    <node id=\"{}\"/>\n", esc(n)));
    }
    for (a, b) in r.edges(false) {
        let m = met
            .iter()
            .find(|(x, y, _)| (x == &a && y == &b) || (x == &b && y == &a))
            .map(|t| t.2)
            .unwrap_or(0);
        s.push_str(&format!(
            "    <edge source=\"{}\" target=\"{}\"><data key=\"grounded\">{}</data><data key=\"met\">{m}</data></edge>\n",
            esc(&a),
            esc(&b),
            grounded.contains(&(a.clone(), b.clone()))
        ));
    }
    s.push_str("  </graph>\n</graphml>\n");
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn k(a: &str, b: &str, yes: bool, grounded: bool) -> Know {
        Know {
            asker: a.into(),
            about: b.into(),
            yes,
            grounded,
            says: String::new(),
            fallback: false,
            contradicts: false,
        }
    }

    #[test]
    fn edges_need_both_to_say_yes_and_density_is_the_papers() {
        let r = KnowRound {
            label: "end".into(),
            at: GameTime(0),
            names: vec!["A".into(), "B".into(), "C".into()],
            answers: vec![
                k("A", "B", true, true),
                k("B", "A", true, false),
                k("A", "C", true, true),
                k("C", "A", false, true),
                k("B", "C", true, true),
                k("C", "B", true, true),
            ],
        };
        let e = r.edges(false);
        assert_eq!(
            e.into_iter().collect::<Vec<_>>(),
            [("A".into(), "B".into()), ("B".into(), "C".into())]
        );
        // 2 edges of 3 possible: 2·2 / (3·2).
        assert!((r.density(false) - 2.0 / 3.0).abs() < 1e-12);
        // Grounded: B's yes about A has no memory behind it.
        assert!((r.density(true) - 1.0 / 3.0).abs() < 1e-12);
        // By memory, whatever was answered: A and C hold memories of each other (C said no),
        // B and C too; B holds none of A.
        assert_eq!(
            r.memory_edges().into_iter().collect::<Vec<_>>(),
            [("A".into(), "C".into()), ("B".into(), "C".into())]
        );
        assert!((r.density_by_memory() - 2.0 / 3.0).abs() < 1e-12);
        let xml = graphml(&r, &[("A".into(), "B".into(), 4)]);
        assert!(xml.contains("<edge source=\"A\" target=\"B\"><data key=\"grounded\">false</data><data key=\"met\">4</data>"), "{xml}");
    }
}
