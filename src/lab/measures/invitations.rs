//! `lab invitations`: every resident of a town, at the moment of a save, is asked whether it
//! accepts an invitation to a gathering from its organiser, with the request the town sends
//! when the organiser invites it in a conversation (its plan for that time, or its usual day
//! when that day is not planned yet; what it remembers of the organiser; the organiser's line
//! as the invitation's template says it). Nothing is written to any memory and the town does
//! not move. The decisions are counted beside what each answer named as in its way: a way to
//! see how a model, a prompt or a switch (`cognition.social.weigh_first`) decides, in minutes
//! instead of the game days a party needs.

use crate::SimPlugin;
use crate::agent::conversation::{Topic, TopicKind};
use crate::agent::{DayPlan, Identity, Outlook, Resident, TownNames};
use crate::cognition::ask::asker::Asker;
use crate::cognition::ask::flaws;
use crate::cognition::ask::prompts::{Prompts, Who, one_line};
use crate::cognition::config::Cognition;
use crate::cognition::talk::invite::{
    InviteAsk, NOTHING, answer_request, decision_key, overlapping, usual_overlapping,
};
use crate::cognition::talk::topics::template_line;
use crate::lab::gathering::{find_gathering, streams_of};
use crate::lab::runs::folder::Folder;
use crate::memory::stream::{Gathering, MemoryStream};
use crate::sim::clock::SimClock;
use bevy::ecs::system::SystemState;
use bevy::prelude::*;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::path::PathBuf;

/// One resident's answer.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Decision {
    /// The resident.
    pub resident: String,
    /// What its plan (or usual day) held while the gathering goes on: the choices it was shown
    /// besides "nothing".
    pub shown: Vec<String>,
    /// Whether its plan was for the gathering's day (else the usual day was shown).
    pub planned: bool,
    /// Whether it had been invited before (a memory of the gathering told by someone).
    pub invited_before: bool,
    /// Its decision (`None`: no valid answer, the fail-safe).
    pub accept: Option<bool>,
    /// What it named as in its way (a shown item, or "nothing").
    pub in_the_way: String,
    /// Its reason, as said.
    pub reason: String,
    /// The reason gives none, or only echoes the prompt (as the town counts it).
    pub no_reason: bool,
}

impl Decision {
    /// Whether the decision agrees with what the answer named: yes with nothing in the way, or
    /// no with an item in the way or a reason of its own. `None` for no valid answer.
    pub fn coherent(&self) -> Option<bool> {
        let named = !self.in_the_way.is_empty() && self.in_the_way != NOTHING;
        self.accept.map(|yes| {
            if yes {
                !named
            } else {
                named || !self.no_reason
            }
        })
    }
}

/// A town's answers.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Run {
    /// Which town (its label in the report).
    pub town: String,
    /// The game time it was asked at.
    pub at: String,
    /// The gathering.
    pub gathering: Option<Gathering>,
    /// Every resident but the organiser, by name.
    pub decisions: Vec<Decision>,
}

