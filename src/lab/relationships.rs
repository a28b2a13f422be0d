//! `lab relationships`: who knows whom, start → end (the paper's §7.1.2: network density
//! 0.167 → 0.74). Every resident is asked "Do you know <name>?" about every other (a shaped yes
//! or no, checked against the memory stream as the diffusion probes are); two residents are
//! joined when both say yes, and the density is η = 2|E| / (|V|(|V| − 1)). Who met whom, and how
//! often, comes from the conversation log.

use super::ask::{Ask, Shape, ask_all};
use super::diffusion::streams;
use super::report::stats::density;
use super::report::stats::pct;
use super::report::{Cost, cost_section, csv, labelled, stats, table};
use super::{Folder, Progress, Sitting, open_town_on};
use crate::SimPlugin;
use crate::agent::conversation::ConversationLog;
use crate::cognition::config::Ablation;
use crate::llm::Llm;
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
    fn contradictions(&self) -> (usize, bool) {
        let contra = self.answers.iter().filter(|k| k.contradicts).count();
        (contra, super::ask::informative(contra, self.answers.len()))
    }

    /// The round's figures as a table row: densities (mutual yes, grounded, by memory), edges,
    /// yes answers with no memory behind them, answers contradicting their own words.
    fn row(&self) -> Vec<String> {
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
    /// The cost of the sitting under way, up to its last checkpoint (see [`Sitting`]).
    #[serde(default)]
    pub sitting: Option<Cost>,
}

/// Runs the town `hours` game hours between two rounds (0: one round only).
pub fn run(sim: SimPlugin, folder: &Folder, hours: u32) -> Result<Run, String> {
    run_on(sim, folder, "", hours, "start", None)
}

