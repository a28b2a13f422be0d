//! Running a console line against the world. Every outcome is a line or a few in the
//! [`ConsoleLog`](super::ConsoleLog): an answer, or one line saying what was wrong. Nothing the
//! player types can panic, run a second command, or reach a resident's memory other than through
//! the command's own effect (a whisper adds one thought to its target).

use super::command::{Command, clean_text, help_text, parse, resolve_name, split_name};
use super::{ConsoleLog, LineKind, SaveDesk, SaveRequest};
use crate::agent::avatar::Avatar;
use crate::agent::{CurrentAction, DayPlan, GridPos, Identity, Resident, mentioned_names};
use crate::cognition::day::replan::Replan;
use crate::memory::spatial::SpatialMemory;
use crate::memory::stream::{MemoryStream, NewNode, NodeKind};
use crate::sim::clock::{SimClock, SimPace, Speed};
use crate::sim::map::{Tile, WorldMap};
use crate::sim::objects_state::ObjectStates;
use bevy::prelude::*;

/// Importance of a whispered thought (the inner voice is meant to weigh).
pub const WHISPER_IMPORTANCE: u8 = 9;

/// Most characters of an object state set by the player.
pub const MAX_STATE_CHARS: usize = 80;

/// Runs one console line; what it says goes to the console log.
pub fn execute(world: &mut World, raw: &str) {
    let (line, cut) = clean_text(raw);
    let mut log = world.resource_mut::<ConsoleLog>();
    log.lines.push((LineKind::Input, line.clone()));
    if cut {
        log.out(format!(
            "(the line was cut to {} characters)",
            super::command::MAX_INPUT_CHARS
        ));
    }
    let result = match parse(&line) {
        Ok(None) => return,
        Ok(Some(cmd)) => run(world, cmd),
        Err(e) => Err(e),
    };
    let mut log = world.resource_mut::<ConsoleLog>();
    match result {
        Ok(text) if !text.is_empty() => log.out(text),
        Ok(_) => {}
        Err(e) => log.err(e),
    }
}

/// Everyone in town: (entity, name, is a resident).
pub fn people(world: &mut World) -> Vec<(Entity, String, bool)> {
    let mut q = world
        .query_filtered::<(Entity, &Identity, Has<Resident>), Or<(With<Resident>, With<Avatar>)>>();
    let mut v: Vec<(Entity, String, bool)> = q
        .iter(world)
        .map(|(e, id, r)| (e, id.name.clone(), r))
        .collect();
    v.sort_by(|a, b| a.1.cmp(&b.1));
    v
}

/// Whether a command would change the simulation (a replay refuses those).
fn changes_the_town(cmd: &Command) -> bool {
    !matches!(
        cmd,
        Command::Help
            | Command::Pause
            | Command::Resume
            | Command::Speed(_)
            | Command::PrintSchedule(_)
            | Command::PrintMemory(..)
            | Command::PrintSpatial(_)
            | Command::PrintTime
            | Command::PrintTile(..)
            | Command::Saves
            | Command::Fork(..)
    )
}

/// A resident by (partial) name.
fn resident(world: &mut World, query: &str) -> Result<(Entity, String), String> {
    let all = people(world);
    let names: Vec<String> = all.iter().filter(|p| p.2).map(|p| p.1.clone()).collect();
    let name = resolve_name(query, &names)?;
    let e = all
        .iter()
        .find(|p| p.1 == name)
        .map(|p| p.0)
        .expect("found");
    Ok((e, name.to_string()))
}

fn resident_names(world: &mut World) -> Vec<String> {
    people(world)
        .into_iter()
        .filter(|p| p.2)
        .map(|p| p.1)
        .collect()
}

/// Hands a save, load, fork or listing to the save layer's [`SaveDesk`].
fn save_request(world: &mut World, req: SaveRequest) -> Result<String, String> {
    let desk = world
        .get_resource::<SaveDesk>()
        .copied()
        .ok_or("this app cannot save or load (no save settings)")?;
    (desk.0)(world, req)
}