/// Asks every resident of `sim` (a loaded save, usually) whether it accepts an invitation to the
/// gathering whose name holds `word` (the first organised, when empty), from its organiser.
pub fn run(sim: crate::SimPlugin, town: &str, word: &str) -> Result<Run, String> {
    let mut app = crate::headless_app(sim);
    app.update();
    let world = app.world_mut();
    let streams = streams_of(world);
    let g = find_gathering(&streams, word).ok_or_else(|| {
        format!(
            "{town}: no resident organises a gathering{}",
            if word.is_empty() {
                String::new()
            } else {
                format!(" named {word:?}")
            }
        )
    })?;
    let now = world.resource::<SimClock>().now;
    let weigh_first = world.resource::<Cognition>().0.social.weigh_first;
    let usual_day = world.resource::<Cognition>().0.social.usual_day;
    let ask_until_yes = world.resource::<Cognition>().0.aids.ask_until_yes;
    let topic = Topic {
        kind: TopicKind::Invitation,
        about: g.describe(),
        source: None,
        fact: None,
        gathering: Some(g.clone()),
        answer: None,
    };
    let mut state: SystemState<(
        Asker,
        Query<(
            &Identity,
            &Resident,
            &Outlook,
            Option<&DayPlan>,
            &MemoryStream,
        )>,
    )> = SystemState::new(world);
    let (ask, people) = state
        .get_mut(world)
        .map_err(|e| format!("{town}: the town cannot be asked: {e}"))?;
    let mut decisions = Vec::new();
    let mut requests = Vec::new();
    for (id, resident, outlook, plan, stream) in &people {
        if id.name == g.organiser {
            continue;
        }
        let usual = usual_day.then(|| usual_overlapping(&resident.persona, &g));
        let planned = overlapping(plan, &g);
        let line = template_line(&topic, &g.organiser, &id.name);
        requests.push(answer_request(
            &ask,
            InviteAsk {
                who: &Who::of(resident, outlook, &id.name, now),
                asker: &g.organiser,
                invitation: &line,
                gathering: &g,
                plan,
                usual: usual.clone(),
                stream,
                committed: Vec::new(),
                earlier: !ask_until_yes,
            },
        ));
        decisions.push(Decision {
            resident: id.name.clone(),
            planned: planned.is_some(),
            shown: planned.or(usual).unwrap_or_default(),
            invited_before: stream
                .nodes()
                .iter()
                .any(|n| n.told.is_some() && n.gathering.as_ref().is_some_and(|o| o.same(&g))),
            ..default()
        });
    }
    let label = town.to_string();
    let answers = crate::lab::ask::run_requests(world, requests, |done, all| {
        eprint!("\r{label}: {done}/{all} answers");
    });
    eprintln!();
    let names = world.resource::<TownNames>().words.clone();
    let own_words = world.resource::<Prompts>().get("invite_answer").own_words();
    let ctx = flaws::Context {
        names: &names,
        own_words: &own_words,
        earlier: &[],
    };
    for (d, a) in decisions.iter_mut().zip(answers) {
        let Some(v) = a else { continue };
        let text = |k: &str| v.get(k).and_then(Value::as_str).map(one_line);
        d.accept = v.get(decision_key(weigh_first)).and_then(Value::as_bool);
        d.in_the_way = text("in_the_way").unwrap_or_default();
        d.reason = text("reason").unwrap_or_default();
        d.no_reason = flaws::line_flaw(&d.reason, &ctx, false).is_some()
            || flaws::no_reason(&d.reason).is_some();
    }
    decisions.sort_by(|a, b| a.resident.cmp(&b.resident));
    Ok(Run {
        town: town.to_string(),
        at: now.to_string(),
        gathering: Some(g),
        decisions,
    })
}

/// Counts over some decisions: (asked, valid, accepted, named an item, accepted naming an item,
/// named nothing, accepted naming nothing, refusals without a reason, coherent).
fn counts(ds: &[&Decision]) -> [usize; 9] {
    let valid: Vec<&Decision> = ds.iter().copied().filter(|d| d.accept.is_some()).collect();
    let n = |f: &dyn Fn(&Decision) -> bool| valid.iter().filter(|d| f(d)).count();
    let yes = |d: &Decision| d.accept == Some(true);
    let named = |d: &Decision| d.in_the_way != NOTHING;
    [
        ds.len(),
        valid.len(),
        n(&yes),
        n(&named),
        n(&|d| named(d) && yes(d)),
        n(&|d| !named(d)),
        n(&|d| !named(d) && yes(d)),
        n(&|d| !yes(d) && !named(d) && d.no_reason),
        n(&|d| d.coherent() == Some(true)),
    ]
}

/// The report's section: per town and over all, then every answer.
pub fn report(runs: &[Run], folder: &Folder, weigh_first: bool) -> Result<String, String> {
    folder.write("invitations.json", &runs)?;
    let mut csv = String::from(
        "town,resident,planned,invited_before,shown,accept,in_the_way,reason,no_reason,coherent\n",
    );
    for r in runs {
        for d in &r.decisions {
            let q = |s: &str| format!("\"{}\"", s.replace('"', "\"\""));
            csv.push_str(&format!(
                "{},{},{},{},{},{},{},{},{},{}\n",
                q(&r.town),
                q(&d.resident),
                d.planned,
                d.invited_before,
                q(&d.shown.join("; ")),
                d.accept.map(|a| a.to_string()).unwrap_or_default(),
                q(&d.in_the_way),
                q(&d.reason),
                d.no_reason,
                d.coherent().map(|a| a.to_string()).unwrap_or_default()
            ));
        }
    }
    folder.write_text("invitations.csv", &csv)?;
    let mut md = format!(
        "## Invitations\n\nEvery resident but the organiser asked, once, whether it accepts the organiser's invitation (the answer's keys: {}). *Coherent*: a yes with nothing named in the way, or a no with a plan item named or a reason of its own.\n\n",
        if weigh_first {
            "what is in the way, the reason, then the decision (`cognition.social.weigh_first`)"
        } else {
            "the decision first, then what is in the way and the reason"
        }
    );
    md.push_str("| town | asked at | asked | valid | accepted | named an item (accepted) | named nothing (accepted) | no without a reason | coherent |\n|---|---|---|---|---|---|---|---|---|\n");
    let row = |label: &str, at: &str, ds: &[&Decision]| {
        let c = counts(ds);
        format!(
            "| {label} | {at} | {} | {} | {} | {} ({}) | {} ({}) | {} | {} |\n",
            c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7], c[8]
        )
    };
    let mut all: Vec<&Decision> = Vec::new();
    for r in runs {
        let ds: Vec<&Decision> = r.decisions.iter().collect();
        md.push_str(&row(&r.town, &r.at, &ds));
        all.extend(ds);
    }
    if runs.len() > 1 {
        md.push_str(&row("all", "", &all));
    }
    let invited: Vec<&Decision> = all.iter().copied().filter(|d| d.invited_before).collect();
    let not: Vec<&Decision> = all.iter().copied().filter(|d| !d.invited_before).collect();
    md.push_str(&row("invited before", "", &invited));
    md.push_str(&row("not invited before", "", &not));
    md.push_str("\n| town | resident | shown as in the way | answer | named | reason |\n|---|---|---|---|---|---|\n");
    for r in runs {
        for d in &r.decisions {
            md.push_str(&format!(
                "| {} | {} | {} | {} | {} | {}{} |\n",
                r.town,
                d.resident,
                if d.shown.is_empty() {
                    "–".into()
                } else {
                    d.shown.join("; ")
                },
                match d.accept {
                    Some(true) => "yes",
                    Some(false) => "no",
                    None => "(no valid answer)",
                },
                d.in_the_way,
                d.reason.replace('|', "/"),
                if d.no_reason { " *(no reason)*" } else { "" }
            ));
        }
    }
    Ok(md)
}

