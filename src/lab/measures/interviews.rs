//! `lab interviews`: the paper's believability study (§6). Residents are asked 5 questions in
//! each of 5 categories (self-knowledge, memory, plans, reactions, reflections) under the
//! ablation conditions: full architecture, no reflection, no reflection and no planning, and no
//! memory, reflection or planning. Each condition is the same town at the same moment: one save,
//! loaded once per condition with that condition's ablation applied (what a resident may recall
//! is narrowed; nothing is written back). An optional file of human-written answers is the
//! crowdworker baseline. A judge model compares the answers to each question two at a time
//! (order drawn by the seed); the comparisons become TrueSkill ratings per condition, and the
//! per-question scores the Kruskal–Wallis H. A judge answer that is not a valid preference is a
//! tie, and counted.

use crate::SimPlugin;
use crate::agent::{Identity, Outlook, Resident};
use crate::cognition::ask::prompts::{Prompts, Who, identity_block, one_line};
use crate::cognition::config::Ablation;
use crate::lab::ask::{Ask, Shape, ask_all, run_requests};
use crate::lab::judge::{Answered, JUDGE, Judged, condition_name, judge_schema, rank};
use crate::lab::report::{Cost, cost_section, csv, stats, table};
use crate::lab::runs::folder::Folder;
use crate::lab::town::Progress;
use crate::llm::{LlmRequest, LlmValue, OutputShape, Sampling};
use crate::sim::clock::SimClock;
use bevy::prelude::*;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Instant;

pub use crate::lab::questions::{
    DEFAULT_QUESTIONS, NO_FACT, Question, check_human, parse_questions, read_human, read_questions,
};

/// An interviews run.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Run {
    /// Every answer.
    pub answers: Vec<Answered>,
    /// Every judgement.
    pub judged: Vec<Judged>,
    /// The judge backend.
    pub judge: String,
    /// The seed of the order of the comparisons.
    pub seed: u32,
    /// Costs.
    pub costs: Vec<Cost>,
}

/// What to run.
#[derive(Debug, Clone)]
pub struct Options {
    /// Residents (empty: all).
    pub residents: Vec<String>,
    /// The questions.
    pub questions: Vec<Question>,
    /// The conditions.
    pub conditions: Vec<Ablation>,
    /// Human answers, if any.
    pub human: Option<BTreeMap<(String, String), String>>,
    /// The judge backend's name (`None`: the default backend).
    pub judge: Option<String>,
    /// The seed.
    pub seed: u32,
}

