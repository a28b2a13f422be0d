//! `lab relationships`: who knows whom, start → end (the paper's §7.1.2: network density
//! 0.167 → 0.74). Every resident is asked "Do you know <name>?" about every other (a shaped yes
//! or no, checked against the memory stream as the diffusion probes are); two residents are
//! joined when both say yes, and the density is η = 2|E| / (|V|(|V| − 1)). Who met whom, and how
//! often, comes from the conversation log.

use super::ask::{Ask, Shape, ask_all};
use super::diffusion::{pct, streams};
use super::report::stats::density;
use super::report::{Cost, cost_section, csv, stats, table};
use super::{Folder, Progress, open_town};
use crate::SimPlugin;
use crate::agent::conversation::ConversationLog;
use crate::cognition::config::Ablation;
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
        let yes: BTreeSet<(&str, &str)> = self
            .answers
            .iter()
            .filter(|k| k.yes && (!grounded || k.grounded))
            .map(|k| (k.asker.as_str(), k.about.as_str()))
            .collect();
        yes.iter()
            .filter(|(a, b)| a < b && yes.contains(&(*b, *a)))
            .map(|(a, b)| (a.to_string(), b.to_string()))
            .collect()
    }

    /// Density of the graph of mutual yes answers.
    pub fn density(&self, grounded: bool) -> f64 {
        density(self.names.len(), self.edges(grounded).len())
    }
}

/// Asks every resident about every other now.
pub fn know_round(world: &mut World, label: &str) -> KnowRound {
    let residents = super::residents(world);
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
    let mut progress = Progress::new(&format!("who knows whom ({label})"));
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
fn met_list(world: &World) -> Vec<(String, String, usize)> {
    meetings(world)
        .into_iter()
        .map(|((a, b), n)| (a, b, n))
        .collect()
}

/// A relationships run.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Run {
    /// Start and end rounds.
    pub rounds: Vec<KnowRound>,
    /// Conversations per pair over the run.
    pub met: Vec<(String, String, usize)>,
    /// Who talked with whom, how often, and where the waking hours went, at the last round.
    #[serde(default)]
    pub social: Option<super::social::Social>,
    /// Costs.
    pub costs: Vec<Cost>,
}

