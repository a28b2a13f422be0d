//! Putting a [`SaveData`] back into a world: every person's state, the conversations and the
//! world's resources, entity references re-linked ([`Remap`]), unanswered LLM work asked again;
//! at start (`--load`) or into a running game.

use super::disk::agent_file;
use super::entity_ref::{EntityMap, Remap};
use super::{SaveContext, SaveData};
use crate::agent::Identity;
use crate::agent::conversation::PlayerChat;
use crate::agent::conversation::{Conversation, ConversationLog, Speech, Talking};
use crate::cognition::ask::pending::Pending;
use crate::cognition::day::replan::Replan;
use crate::llm::{Llm, LlmHandle};
use crate::play::ConsoleLog;
use crate::play::interview::Interviews;
use bevy::prelude::*;
use std::path::{Path, PathBuf};

impl Remap for Pending {
    fn remap(&mut self, m: &EntityMap) {
        use crate::cognition::ask::job::Job;
        for j in self.jobs_mut() {
            match &mut j.job {
                Job::React { target, .. } => m.map(target),
                Job::ChatQuery { conversation }
                | Job::DialogueQuery { conversation }
                | Job::Dialogue { conversation, .. }
                | Job::Utterance { conversation, .. }
                | Job::LineCheck { conversation, .. }
                | Job::InviteAnswer { conversation, .. }
                | Job::ChatMemory { conversation } => m.map(conversation),
                // Every other job holds no entity. Listed one by one, not `_`: a new job that
                // holds one does not compile until it is remapped here.
                Job::Importance(_)
                | Job::Embed(_)
                | Job::ScaleExample(_)
                | Job::ReflectQuestions
                | Job::ReflectQuery { .. }
                | Job::ReflectInsights { .. }
                | Job::ReviseQuery { .. }
                | Job::Revise { .. }
                | Job::PlanDay { .. }
                | Job::PlanHours { .. }
                | Job::Decompose { .. }
                | Job::ActivityVector { .. }
                | Job::Sector { .. }
                | Job::Arena { .. }
                | Job::Details { .. }
                | Job::Replan { .. }
                | Job::ReactObject { .. }
                | Job::InterviewQuery { .. }
                | Job::InterviewAnswer { .. } => {}
            }
        }
    }
}

impl Remap for Talking {
    fn remap(&mut self, m: &EntityMap) {
        m.map(&mut self.conversation);
        m.map(&mut self.partner);
    }
}

impl Remap for Conversation {
    fn remap(&mut self, m: &EntityMap) {
        for p in &mut self.people {
            m.map(p);
        }
    }
}

impl Remap for PlayerChat {
    fn remap(&mut self, m: &EntityMap) {
        m.map_opt(&mut self.wants);
        m.map_opt(&mut self.conversation);
    }
}

impl Remap for Interviews {
    fn remap(&mut self, m: &EntityMap) {
        for iv in self.open.iter_mut().chain(self.last.iter_mut()) {
            m.map(&mut iv.target);
        }
    }
}

/// Checks that a save fits the people of the world it is loaded into.
pub fn check_people(data: &SaveData, names: &[String], dir: &Path) -> Result<(), String> {
    for (i, a) in data.agents.iter().enumerate() {
        if !names.contains(&a.name) {
            return Err(format!(
                "{}: {} is not in the scenario being run (its people: {})",
                dir.join("agents").join(agent_file(i, &a.name)).display(),
                a.name,
                names.join(", ")
            ));
        }
    }
    for n in names {
        if !data.agents.iter().any(|a| &a.name == n) {
            return Err(format!(
                "{}: no state for {n}, who is in its scenario (meta.ron lists {})",
                dir.display(),
                data.meta.agents.join(", ")
            ));
        }
    }
    Ok(())
}