/// Asks every chosen resident every question under each condition (the save `save` loaded once
/// per condition), then judges them. `make` loads the save with a config change applied.
pub fn run(
    make: &dyn Fn(Ablation) -> Result<SimPlugin, String>,
    folder: &Folder,
    opts: &Options,
) -> Result<Run, String> {
    let data = "interviews.json";
    let mut run: Run = folder.read(data)?.unwrap_or(Run {
        seed: opts.seed,
        judge: opts
            .judge
            .clone()
            .unwrap_or_else(|| "the default backend".into()),
        ..Default::default()
    });
    let mut last_app: Option<App> = None;
    for &cond in &opts.conditions {
        let key = format!("{cond:?}");
        if run.answers.iter().any(|a| a.condition == key) && cond != Ablation::Full {
            continue;
        }
        let mut app = crate::headless_app(make(cond)?);
        app.update();
        let world = app.world_mut();
        let all = crate::lab::town::residents(world);
        let chosen = crate::lab::town::find_residents(&all, &opts.residents)?;
        let names: Vec<String> = all.iter().map(|(n, _)| n.clone()).collect();
        let facts: Vec<String> = crate::lab::facts::of_town(world)
            .into_iter()
            .map(|f| f.question)
            .collect();
        if !run.answers.iter().any(|a| a.condition == key) {
            let mut asks = Vec::new();
            let mut meta = Vec::new();
            for (name, e) in &chosen {
                let someone = someone_for(world, name, &names);
                for q in &opts.questions {
                    let text = fill(&q.text, name, &someone, &facts);
                    asks.push(Ask {
                        who: *e,
                        question: text.clone(),
                        shape: Shape::Open,
                        ablation: cond,
                    });
                    meta.push((name.clone(), q.category.clone(), text));
                }
            }
            let before = stats(world);
            let t = Instant::now();
            let mut progress = Progress::new(&format!("answers ({})", cond.label()));
            let got = ask_all(world, &asks, |d, n| {
                progress.draw(d as f64, n as f64, t, &format!("{d} of {n}"))
            });
            progress.end();
            for ((resident, category, question), a) in meta.into_iter().zip(got) {
                run.answers.push(Answered {
                    condition: key.clone(),
                    resident,
                    category,
                    question,
                    answer: a.text,
                    fallback: a.fallback,
                });
            }
            run.costs.push(Cost::of(
                &format!("answers, {}", cond.label()),
                &stats(world).since(&before),
                t.elapsed().as_secs_f64(),
                chosen.len(),
                0.0,
            ));
            folder.write(data, &run)?;
        }
        if cond == Ablation::Full || last_app.is_none() {
            last_app = Some(app);
        }
    }
    if let Some(human) = &opts.human
        && !run.answers.iter().any(|a| a.condition == "Human")
    {
        {
            let asked: Vec<(String, String, String)> = run
                .answers
                .iter()
                .filter(|a| a.condition == format!("{:?}", opts.conditions[0]))
                .map(|a| (a.resident.clone(), a.category.clone(), a.question.clone()))
                .collect();
            for (resident, category, question) in asked {
                if let Some(ans) = human.get(&(resident.clone(), question.clone())) {
                    run.answers.push(Answered {
                        condition: "Human".into(),
                        resident,
                        category,
                        question,
                        answer: ans.clone(),
                        fallback: false,
                    });
                }
            }
        }
    }
    if run.judged.is_empty() {
        let mut app = last_app.ok_or("no condition to interview")?;
        judge_all(app.world_mut(), &mut run, opts)?;
        folder.write(data, &run)?;
    }
    Ok(run)
}