/// [`run`] in a sub-folder of the run's (`sub`: `""`, or `"seed-3/"` for one town of several),
/// its first round labelled `first` ("start"; "end" for a town read after its days), its
/// requests going to `llm` when given (towns side by side: [`super::side_by_side`]).
pub fn run_on(
    sim: SimPlugin,
    folder: &Folder,
    sub: &str,
    hours: u32,
    first: &str,
    llm: Option<Llm>,
) -> Result<Run, String> {
    let data = format!("{sub}relationships.json");
    let data = data.as_str();
    let mut run: Run = folder.read(data)?.unwrap_or_default();
    let mut town = open_town_on(sim, &folder.work.join(sub).join("saves"), llm)?;
    let label = super::town_label(sub);
    let agents = town.residents().len();
    if run.rounds.is_empty() {
        let before = stats(town.app.world());
        let t = Instant::now();
        let r = know_round(town.app.world_mut(), first, &label);
        run.costs.push(Cost::of(
            &format!("who-knows-whom ({first})"),
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
    // A sitting cut short keeps what it cost up to its last checkpoint, as a phase of its own.
    let resumed = run.sitting.is_some();
    if let Some(cost) = (run.sitting.take()).and_then(|cost| cost.at_checkpoint(c.step)) {
        run.costs.push(cost);
    }
    if c.step < end {
        let sitting = Sitting::begin(&mut town, resumed || c.step > start_step);
        sitting.run(&mut town, end, &label, folder, data, &mut run, |r| {
            &mut r.sitting
        })?;
        run.sitting = None;
        run.costs.push(sitting.cost(town.app.world()));
        folder.write(data, &run)?;
    }
    if run.rounds.len() < 2 {
        let before = stats(town.app.world());
        let t = Instant::now();
        let r = know_round(town.app.world_mut(), "end", &label);
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

/// The columns of [`KnowRound::row`].
const ROUND_COLUMNS: [&str; 6] = [
    "density (mutual yes)",
    "density (grounded)",
    "density (by memory)",
    "edges",
    "yes with no memory behind it",
    "answers contradicting their own words",
];

/// How the densities are read, and the paper's.
fn explained() -> String {
    format!(
        "Every resident was asked \"Do you know <name>?\" about every other. Two residents are joined when both said yes; *grounded* joins need a memory naming the other on both sides; *by memory* joins are the pairs where each holds a memory naming the other, whatever they answered (the figure that needs no answer to mean anything). Density η = 2|E| / (|V|(|V| − 1)). A round where more than {:.0} % of answers contradict their own words (\"yes\" with \"No, I don't know her\") is marked *not informative*. The paper: 0.167 → 0.74 over two game days; 6 of 453 awareness answers (1.3 %) hallucinated.\n\n",
        100.0 * super::ask::CONTRADICTION_LIMIT
    )
}

/// Writes a town's answers (`knows.csv`), its graphs as GraphML (`knows-<round>.graphml`) and
/// the last round's graph (`knows.png`, new joins since the first round or `base` in colour)
/// into `sub` of the run's folder.
fn files(run: &Run, folder: &Folder, sub: &str, base: Option<&KnowRound>) -> Result<(), String> {
    let mut data = Vec::new();
    for r in &run.rounds {
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
        folder.write_text(
            &format!("{sub}knows-{}.graphml", r.label),
            &graphml(r, &run.met),
        )?;
    }
    folder.write_text(
        &format!("{sub}knows.csv"),
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
        let first = base
            .or(run.rounds.first())
            .filter(|f| f.label != last.label);
        super::report::plot::graph(
            &folder.work.join(sub).join("knows.png"),
            &format!(
                "Who knows whom ({}; mutual yes; new since the start in colour)",
                last.at
            ),
            &last.names,
            &last.edges(false),
            first.map(|f| f.edges(false)).as_ref(),
        )?;
    }
    Ok(())
}

/// The report's section.
pub fn report(run: &Run, folder: &Folder) -> Result<String, String> {
    let mut md = String::from("## Relationships\n\n");
    md.push_str(&explained());
    let rows: Vec<Vec<String>> = run
        .rounds
        .iter()
        .map(|r| [vec![r.label.clone(), r.at.to_string()], r.row()].concat())
        .collect();
    md.push_str(&table(
        &[&["round", "time"][..], &ROUND_COLUMNS[..]].concat(),
        &rows,
    ));
    md.push('\n');
    files(run, folder, "", None)?;
    if !run.rounds.is_empty() {
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

/// The section of a run of several towns (`seed`, its run): each town's rounds, min / median /
/// max of each density per round over the towns beside the paper; each town's answers, graphs
/// and social life in `seed-<n>/`. `scenario`: the round of the scenario at its start that kept
/// towns (asked once, after their days) are shown beside: one row, out of the spread.
pub fn towns_report(
    towns: &[(u32, Run)],
    scenario: Option<&Run>,
    folder: &Folder,
) -> Result<String, String> {
    let base = scenario.and_then(|s| s.rounds.first());
    let scenario_costs: Vec<Cost> = scenario
        .map(|s| s.costs.iter().map(|c| c.prefixed("the scenario")).collect())
        .unwrap_or_default();
    if let [(_, one)] = towns {
        let mut one = one.clone();
        one.rounds.splice(0..0, base.cloned());
        one.costs.splice(0..0, scenario_costs);
        return report(&one, folder);
    }
    let mut md = format!("## Relationships, {} towns\n\n", towns.len());
    md.push_str(&explained());
    let mut rows = Vec::new();
    if let Some(b) = base {
        rows.push(
            [
                vec!["the scenario".into(), b.label.clone(), b.at.to_string()],
                b.row(),
            ]
            .concat(),
        );
    }
    // Densities by round label (in the order first seen): mutual yes, grounded, by memory; and
    // how many of its rounds were not informative.
    let mut by_round: Vec<(String, [Vec<f64>; 3], usize)> = Vec::new();
    for (seed, run) in towns {
        for r in &run.rounds {
            rows.push(
                [
                    vec![seed.to_string(), r.label.clone(), r.at.to_string()],
                    r.row(),
                ]
                .concat(),
            );
            let i = match by_round.iter().position(|(l, _, _)| l == &r.label) {
                Some(i) => i,
                None => {
                    by_round.push((r.label.clone(), Default::default(), 0));
                    by_round.len() - 1
                }
            };
            let (_, d, mute) = &mut by_round[i];
            d[0].push(r.density(false));
            d[1].push(r.density(true));
            d[2].push(r.density_by_memory());
            *mute += usize::from(!r.contradictions().1);
        }
    }
    let mmm = |v: &Vec<f64>| super::report::stats::min_median_max(v);
    for (label, d, mute) in &by_round {
        let mut row = vec!["min / median / max".into(), label.clone(), String::new()];
        row.extend(d.iter().map(mmm));
        if *mute > 0 {
            row[3].push_str(&format!(" ({mute} of {} not informative)", d[0].len()));
        }
        row.extend([String::new(), String::new(), String::new()]);
        rows.push(row);
    }
    rows.push(
        [
            vec![
                "the paper".into(),
                "start → end".into(),
                "2 game days".into(),
            ],
            vec!["0.167 → 0.74".into()],
            vec![String::new(); 5],
        ]
        .concat(),
    );
    md.push_str(&table(
        &[&["town", "round", "time"][..], &ROUND_COLUMNS[..]].concat(),
        &rows,
    ));
    md.push_str("\nEach town's answers (`knows.csv`), graphs (`knows-<round>.graphml`, `knows.png`) and residents' conversations (`social.csv`) are in its folder `seed-<n>/`");
    if let Some(sc) = scenario {
        md.push_str("; the scenario's in `start/`");
        files(sc, folder, "start/", None)?;
    }
    md.push_str(".\n\n");
    md.push_str(&super::social::Social::towns_telling(
        towns.iter().filter_map(|(_, r)| r.social.as_ref()),
    ));
    let mut costs = scenario_costs;
    for (seed, run) in towns {
        let sub = super::town_folder(*seed, towns.len());
        files(run, folder, &sub, base)?;
        md.push_str(&format!(
            "### Town {seed}\n\n![who knows whom, town {seed}]({sub}knows.png)\n\n"
        ));
        if let Some(s) = &run.social {
            md.push_str(&format!(
                "Social life {}; {} pairs talked.\n\n",
                s.line(),
                run.met.len()
            ));
            md.push_str(&s.telling_paragraph());
            s.write_csv(folder, &format!("{sub}social.csv"))?;
        }
        costs.extend(labelled(*seed, true, &run.costs));
    }
    md.push_str(&cost_section(&costs));
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