fn run(world: &mut World, cmd: Command) -> Result<String, String> {
    if world.contains_resource::<crate::sim::clock::Frozen>() && changes_the_town(&cmd) {
        return Err(
            "this is a replay of what happened: it shows, it cannot change (`simulacra play --load <save>` plays on from a save)"
                .into(),
        );
    }
    match cmd {
        Command::Help => Ok(help_text()),
        Command::Save(name) => save_request(world, SaveRequest::Save(name)),
        Command::Load(name) => save_request(world, SaveRequest::Load(name)),
        Command::Fork(from, to) => save_request(world, SaveRequest::Fork(from, to)),
        Command::Saves => save_request(world, SaveRequest::List),
        Command::Run(n) => {
            world.resource_mut::<SimPace>().requested += n;
            Ok(format!("running {n} steps"))
        }
        Command::Pause => {
            world.resource_mut::<SimPace>().paused = true;
            Ok("paused".into())
        }
        Command::Resume => {
            let mut pace = world.resource_mut::<SimPace>();
            pace.paused = false;
            Ok(if pace.requested_only {
                "this run moves only by `run N` (it has no real time to follow)".into()
            } else {
                "running".into()
            })
        }
        Command::Speed(n) => {
            let mut pace = world.resource_mut::<SimPace>();
            pace.speed = if n == 0 {
                Speed::Max
            } else {
                Speed::Times(n.next_power_of_two().min(64))
            };
            Ok(format!("speed {:?}", pace.speed))
        }
        Command::PrintTime => {
            let c = world.resource::<SimClock>();
            Ok(format!("{} (step {})", c.now, c.step))
        }
        Command::PrintTile(x, y) => print_tile(world, Tile::new(x, y)),
        Command::PrintSchedule(q) => {
            let (e, name) = resident(world, &q)?;
            let plan = world.get::<DayPlan>(e).cloned().unwrap_or_default();
            let action = world.get::<CurrentAction>(e).cloned();
            Ok(schedule_text(&name, &plan, action.as_ref()))
        }
        Command::PrintMemory(q, kind) => {
            let (e, name) = resident(world, &q)?;
            let Some(stream) = world.get::<MemoryStream>(e) else {
                return Err(format!("{name} has no memory"));
            };
            Ok(memory_text(&name, stream, kind, 30))
        }
        Command::PrintSpatial(q) => {
            let (e, name) = resident(world, &q)?;
            Ok(world
                .get::<SpatialMemory>(e)
                .map(|s| format!("{name} knows:\n{}", s.to_text()))
                .unwrap_or_else(|| format!("{name} knows no places")))
        }
        Command::Whisper(rest) => {
            let names = resident_names(world);
            let (name, text) = split_name(&rest, &names)?;
            let name = name.to_string();
            whisper(world, &name, &text)
        }
        Command::Interview(q, persona) => {
            let (e, name) = resident(world, &q)?;
            let (persona, _) = clean_text(&persona);
            let persona: String = persona.chars().take(60).collect();
            let closed = if world
                .resource::<super::interview::Interviews>()
                .open
                .is_some()
            {
                super::interview::end(world).ok()
            } else {
                None
            };
            let now = world.resource::<SimClock>().now;
            world.resource_mut::<super::interview::Interviews>().open =
                Some(super::interview::Interview {
                    target: e,
                    name: name.clone(),
                    persona: persona.clone(),
                    started: now,
                    lines: Vec::new(),
                    question: None,
                });
            Ok(format!(
                "{}interviewing {name} as {persona}: `ask <question>`, `end` to close",
                closed.map(|c| format!("{c}\n")).unwrap_or_default()
            ))
        }
        Command::Ask(q) => super::interview::ask(world, &q).map(|_| String::new()),
        Command::EndInterview => super::interview::end(world),
        Command::SaveTranscript(path) => {
            let iv = world.resource::<super::interview::Interviews>();
            let Some(iv) = iv.open.as_ref().or(iv.last.as_ref()) else {
                return Err("no interview to save yet".into());
            };
            let text = iv.transcript();
            crate::data::write_atomic(&path, crate::data::clean_text(&text).as_bytes())
                .map(|_| format!("transcript written to {}", path.display()))
        }
        Command::Set(addr, state) => {
            let address = world.resource::<WorldMap>().find_object(&addr)?;
            let (state, _) = clean_text(&state);
            let state: String = state.chars().take(MAX_STATE_CHARS).collect();
            let now = world.resource::<SimClock>().now;
            world
                .resource_mut::<ObjectStates>()
                .set(&address, &state, None, now);
            let object = address.rsplit(':').next().unwrap_or(&address);
            Ok(
                if world.resource::<ObjectStates>().get(&address).is_some() {
                    format!("the {object} is {state}")
                } else {
                    format!("the {object} is idle")
                },
            )
        }
        Command::LoadHistory(path) => {
            crate::cognition::resident::history::load_history(world, &path)
                .map(|r| r.describe(&path))
                .map_err(|e| e.to_string())
        }
        Command::Talk(q) => {
            let (e, name) = resident(world, &q)?;
            if let Some(problem) = talk_check(world, e, &name) {
                return Err(problem);
            }
            let mut chat = world.resource_mut::<crate::agent::conversation::PlayerChat>();
            if chat.conversation.is_some() {
                return Err("you are already in a conversation: `bye` first".into());
            }
            chat.wants = Some(e);
            Ok(format!("you approach {name}"))
        }
        Command::Goto(q) => {
            let (e, name) = resident(world, &q)?;
            let to = world
                .get::<GridPos>(e)
                .map(|p| p.tile)
                .ok_or("not on the map")?;
            let from = {
                let mut q = world.query_filtered::<&GridPos, With<Avatar>>();
                q.iter(world)
                    .next()
                    .map(|p| p.tile)
                    .ok_or("there is no avatar")?
            };
            let map = world.resource::<WorldMap>();
            let goals: Vec<Tile> = to
                .neighbours()
                .into_iter()
                .filter(|t| map.walkable(*t))
                .collect();
            let path = crate::sim::path::path_to_any(map, from, &goals, &|_| false)
                .ok_or_else(|| format!("no way from here to {name}"))?;
            let n = path.len();
            world
                .resource_mut::<crate::agent::avatar::AvatarRoute>()
                .tiles = path.into();
            Ok(format!("walking to {name} ({n} tiles)"))
        }
        Command::Say(text) => super::talk::player_says(world, &text).map(|n| n.unwrap_or_default()),
        Command::Bye => {
            super::talk::player_leaves(world).map(|_| "you leave the conversation".into())
        }
    }
}