/// The report's section, `transcripts.md`, `answers.csv` and `judged.csv`.
pub fn report(run: &Run, folder: &Folder) -> Result<String, String> {
    let mut conditions: Vec<String> = Vec::new();
    for a in &run.answers {
        if !conditions.contains(&a.condition) {
            conditions.push(a.condition.clone());
        }
    }
    let ranking = rank(&conditions, &run.judged, run.seed);
    folder.write("ranking.json", &ranking)?;
    let paper: BTreeMap<&str, &str> = [
        ("Full", "29.89 ± 0.72"),
        ("NoReflection", "26.88 ± 0.69"),
        ("NoReflectionNoPlanning", "25.64 ± 0.68"),
        ("Human", "22.95 ± 0.69"),
        ("NoMemory", "21.21 ± 0.70"),
    ]
    .into();
    let mut order: Vec<usize> = (0..conditions.len()).collect();
    order.sort_by(|a, b| ranking.ratings[*b].mu.total_cmp(&ranking.ratings[*a].mu));
    let rows: Vec<Vec<String>> = order
        .iter()
        .map(|&i| {
            let (w, t, l) = ranking.record[i];
            vec![
                condition_name(&conditions[i]),
                format!(
                    "{:.2} ± {:.2}",
                    ranking.ratings[i].mu, ranking.ratings[i].sigma
                ),
                format!("{w} / {t} / {l}"),
                paper
                    .get(conditions[i].as_str())
                    .unwrap_or(&"–")
                    .to_string(),
            ]
        })
        .collect();
    let residents: std::collections::BTreeSet<&str> =
        run.answers.iter().map(|a| a.resident.as_str()).collect();
    let questions: std::collections::BTreeSet<&str> =
        run.answers.iter().map(|a| a.question.as_str()).collect();
    let mut md = format!(
        "## Interviews\n\n{} residents, {} questions, {} conditions; {} answers ({} fail-safe); {} comparisons judged by {} ({} not a valid preference, counted as ties).\n\n",
        residents.len(),
        questions.len(),
        conditions.len(),
        run.answers.len(),
        run.answers.iter().filter(|a| a.fallback).count(),
        run.judged.len(),
        run.judge,
        ranking.invalid
    );
    md.push_str(&table(
        &[
            "condition",
            "TrueSkill μ ± σ",
            "wins / ties / losses",
            "the paper μ ± σ",
        ],
        &rows,
    ));
    if let Some(kw) = ranking.test {
        md.push_str(&format!(
            "\nKruskal–Wallis over the per-question scores: H({}) = {:.2}, p = {:.3e} (the paper: H(4) = 150.29, p < .001).\n\n",
            kw.df, kw.h, kw.p
        ));
    }
    crate::lab::report::plot::bars(
        &folder.work.join("trueskill.png"),
        "TrueSkill μ ± σ by condition",
        &order
            .iter()
            .map(|&i| {
                (
                    condition_name(&conditions[i]),
                    ranking.ratings[i].mu,
                    Some(ranking.ratings[i].sigma),
                )
            })
            .collect::<Vec<_>>(),
        "μ",
    )?;
    md.push_str("![TrueSkill by condition](trueskill.png)\n\nEvery answer is in `transcripts.md` and `answers.csv`; every judgement in `judged.csv`.\n\n");
    let mut tr = String::from("# Interview transcripts\n\n");
    let mut by: BTreeMap<(&str, &str), Vec<&Answered>> = BTreeMap::new();
    for a in &run.answers {
        by.entry((a.resident.as_str(), a.question.as_str()))
            .or_default()
            .push(a);
    }
    let mut last = "";
    for ((resident, question), list) in &by {
        if *resident != last {
            tr.push_str(&format!("## {resident}\n\n"));
            last = resident;
        }
        tr.push_str(&format!("**{question}** ({})\n\n", list[0].category));
        for a in list {
            tr.push_str(&format!(
                "- *{}*: {}{}\n",
                condition_name(&a.condition),
                a.answer,
                if a.fallback { " (fail-safe)" } else { "" }
            ));
        }
        tr.push('\n');
    }
    folder.write_text("transcripts.md", &tr)?;
    folder.write_text(
        "answers.csv",
        &csv(
            &[
                "condition",
                "resident",
                "category",
                "question",
                "answer",
                "fallback",
            ],
            &run.answers
                .iter()
                .map(|a| {
                    vec![
                        a.condition.clone(),
                        a.resident.clone(),
                        a.category.clone(),
                        a.question.clone(),
                        a.answer.clone(),
                        a.fallback.to_string(),
                    ]
                })
                .collect::<Vec<_>>(),
        ),
    )?;
    folder.write_text(
        "judged.csv",
        &csv(
            &["resident", "question", "A", "B", "verdict"],
            &run.judged
                .iter()
                .map(|j| {
                    vec![
                        j.resident.clone(),
                        j.question.clone(),
                        j.a.clone(),
                        j.b.clone(),
                        j.verdict.clone(),
                    ]
                })
                .collect::<Vec<_>>(),
        ),
    )?;
    md.push_str(&cost_section(&run.costs));
    Ok(md)
}

/// What `lab interviews` is asked (its command line's own options).
#[derive(Debug, Clone)]
pub struct Args {
    /// See `simulacra lab interviews --help`.
    pub residents: Vec<String>,
    /// See `simulacra lab interviews --help`.
    pub questions: Option<PathBuf>,
    /// See `simulacra lab interviews --help`.
    pub human: Option<PathBuf>,
    /// See `simulacra lab interviews --help`.
    pub conditions: Vec<String>,
    /// See `simulacra lab interviews --help`.
    pub judge: Option<String>,
    /// See `simulacra lab interviews --help`.
    pub hours: f64,
    /// See `simulacra lab interviews --help`.
    pub seed: u32,
}