/// Runs the town `hours` game hours between two rounds (0: one round only).
pub fn run(sim: SimPlugin, folder: &Folder, hours: u32) -> Result<Run, String> {
    let data = "relationships.json";
    let mut run: Run = folder.read(data).unwrap_or_default();
    let mut town = open_town(sim, &folder.work.join("saves"))?;
    let agents = town.residents().len();
    if run.rounds.is_empty() {
        let before = stats(town.app.world());
        let t = Instant::now();
        let r = know_round(town.app.world_mut(), "start");
        run.costs.push(Cost::of(
            "who-knows-whom at the start",
            &stats(town.app.world()).since(&before),
            t.elapsed().as_secs_f64(),
            agents,
            0.0,
        ));
        run.rounds.push(r);
        town.checkpoint()?;
        folder.write(data, &run)?;
    }
    if hours == 0 {
        // One round, of the town as it is (a save read after its days: what its logs hold).
        if run.social.is_none() {
            run.met = met_list(town.app.world());
            let names: Vec<String> = town.residents().into_iter().map(|(n, _)| n).collect();
            run.social = Some(super::social::social(town.app.world(), &names));
            folder.write(data, &run)?;
        }
        return Ok(run);
    }
    let c = town.clock();
    let start = run.rounds[0].at;
    let start_step = c.step - ((c.now.0 - start.0) / c.sec_per_step as i64).max(0) as u64;
    let end = start_step + hours as u64 * (3600 / c.sec_per_step as u64);
    if c.step < end {
        let before = stats(town.app.world());
        let t = Instant::now();
        let from = c.step;
        town.run_until(end, "town", |_| Ok(()))?;
        let h = (town.clock().step - from) as f64 * c.sec_per_step as f64 / 3600.0;
        run.costs.push(Cost::of(
            &format!("{h:.0} game hours of the town"),
            &stats(town.app.world()).since(&before),
            t.elapsed().as_secs_f64(),
            agents,
            h,
        ));
        folder.write(data, &run)?;
    }
    if run.rounds.len() < 2 {
        let before = stats(town.app.world());
        let t = Instant::now();
        let r = know_round(town.app.world_mut(), "end");
        run.costs.push(Cost::of(
            "who-knows-whom at the end",
            &stats(town.app.world()).since(&before),
            t.elapsed().as_secs_f64(),
            agents,
            0.0,
        ));
        run.rounds.push(r);
        run.met = met_list(town.app.world());
        let names: Vec<String> = town.residents().into_iter().map(|(n, _)| n).collect();
        run.social = Some(super::social::social(town.app.world(), &names));
        folder.write(data, &run)?;
    }
    Ok(run)
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

/// The report's section.
pub fn report(run: &Run, folder: &Folder) -> Result<String, String> {
    let mut md = String::from("## Relationships\n\n");
    md.push_str("Every resident was asked \"Do you know <name>?\" about every other. Two residents are joined when both said yes; *grounded* joins need a memory naming the other on both sides. Density η = 2|E| / (|V|(|V| − 1)).\n\n");
    let mut rows = Vec::new();
    let mut data = Vec::new();
    for r in &run.rounds {
        let yes = r.answers.iter().filter(|k| k.yes).count();
        let halluc = r.answers.iter().filter(|k| k.yes && !k.grounded).count();
        let contra = r.answers.iter().filter(|k| k.contradicts).count();
        let mark = if super::ask::informative(contra, r.answers.len()) {
            ""
        } else {
            " (not informative)"
        };
        rows.push(vec![
            r.label.clone(),
            r.at.to_string(),
            format!("{:.3}{mark}", r.density(false)),
            format!("{:.3}", r.density(true)),
            format!("{} edges", r.edges(false).len()),
            format!("{halluc} of {yes} ({}){mark}", pct(halluc, yes)),
            format!(
                "{contra} of {} ({})",
                r.answers.len(),
                pct(contra, r.answers.len())
            ),
        ]);
        for k in &r.answers {
            data.push(vec![
                r.label.clone(),
                k.asker.clone(),
                k.about.clone(),
                if k.yes { "yes" } else { "no" }.into(),
                k.grounded.to_string(),
                k.fallback.to_string(),
                k.contradicts.to_string(),
                k.says.clone(),
            ]);
        }
        folder.write_text(&format!("knows-{}.graphml", r.label), &graphml(r, &run.met))?;
    }
    md.push_str(&table(
        &[
            "round",
            "time",
            "density (mutual yes)",
            "density (grounded)",
            "edges",
            "yes with no memory behind it",
            "answers contradicting their own words",
        ],
        &rows,
    ));
    md.push_str(&format!("\nThe paper: 0.167 → 0.74 over two game days; 6 of 453 awareness answers (1.3 %) hallucinated. *Grounded* density needs no answer to mean anything; a round where more than {:.0} % of answers contradict their own words (\"yes\" with \"No, I don't know her\") is marked *not informative*.\n\n", 100.0 * super::ask::CONTRADICTION_LIMIT));
    folder.write_text(
        "knows.csv",
        &csv(
            &[
                "round",
                "asker",
                "about",
                "answer",
                "grounded",
                "fallback",
                "contradicts",
                "says",
            ],
            &data,
        ),
    )?;
    if let Some(last) = run.rounds.last() {
        let first = run.rounds.first().filter(|f| f.label != last.label);
        super::report::plot::graph(
            &folder.work.join("knows.png"),
            &format!(
                "Who knows whom ({}; mutual yes; new since the start in colour)",
                last.at
            ),
            &last.names,
            &last.edges(false),
            first.map(|f| f.edges(false)).as_ref(),
        )?;
        md.push_str(
            "![who knows whom](knows.png)\n\nThe graphs as GraphML (for Gephi or networkx): ",
        );
        md.push_str(
            &run.rounds
                .iter()
                .map(|r| format!("`knows-{}.graphml`", r.label))
                .collect::<Vec<_>>()
                .join(", "),
        );
        md.push_str(".\n\n");
    }
    if !run.met.is_empty() {
        let mut met = run.met.clone();
        met.sort_by_key(|m| std::cmp::Reverse(m.2));
        let rows: Vec<Vec<String>> = met
            .iter()
            .take(15)
            .map(|(a, b, n)| vec![a.clone(), b.clone(), n.to_string()])
            .collect();
        md.push_str(&format!(
            "### Who met whom\n\n{} pairs talked during the run; the most often:\n\n",
            met.len()
        ));
        md.push_str(&table(&["resident", "resident", "conversations"], &rows));
        md.push('\n');
    }
    if let Some(s) = &run.social {
        md.push_str(&s.section("", folder, "social.csv")?);
    }
    md.push_str(&cost_section(&run.costs));
    Ok(md)
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
        let xml = graphml(&r, &[("A".into(), "B".into(), 4)]);
        assert!(xml.contains("<edge source=\"A\" target=\"B\"><data key=\"grounded\">false</data><data key=\"met\">4</data>"), "{xml}");
    }
}