/// Why the avatar cannot start talking with a resident now, if it cannot.
fn talk_check(world: &mut World, resident: Entity, name: &str) -> Option<String> {
    let max = world
        .resource::<crate::cognition::config::Cognition>()
        .0
        .talk_max_tiles;
    let mut q = world
        .query_filtered::<(&GridPos, Has<crate::agent::conversation::Talking>), With<Avatar>>();
    let (apos, atalking) = q.iter(world).next().map(|(p, t)| (*p, t))?;
    let r = world.entity(resident);
    let (action, pos) = (r.get::<CurrentAction>()?, r.get::<GridPos>()?);
    let talking = r.contains::<crate::agent::conversation::Talking>();
    super::talk::talk_problem(name, (action, pos, talking), (&apos, atalking), max)
}

/// A whisper: a strong thought of the resident, which then re-plans the rest of its day.
pub fn whisper(world: &mut World, name: &str, text: &str) -> Result<String, String> {
    let (text, _) = clean_text(text);
    if text.is_empty() {
        return Err("expected a text to whisper".into());
    }
    let all = people(world);
    let Some((e, _, true)) = all.iter().find(|p| p.1 == name).cloned() else {
        return Err(format!("no resident called {name}"));
    };
    let names: Vec<String> = all.iter().map(|p| p.1.clone()).collect();
    let now = world.resource::<SimClock>().now;
    let description = format!("{name}'s inner voice says: \"{}\"", text.replace('"', "'"));
    let gathering = crate::agent::commitments::gathering_in(
        &text,
        name,
        now,
        world.resource::<crate::sim::map::WorldMap>(),
    );
    let Some(mut stream) = world.get_mut::<MemoryStream>(e) else {
        return Err(format!("{name} has no memory"));
    };
    stream.add(
        NodeKind::Thought,
        NewNode {
            subject: name.to_string(),
            predicate: "thinks".into(),
            object: "inner voice".into(),
            keywords: [
                vec!["inner voice".to_string()],
                mentioned_names(&text, name, &names),
            ]
            .concat(),
            description: description.clone(),
            importance: Some(WHISPER_IMPORTANCE),
            gathering,
            ..default()
        },
        now,
    );
    let model = world
        .resource::<crate::cognition::config::Cognition>()
        .0
        .planning
        == crate::cognition::config::Planning::Model;
    if model {
        world.entity_mut(e).insert(Replan {
            thought: description,
        });
        Ok(format!(
            "{name} hears an inner voice and will re-plan the rest of the day"
        ))
    } else {
        Ok(format!(
            "{name} hears an inner voice (planning follows the routine: no re-plan)"
        ))
    }
}