/// `lab interviews`: runs the town to the moment of the interviews, interviews it under each condition, judges and writes the report.
pub fn lab(c: &super::Common, args: Args) -> Result<std::path::PathBuf, String> {
    let Args {
        residents,
        questions,
        human,
        conditions,
        judge,
        hours: h,
        seed,
    } = args;
    let questions = match &questions {
        Some(p) => read_questions(p)?,
        None => parse_questions(DEFAULT_QUESTIONS, "(the default questions)")?,
    };
    let human_path = human.clone();
    let human = human.as_deref().map(read_human).transpose()?;
    let conditions: Vec<Ablation> = conditions
            .iter()
            .map(|c| {
                Ablation::ALL
                    .into_iter()
                    .find(|a| format!("{a:?}").eq_ignore_ascii_case(c.trim()))
                    .ok_or_else(|| {
                        format!("--conditions: {c:?} is none of Full, NoReflection, NoReflectionNoPlanning, NoMemory")
                    })
            })
            .collect::<Result<_, _>>()?;
    if conditions.is_empty() {
        return Err("--conditions: name at least one".into());
    }
    let hours = super::hours(h / 24.0, "--hours")?;
    let mut sim = c.world()?;
    if let Some(j) = &judge {
        if !sim.config.llm.backends.iter().any(|b| b.name() == j) {
            return Err(format!(
                "--judge: no backend named {j:?} in the config; its backends: {}",
                sim.config
                    .llm
                    .backends
                    .iter()
                    .map(|b| b.name().to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
        }
        sim.config.llm.routes.insert("lab_judge".into(), j.clone());
    }
    // Residents named (here and in the human answers) are checked before any work.
    {
        let mut app = crate::headless_app(sim.clone());
        app.update();
        let all = crate::lab::town::residents(app.world_mut());
        crate::lab::town::find_residents(&all, &residents)?;
        if let (Some(h), Some(path)) = (&human, &human_path) {
            check_human(h, &all, path)?;
        }
    }
    let folder = c.folder("interviews")?;
    crate::lab::runs::inputs::write_inputs(&folder, &sim.config, &sim.scenario_text, &[seed])?;
    let (config, name) = (sim.config.clone(), sim.scenario.name.clone());
    // The moment every condition is interviewed at: a checkpoint in the run's folder.
    let saves = folder.work.join("saves");
    let checkpoint = saves.join("checkpoint");
    if !checkpoint.join("meta.ron").exists() || h > 0.0 {
        let mut town = crate::lab::town::open_town(sim, &saves)?;
        // The step they are at, kept so that a run stopped on the way goes on to it.
        let end = match folder.read::<u64>("interview_step.json")? {
            Some(end) => end,
            None => {
                let c = town.clock();
                let end = c.step + hours as u64 * (3600 / c.sec_per_step as u64);
                folder.write("interview_step.json", &end)?;
                end
            }
        };
        town.run_until(end, "town before the interviews", |_, _| Ok(()))?;
        town.checkpoint()?;
    }
    let make = |cond: Ablation| -> Result<SimPlugin, String> {
        let mut s = SimPlugin::from_save(&checkpoint, config.clone())?;
        s.config.cognition.ablation = cond;
        s.config.saves.autosave_minutes = 0;
        s.config.saves.dir = folder.work.join("forks").to_string_lossy().into();
        Ok(s)
    };
    let opts = Options {
        residents,
        questions,
        conditions,
        human,
        judge,
        seed,
    };
    let run = run(&make, &folder, &opts)?;
    let section = report(&run, &folder)?;
    super::finish_report(
        &folder,
        "Interviews",
        &config,
        &format!("{name}.\n"),
        &[section],
        c.started.elapsed().as_secs_f64(),
    )
}

/// Fills a question's placeholders for a resident: `facts` are the questions of the town's
/// followed facts, in order (`{fact1}` the first; [`NO_FACT`] past the last).
pub fn fill(q: &str, name: &str, someone: &str, facts: &[String]) -> String {
    let q = q.replace("{name}", name).replace("{someone}", someone);
    let mut out = String::new();
    let mut rest = q.as_str();
    while let Some(at) = rest.find("{fact") {
        let Some(len) = rest[at..].find('}') else {
            break;
        };
        let n: usize = rest[at + 5..at + len].parse().unwrap_or(0);
        out.push_str(&rest[..at]);
        out.push_str(
            n.checked_sub(1)
                .and_then(|i| facts.get(i))
                .map_or(NO_FACT, String::as_str),
        );
        rest = &rest[at + len + 1..];
    }
    out.push_str(rest);
    out
}

/// Someone a resident knows: another resident its seed memories name, else the next resident.
fn someone_for(world: &mut World, name: &str, all: &[String]) -> String {
    let mut q = world.query::<(&Identity, &Resident)>();
    let seed = q
        .iter(world)
        .find(|(i, _)| i.name == name)
        .map(|(_, r)| r.persona.memories.join("; "))
        .unwrap_or_default();
    all.iter()
        .filter(|n| n.as_str() != name)
        .find(|n| seed.contains(n.as_str()))
        .or_else(|| {
            let i = all.iter().position(|n| n == name).unwrap_or(0);
            all.get((i + 1) % all.len().max(1))
                .filter(|n| n.as_str() != name)
        })
        .cloned()
        .unwrap_or_else(|| "your neighbour".into())
}

/// Compares every two answers to each question.
fn judge_all(world: &mut World, run: &mut Run, opts: &Options) -> Result<(), String> {
    let now = world.resource::<SimClock>().now;
    let identities: BTreeMap<String, String> = {
        let mut q = world.query::<(&Identity, &Resident, &Outlook)>();
        q.iter(world)
            .map(|(i, r, o)| (i.name.clone(), identity_block(r, o, now)))
            .collect()
    };
    let mut items: BTreeMap<(String, String), Vec<&Answered>> = BTreeMap::new();
    for a in &run.answers {
        items
            .entry((a.resident.clone(), a.question.clone()))
            .or_default()
            .push(a);
    }
    let prompts = world.resource::<Prompts>().clone();
    let mut reqs = Vec::new();
    let mut pairs = Vec::new();
    for ((resident, question), list) in &items {
        for i in 0..list.len() {
            for j in i + 1..list.len() {
                let flip = crate::sim::hash::fnv1a_32(
                    format!("{}|{resident}|{question}|{i}|{j}", opts.seed).as_bytes(),
                ) % 2
                    == 1;
                let (a, b) = if flip {
                    (list[j], list[i])
                } else {
                    (list[i], list[j])
                };
                let identity = identities.get(resident).cloned().unwrap_or_default();
                let judge = Who {
                    identity: JUDGE.to_string(),
                    name: resident,
                };
                let msgs = prompts.render_for(
                    "judge",
                    &judge,
                    &[
                        ("about", &identity),
                        ("question", &one_line(question)),
                        ("a", &one_line(&a.answer)),
                        ("b", &one_line(&b.answer)),
                    ],
                );
                reqs.push(
                    LlmRequest::chat("lab_judge", msgs, OutputShape::Json(judge_schema()))
                        .sampling(Sampling::greedy(16))
                        .fallback(LlmValue::Json(json!({"better": "same"}))),
                );
                pairs.push((
                    resident.clone(),
                    question.clone(),
                    a.condition.clone(),
                    b.condition.clone(),
                ));
            }
        }
    }
    let before = stats(world);
    let t = Instant::now();
    let mut progress = Progress::new("judging");
    let verdicts = run_requests(world, reqs, |d, n| {
        progress.draw(d as f64, n as f64, t, &format!("{d} of {n} comparisons"))
    });
    progress.end();
    run.judged = pairs
        .into_iter()
        .zip(verdicts)
        .map(|((resident, question, a, b), v)| Judged {
            resident,
            question,
            a,
            b,
            verdict: v
                .as_ref()
                .and_then(|v| v.get("better"))
                .and_then(Value::as_str)
                .filter(|s| matches!(*s, "A" | "B" | "same"))
                .unwrap_or("invalid")
                .to_string(),
        })
        .collect();
    run.costs.push(Cost::of(
        "judging",
        &stats(world).since(&before),
        t.elapsed().as_secs_f64(),
        0,
        0.0,
    ));
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_questions_placeholders_are_the_resident_someone_and_the_towns_facts() {
        let facts = vec!["Do you know who is running for mayor?".to_string()];
        assert_eq!(
            fill("{name}, who is {someone}?", "Ann", "Bo", &facts),
            "Ann, who is Bo?"
        );
        assert_eq!(fill("{fact1}", "Ann", "Bo", &facts), facts[0]);
        assert_eq!(fill("{fact2}", "Ann", "Bo", &facts), NO_FACT);
        assert_eq!(fill("{fact2}", "Ann", "Bo", &[]), NO_FACT);
    }
}