/// Checks that every person of a save stands and walks on the town's map (a damaged or
/// hand-made save could put someone where no path leads).
pub fn check_positions(
    data: &SaveData,
    map: &crate::sim::map::WorldMap,
    dir: &Path,
) -> Result<(), String> {
    for (i, a) in data.agents.iter().enumerate() {
        let off = [("pos.tile", a.pos.tile), ("pos.prev", a.pos.prev)]
            .into_iter()
            .chain(a.walk.tiles.iter().map(|t| ("walk.tiles", *t)))
            .find(|(_, t)| !map.in_bounds(*t));
        if let Some((field, t)) = off {
            return Err(format!(
                "{}: field `{field}`: {} at ({}, {}) is off the town's map ({}×{} tiles)",
                dir.join("agents").join(agent_file(i, &a.name)).display(),
                a.name,
                t.x,
                t.y,
                map.width,
                map.height
            ));
        }
    }
    Ok(())
}

/// Puts a saved simulation into a world whose people were spawned from the save's scenario
/// (or one with the same people): every person's state, the conversations, the world's
/// resources; LLM work whose answer had not come is asked again.
pub fn restore(world: &mut World, data: &SaveData, dir: &Path) -> Result<(), String> {
    let mut q = world.query::<(Entity, &Identity)>();
    let people: Vec<(Entity, String)> = q.iter(world).map(|(e, id)| (e, id.name.clone())).collect();
    let names: Vec<String> = people.iter().map(|p| p.1.clone()).collect();
    check_people(data, &names, dir)?;
    check_positions(data, world.resource::<crate::sim::map::WorldMap>(), dir)?;

    // The work of the state being replaced is not wanted any more: free the model of it.
    let mut pq = world.query::<&Pending>();
    // (An interview's question is a job in its resident's `Pending` too.)
    let stale: Vec<LlmHandle> = pq
        .iter(world)
        .flat_map(|p| p.jobs().iter().map(|j| j.handle))
        .collect();
    world.resource_scope(|_, mut llm: Mut<Llm>| stale.into_iter().for_each(|h| llm.cancel(h)));

    // Conversations are spawned anew; the old ones go.
    let mut cq = world.query_filtered::<Entity, With<Conversation>>();
    let old: Vec<Entity> = cq.iter(world).collect();
    for e in old {
        world.despawn(e);
    }
    let mut map = EntityMap::default();
    for a in &data.agents {
        let e = people.iter().find(|p| p.1 == a.name).expect("checked").0;
        map.0.insert(saved(a.entity), e);
    }
    let mut conv_entities = Vec::new();
    for c in &data.world.conversations {
        let e = world.spawn_empty().id();
        map.0.insert(saved(c.entity), e);
        conv_entities.push(e);
    }
    for (c, e) in data.world.conversations.iter().zip(conv_entities) {
        let mut conv = c.conversation.clone();
        conv.remap(&map);
        world
            .entity_mut(e)
            .insert((Name::new("conversation"), conv));
    }

    let mut handle = u64::MAX;
    for (i, a) in data.agents.iter().enumerate() {
        let e = map.get(saved(a.entity));
        let mut ent = world.entity_mut(e);
        ent.insert((a.pos, a.facing, a.action.clone()));
        if a.mind.is_some() {
            // Residents walk their paths; the avatar is walked by the player and has none.
            ent.insert(a.walk.clone());
        }
        match a.talking {
            Some(mut t) => {
                t.remap(&map);
                ent.insert(t);
            }
            None => {
                ent.remove::<Talking>();
            }
        }
        match &a.speech {
            Some(s) => {
                ent.insert(s.clone());
            }
            None => {
                ent.remove::<Speech>();
            }
        }
        let Some(mind) = &a.mind else { continue };
        let mut scratch = mind.scratch.clone();
        // A save is data: no more kept subtasks than a resident keeps.
        let over = scratch
            .subtasks
            .len()
            .saturating_sub(crate::cognition::resident::scratch::KEPT_SUBTASKS);
        scratch.subtasks.drain(..over);
        let mut memory = mind.memory.clone();
        for (_, id, v) in data.embeddings.iter().filter(|(k, _, _)| *k as usize == i) {
            memory.set_embedding(*id, v.clone());
        }
        let mut pending = mind.pending.clone();
        pending.remap(&map);
        ent.insert((
            mind.outlook.clone(),
            scratch,
            mind.plan.clone(),
            mind.spatial.clone(),
            memory,
            mind.memory_work.clone(),
            mind.commitments.clone(),
        ));
        match &mind.replan {
            Some(r) => {
                ent.insert(r.clone());
            }
            None => {
                ent.remove::<Replan>();
            }
        }
        // Answers that had come stay; the others are asked again.
        world.resource_scope(|_, mut llm: Mut<Llm>| {
            for j in pending.jobs_mut() {
                if j.reply.is_some() {
                    handle -= 1;
                    j.handle = LlmHandle(handle);
                } else {
                    j.handle = llm.submit(j.request.clone().for_agent(e));
                }
            }
        });
        world.entity_mut(e).insert(pending);
    }

    let w = &data.world;
    world.insert_resource(w.clock.clone());
    world.insert_resource(w.objects.clone());
    let mut log = w.log.clone();
    for l in &mut log {
        l.conversation = map.get(l.conversation);
    }
    // Every line of a save was heard before it was written.
    let heard = log.len();
    world.insert_resource(ConversationLog::new(log, heard));
    world.insert_resource(crate::cognition::ask::flaws::Fallbacks {
        counts: w
            .replaced
            .iter()
            .map(|(what, flaw, n)| ((what.clone(), *flaw), *n))
            .collect(),
    });
    world.insert_resource(w.attendance.clone());
    let mut chat = w.player_chat.clone();
    chat.remap(&map);
    world.insert_resource(chat);
    let mut interviews = w.interviews.clone();
    interviews.remap(&map);
    // A question in flight is asked again from the start (its jobs, asked again above with the
    // rest of the resident's work, are dropped first).
    let reask = interviews
        .open
        .as_mut()
        .and_then(|iv| iv.question.take().map(|(q, _)| (q, iv.target)));
    world.insert_resource(interviews);
    if let Some((q, target)) = reask {
        let gone = world
            .get_mut::<Pending>(target)
            .map(|mut p| p.drop_where(crate::play::interview::is_interview))
            .unwrap_or_default();
        world.resource_scope(|_, mut llm: Mut<Llm>| gone.into_iter().for_each(|h| llm.cancel(h)));
        crate::play::interview::ask(world, &q)?;
    }
    // A save never runs a command: lines an older save (or a crafted one) held to run are
    // shown, not run; the console's queue stays this game's own.
    if !w.console_queue.is_empty() {
        let mut log = world.resource_mut::<ConsoleLog>();
        log.err(format!(
            "the save held {} console line(s) to run; a save never runs commands, so they were not run:",
            w.console_queue.len()
        ));
        for l in &w.console_queue {
            log.out(format!("  (not run) {}", crate::data::clean_text(l)));
        }
    }
    world.insert_resource(w.avatar_route.clone());
    world.insert_resource(data.movement.clone());
    if let Some(mut ctx) = world.get_resource_mut::<SaveContext>() {
        ctx.last_autosave = w.clock.step;
    }
    Ok(())
}