/// What `lab invitations` is asked (its command line's own options).
#[derive(Debug, Clone)]
pub struct Args {
    /// See `simulacra lab invitations --help`.
    pub gathering: String,
    /// See `simulacra lab invitations --help`.
    pub towns: Option<PathBuf>,
}

/// `lab invitations`: asks every resident of the towns the organiser's invitation at one moment and writes the report.
pub fn lab(c: &super::Common, args: Args) -> Result<std::path::PathBuf, String> {
    let Args { gathering, towns } = args;
    let sim = c.world()?;
    let config = sim.config.clone();
    let mut worlds: Vec<(String, SimPlugin)> = Vec::new();
    match &towns {
        Some(dir) => {
            for (seed, path) in crate::lab::runs::folder::towns_in(dir)? {
                // A kept town runs on its own settings: `--set` changes them here.
                let mut town = SimPlugin::from_save(&path, config.clone())?;
                crate::lab::town::apply_sets(&mut town.config, &c.sets)?;
                worlds.push((format!("town {seed}"), town));
            }
        }
        None => worlds.push(("town".into(), sim.clone())),
    }
    // What the towns run on (a kept town's own settings, `--set` applied).
    let config = worlds
        .first()
        .map(|(_, w)| w.config.clone())
        .unwrap_or(config);
    let worlds_weigh_first = config.cognition.social.weigh_first;
    let folder = c.folder("invitations")?;
    crate::lab::runs::inputs::write_inputs(&folder, &config, &sim.scenario_text, &[])?;
    let runs = worlds
        .into_iter()
        .map(|(label, town)| run(town, &label, &gathering))
        .collect::<Result<Vec<_>, _>>()?;
    let weigh_first = worlds_weigh_first;
    let section = report(&runs, &folder, weigh_first)?;
    super::finish_report(
        &folder,
        "Invitations",
        &config,
        &format!("{}; {} town(s).\n", sim.scenario.name, runs.len()),
        &[section],
        c.started.elapsed().as_secs_f64(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_answer_is_coherent_when_its_decision_agrees_with_what_it_named() {
        let d = |accept, way: &str, no_reason| Decision {
            accept,
            in_the_way: way.into(),
            no_reason,
            ..default()
        };
        assert_eq!(d(Some(true), NOTHING, true).coherent(), Some(true));
        assert_eq!(d(Some(true), "working", false).coherent(), Some(false));
        assert_eq!(d(Some(false), "working", true).coherent(), Some(true));
        assert_eq!(d(Some(false), NOTHING, false).coherent(), Some(true));
        assert_eq!(d(Some(false), NOTHING, true).coherent(), Some(false));
        assert_eq!(d(None, NOTHING, false).coherent(), None);
        let all = [
            d(Some(true), NOTHING, false),
            d(Some(false), "working", false),
            d(Some(false), NOTHING, true),
            d(None, "", false),
        ];
        let refs: Vec<&Decision> = all.iter().collect();
        assert_eq!(counts(&refs), [4, 3, 1, 1, 0, 2, 1, 1, 2]);
    }
}