fn print_tile(world: &mut World, t: Tile) -> Result<String, String> {
    let map = world.resource::<WorldMap>();
    if !map.in_bounds(t) {
        return Err(format!(
            "tile {t} is outside the map ({} × {} tiles, from 0 0)",
            map.width, map.height
        ));
    }
    let address = map.address(t).to_string();
    let walkable = map.walkable(t);
    let state = world
        .resource::<ObjectStates>()
        .get(&address)
        .map(|s| format!("; it is {}", s.state))
        .unwrap_or_default();
    let mut q = world.query::<(&Identity, &GridPos)>();
    let here: Vec<String> = q
        .iter(world)
        .filter(|(_, p)| p.tile == t)
        .map(|(i, _)| i.name.clone())
        .collect();
    Ok(format!(
        "tile {t}: {address}{state}; {}{}",
        if walkable { "walkable" } else { "blocked" },
        if here.is_empty() {
            String::new()
        } else {
            format!("; here: {}", here.join(", "))
        }
    ))
}

/// A plan as text: the day in broad strokes, then each block, the current one marked.
pub fn schedule_text(name: &str, plan: &DayPlan, action: Option<&CurrentAction>) -> String {
    let hm = crate::sim::time::minute_clock;
    let mut s = format!(
        "{name}'s plan ({:?}, wakes at {}):\n",
        plan.source,
        hm(plan.wake_min)
    );
    if !plan.broad.is_empty() {
        s.push_str(&format!("  in broad strokes: {}\n", plan.broad.join("; ")));
    }
    for (i, b) in plan.blocks.iter().enumerate() {
        let mark = if plan.current == Some(i) { "→" } else { " " };
        s.push_str(&format!(
            "{mark} {}–{} {} {}{}\n",
            hm(b.start),
            hm(b.end),
            b.emoji,
            b.description,
            if b.address.is_empty() {
                String::new()
            } else {
                format!(" @ {}", b.address)
            }
        ));
    }
    if let Some(a) = action {
        s.push_str(&format!("now: {} {}", a.emoji, a.description));
    }
    s
}

/// The newest memories of a stream (of one kind or all), newest first.
pub fn memory_text(name: &str, stream: &MemoryStream, kind: Option<NodeKind>, n: usize) -> String {
    let nodes: Vec<_> = stream
        .nodes()
        .iter()
        .rev()
        .filter(|m| kind.is_none_or(|k| m.kind == k))
        .take(n)
        .collect();
    let mut s = format!(
        "{name}'s newest memories ({} in all):\n",
        stream.nodes().len()
    );
    for m in nodes {
        s.push_str(&format!(
            "  [{:?} {}] {} importance {}: {}\n",
            m.kind, m.id.0, m.created, m.importance, m.description
        ));
    }
    s
}