fn saved(bits: u64) -> Entity {
    Entity::try_from_bits(bits).unwrap_or(Entity::PLACEHOLDER)
}

/// A save to apply once the people are spawned (`--load`).
#[derive(Resource)]
pub struct LoadOnStart(pub Box<SaveData>, pub PathBuf);

/// Applies [`LoadOnStart`] (in `Startup`, after the people are spawned). A save that does not
/// fit was already refused when it was read, so a failure here is reported in the console.
pub fn load_on_start(world: &mut World) {
    let Some(LoadOnStart(data, dir)) = world.remove_resource::<LoadOnStart>() else {
        return;
    };
    // The console as it was (a game loaded into a running one keeps its own console instead);
    // lines said before the load (notes about the town's art) stay after it.
    let now = std::mem::take(&mut world.resource_mut::<ConsoleLog>().lines);
    let mut console = data.world.console.clone();
    console.lines.extend(now);
    world.insert_resource(console);
    match restore(world, &data, &dir) {
        Ok(()) => world.resource_mut::<ConsoleLog>().out(format!(
            "loaded {} ({}, step {})",
            dir.display(),
            data.meta.now,
            data.meta.step
        )),
        Err(e) => world
            .resource_mut::<ConsoleLog>()
            .err(format!("load failed: {e}")),
    }
}
