//! Taking a whole simulation out of a running world into a [`SaveData`].

use super::movement::MovementLog;
use super::{
    AgentSave, FORMAT, Meta, Mind, SaveContext, SaveData, SavedConversation, WorldSave, program,
};
use crate::agent::avatar::{Avatar, AvatarRoute};
use crate::agent::commitments::Commitments;
use crate::agent::conversation::PlayerChat;
use crate::agent::conversation::{Conversation, ConversationLog, Speech, Talking};
use crate::agent::{
    CurrentAction, DayPlan, Facing, GridPos, Identity, Outlook, Resident, WalkPath,
};
use crate::cognition::ask::pending::Pending;
use crate::cognition::day::replan::Replan;
use crate::cognition::mind::remember::MemoryWork;
use crate::cognition::resident::scratch::Scratch;
use crate::config::GameConfig;
use crate::llm::Llm;
use crate::memory::SpatialMemory;
use crate::memory::stream::MemoryStream;
use crate::play::ConsoleLog;
use crate::play::interview::Interviews;
use crate::sim::clock::SimClock;
use crate::sim::objects_state::ObjectStates;
use bevy::prelude::*;

/// The chat models of a run for `meta.ron`: each chat backend's kind and model (no endpoint
/// addresses, which may carry credentials).
fn chat_models(cfg: &GameConfig) -> String {
    use crate::llm::config::BackendConfig as B;
    cfg.llm
        .backends
        .iter()
        .filter_map(|b| match b {
            B::Llama(c) => Some(format!("llama.cpp:{}", c.model)),
            B::OpenAi(c) => Some(format!("openai:{}", c.model)),
            B::Scripted(c) => Some(format!("scripted:{}", c.name)),
            B::Replay(c) => Some(format!("replay:{}", c.file)),
            B::Bert(_) => None,
        })
        .collect::<Vec<_>>()
        .join(" + ")
}

/// Takes the whole simulation out of a world (answers that have arrived are taken in first).
pub fn capture(world: &mut World, name: &str) -> Result<SaveData, String> {
    if let Some(pump) = world.resource::<crate::sim::clock::StepGate>().pump {
        pump(world, None, &mut Default::default());
    }
    let ctx = world
        .get_resource::<SaveContext>()
        .ok_or("this app cannot save (no save settings)")?
        .clone();
    let scenario = world
        .resource::<crate::agent::persona::ScenarioRes>()
        .0
        .clone();
    let scenario_text = ctx.scenario_text.clone();
    let map = world.resource::<crate::sim::map::WorldMap>();
    let map_text = crate::sim::map::write_ron(map, "the town of this save");
    let clock = world.resource::<SimClock>().clone();
    let order = scenario.names();

    let mut agents = Vec::new();
    let mut embeddings = Vec::new();
    let mut q = world.query::<(
        Entity,
        &Identity,
        &GridPos,
        Option<&Facing>,
        &CurrentAction,
        Option<&WalkPath>,
        Option<&Talking>,
        Option<&Speech>,
        Has<Avatar>,
    )>();
    let mut people: Vec<_> = q
        .iter(world)
        .map(|(e, id, pos, f, act, walk, talk, speech, _)| {
            (
                e,
                AgentSave {
                    name: id.name.clone(),
                    entity: e.to_bits(),
                    pos: *pos,
                    facing: f.copied().unwrap_or_default(),
                    action: act.clone(),
                    walk: walk.cloned().unwrap_or_default(),
                    talking: talk.copied(),
                    speech: speech.cloned(),
                    mind: None,
                },
            )
        })
        .collect();
    people.sort_by_key(|(_, a)| {
        order
            .iter()
            .position(|n| *n == a.name)
            .unwrap_or(usize::MAX)
    });
    for (i, (e, mut a)) in people.into_iter().enumerate() {
        let ent = world.entity(e);
        if ent.contains::<Resident>() {
            let mut memory = ent.get::<MemoryStream>().cloned().unwrap_or_default();
            for (id, v) in memory.take_embeddings() {
                embeddings.push((i as u32, id, v));
            }
            let scratch = ent.get::<Scratch>().cloned().unwrap_or_default();
            a.mind = Some(Mind {
                outlook: ent.get::<Outlook>().cloned().unwrap_or_default(),
                scratch,
                plan: ent.get::<DayPlan>().cloned().unwrap_or_default(),
                spatial: ent.get::<SpatialMemory>().cloned().unwrap_or_default(),
                memory,
                pending: ent.get::<Pending>().cloned().unwrap_or_default(),
                memory_work: ent.get::<MemoryWork>().cloned().unwrap_or_default(),
                replan: ent.get::<Replan>().cloned(),
                commitments: ent.get::<Commitments>().cloned().unwrap_or_default(),
            });
        }
        agents.push(a);
    }
    let mut cq = world.query::<(Entity, &Conversation)>();
    let mut conversations: Vec<SavedConversation> = cq
        .iter(world)
        .map(|(e, c)| SavedConversation {
            entity: e.to_bits(),
            conversation: c.clone(),
        })
        .collect();
    conversations.sort_by(|a, b| {
        let key = |c: &SavedConversation| (c.conversation.started, c.conversation.names.clone());
        key(a).cmp(&key(b)).then(a.entity.cmp(&b.entity))
    });
    let chat_model = chat_models(&ctx.config);
    // The identity the vectors carry (a memory embedded by another model is embedded again).
    let embedder = world.resource::<Llm>().embedding_model();
    let seed = crate::llm::Sampling::default().seed;
    let meta = Meta {
        format: FORMAT,
        written_by: program(),
        name: name.to_string(),
        scenario: scenario.name.clone(),
        map: scenario.map.clone(),
        start: clock.start.to_string(),
        now: clock.now.to_string(),
        step: clock.step,
        sec_per_step: clock.sec_per_step,
        chat_model,
        embedder,
        seed,
        agents: agents.iter().map(|a| a.name.clone()).collect(),
    };
    let world_save = WorldSave {
        clock,
        objects: world.resource::<ObjectStates>().clone(),
        conversations,
        log: world.resource::<ConversationLog>().lines.clone(),
        player_chat: world.resource::<PlayerChat>().clone(),
        interviews: world.resource::<Interviews>().clone(),
        console: world.resource::<ConsoleLog>().clone(),
        console_queue: Vec::new(),
        avatar_route: world.resource::<AvatarRoute>().clone(),
        replaced: world
            .get_resource::<crate::cognition::ask::flaws::Fallbacks>()
            .map(|f| {
                f.counts
                    .iter()
                    .map(|((w, f), n)| (w.clone(), *f, *n))
                    .collect()
            })
            .unwrap_or_default(),
        attendance: world
            .get_resource::<crate::cognition::talk::invite::Attendance>()
            .cloned()
            .unwrap_or_default(),
    };
    Ok(SaveData {
        meta,
        scenario_text,
        map_text,
        config: ctx.config.clone(),
        world: world_save,
        agents,
        embeddings,
        movement: world.resource::<MovementLog>().clone(),
    })
}
