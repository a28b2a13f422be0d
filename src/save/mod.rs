//! Keeping and sharing simulations. A simulation is a directory (`saves/<name>/`):
//!
//! - `meta.ron`: format version, the program that wrote it, scenario, map, start, current time
//!   and step, seconds per step, chat model and embedder, sampling seed, the people in order;
//! - `scenario.ron`, `map.ron`, `config.ron`: the town, the people and the settings the run used,
//!   so a save opens on another machine;
//! - `world.ron`: object states, conversations and the town's log, the player's chat, the open
//!   interview, the console and the avatar's route;
//! - `agents/NN-name.ron`: each person's whole state (position, walk, action, outlook, scratch,
//!   plan, spatial memory, memory stream without its vectors, LLM work in flight with the
//!   requests to ask again);
//! - `embeddings.bin`: the memory vectors, keyed by agent and node id, with a checksum;
//! - `movement.jsonl`: per step, what changed for each person (for `simulacra replay`).
//!
//! Text parts are RON a person can read and diff. Writing is atomic ([`disk`]); loading checks
//! the version and every part and names the file and what is wrong. Headless: no render types.

pub mod bench;
pub mod disk;
pub mod entity_ref;
pub mod movement;
pub mod replay;

use crate::agent::avatar::{Avatar, AvatarRoute};
use crate::agent::{
    CurrentAction, DayPlan, Facing, GridPos, Identity, Outlook, Resident, Scratch, WalkPath,
};
use crate::cognition::converse::{Conversation, ConversationLog, LoggedLine, Speech, Talking};
use crate::cognition::pending::Pending;
use crate::cognition::remember::MemoryWork;
use crate::cognition::replan::Replan;
use crate::config::GameConfig;
use crate::llm::{Embedding, Llm, LlmHandle};
use crate::memory::SpatialMemory;
use crate::memory::stream::{MemoryStream, NodeId};
use crate::play::interview::Interviews;
use crate::play::talk::PlayerChat;
use crate::play::{ConsoleLog, ConsoleQueue};
use crate::sim::clock::SimClock;
use crate::sim::objects_state::ObjectStates;
use bevy::prelude::*;
use entity_ref::{EntityMap, Remap};
use movement::MovementLog;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// The save format this build writes (and the newest it reads).
pub const FORMAT: u32 = 1;

/// Who wrote a save.
pub fn program() -> String {
    format!("simulacra {}", env!("CARGO_PKG_VERSION"))
}

/// `meta.ron`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Meta {
    /// Save format version ([`FORMAT`]).
    pub format: u32,
    /// The program that wrote it ("simulacra 0.1.0").
    pub written_by: String,
    /// The save's name.
    pub name: String,
    /// The scenario's name.
    pub scenario: String,
    /// The map's name or path as the scenario gave it.
    pub map: String,
    /// When the simulation began ("2023-02-13 00:00:00").
    pub start: String,
    /// Game time when saved.
    pub now: String,
    /// Steps run.
    pub step: u64,
    /// Game seconds per step.
    pub sec_per_step: u32,
    /// The chat model(s) of the run.
    pub chat_model: String,
    /// The sentence embedder of the run.
    pub embedder: String,
    /// The sampling seed of requests.
    pub seed: u32,
    /// The people, in order (residents, then the player's avatar): `agents/NN-…ron`.
    pub agents: Vec<String>,
}

/// Only the version fields, read first so that a save of another format is named as such
/// instead of failing on a field it does not have.
#[derive(Deserialize)]
struct MetaHead {
    format: u32,
    #[serde(default)]
    written_by: String,
}

/// `world.ron`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WorldSave {
    /// The clock.
    pub clock: SimClock,
    /// Object states.
    pub objects: ObjectStates,
    /// Conversations (going on or over) with the entity they had.
    pub conversations: Vec<SavedConversation>,
    /// Every line said in town.
    pub log: Vec<LoggedLine>,
    /// The player's side of conversations.
    pub player_chat: PlayerChat,
    /// The open interview and the last one.
    pub interviews: Interviews,
    /// The console's lines.
    pub console: ConsoleLog,
    /// Console lines not yet run.
    #[serde(default)]
    pub console_queue: Vec<String>,
    /// The avatar's `goto` walk.
    pub avatar_route: AvatarRoute,
}

/// A conversation entity.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SavedConversation {
    /// Its entity when saved.
    pub entity: u64,
    /// The conversation.
    pub conversation: Conversation,
}

/// `agents/NN-name.ron`: one person.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AgentSave {
    /// Full name (how the person is found in the scenario).
    pub name: String,
    /// Its entity when saved.
    pub entity: u64,
    /// Where they stand.
    pub pos: GridPos,
    /// Which way they face.
    pub facing: Facing,
    /// What they do.
    pub action: CurrentAction,
    /// Where they walk.
    #[serde(default)]
    pub walk: WalkPath,
    /// The conversation they are in.
    #[serde(default)]
    pub talking: Option<Talking>,
    /// The line they are saying.
    #[serde(default)]
    pub speech: Option<Speech>,
    /// A resident's mind (the avatar has none).
    #[serde(default)]
    pub mind: Option<Mind>,
}

/// What a resident knows, plans and waits for.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Mind {
    /// `currently` and the plan requirement.
    pub outlook: Outlook,
    /// Short-term state.
    pub scratch: Scratch,
    /// The person they are chatting with (entity when saved).
    #[serde(default)]
    pub chatting_with: Option<u64>,
    /// Today's plan.
    pub plan: DayPlan,
    /// Known places.
    pub spatial: SpatialMemory,
    /// The memory stream (vectors are in `embeddings.bin`).
    pub memory: MemoryStream,
    /// LLM work in flight.
    #[serde(default)]
    pub pending: Pending,
    /// Memory work bookkeeping.
    #[serde(default)]
    pub memory_work: MemoryWork,
    /// A re-plan under way after a whisper.
    #[serde(default)]
    pub replan: Option<Replan>,
}

/// A whole simulation in memory.
#[derive(Debug, Clone)]
pub struct SaveData {
    /// `meta.ron`.
    pub meta: Meta,
    /// `scenario.ron` as the run read it.
    pub scenario_text: String,
    /// `map.ron`.
    pub map_text: String,
    /// `config.ron`.
    pub config: GameConfig,
    /// `world.ron`.
    pub world: WorldSave,
    /// `agents/*.ron`, in `meta.agents` order.
    pub agents: Vec<AgentSave>,
    /// `embeddings.bin`: (agent index, node, vector).
    pub embeddings: Vec<(u32, NodeId, Embedding)>,
    /// `movement.jsonl`.
    pub movement: MovementLog,
}

/// Saving and loading settings (`saves` in the config).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SaveSettings {
    /// Where saves live (relative: to the current folder).
    pub dir: String,
    /// Autosave every this many game minutes (0: never; the shipped `config/simulacra.ron` says
    /// 60, a config that leaves it out, as tests and benches do, never autosaves).
    pub autosave_minutes: u32,
    /// Autosaves kept (older ones are removed).
    pub autosave_keep: usize,
}

impl Default for SaveSettings {
    fn default() -> Self {
        Self {
            dir: "saves".into(),
            autosave_minutes: 0,
            autosave_keep: 3,
        }
    }
}

/// The settings in effect, the run's config and the name autosaves take.
#[derive(Resource, Debug, Clone)]
pub struct SaveContext {
    /// Settings.
    pub settings: SaveSettings,
    /// The config the run uses (written into saves).
    pub config: GameConfig,
    /// Autosaves are `auto-<base>-<step>`.
    pub base: String,
    /// The scenario file's text as the run read it (saves keep it; the file may since have
    /// changed or, for a loaded save, been removed).
    pub scenario_text: String,
    /// Step of the last autosave (or of the load).
    pub last_autosave: u64,
    /// The last autosave's problem, if it failed (reported once in the console).
    pub last_error: Option<String>,
}

impl SaveContext {
    /// The context of a run.
    pub fn new(config: GameConfig, base: String, scenario_text: String) -> Self {
        Self {
            settings: config.saves.clone(),
            config,
            base,
            scenario_text,
            last_autosave: 0,
            last_error: None,
        }
    }

    /// The saves folder.
    pub fn root(&self) -> PathBuf {
        PathBuf::from(&self.settings.dir)
    }
}

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

/// File name of an agent's part.
pub fn agent_file(i: usize, name: &str) -> String {
    format!("{i:02}-{}.ron", disk::slug(name).to_lowercase())
}

/// Takes the whole simulation out of a world (answers that have arrived are taken in first).
pub fn capture(world: &mut World, name: &str) -> Result<SaveData, String> {
    if let Some(pump) = world.resource::<crate::sim::clock::StepGate>().pump {
        pump(world, None);
    }
    let ctx = world
        .get_resource::<SaveContext>()
        .ok_or("this app cannot save (no save settings)")?
        .clone();
    let scenario = world.resource::<crate::ScenarioRes>().0.clone();
    let scenario_text = ctx.scenario_text.clone();
    let map = world.resource::<crate::sim::map::WorldMap>();
    let map_text = crate::sim::map::write_ron(map, "the town of this save");
    let clock = world.resource::<SimClock>().clone();
    let mut order: Vec<String> = scenario
        .residents
        .iter()
        .map(|p| p.spec.name.clone())
        .collect();
    order.push(scenario.player.name.clone());

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
                chatting_with: scratch.chatting_with.map(|e| e.to_bits()),
                scratch,
                plan: ent.get::<DayPlan>().cloned().unwrap_or_default(),
                spatial: ent.get::<SpatialMemory>().cloned().unwrap_or_default(),
                memory,
                pending: ent.get::<Pending>().cloned().unwrap_or_default(),
                memory_work: ent.get::<MemoryWork>().cloned().unwrap_or_default(),
                replan: ent.get::<Replan>().cloned(),
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
        console_queue: world.resource::<ConsoleQueue>().0.iter().cloned().collect(),
        avatar_route: world.resource::<AvatarRoute>().clone(),
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

impl Remap for Pending {
    fn remap(&mut self, m: &EntityMap) {
        use crate::cognition::pending::Job;
        for j in self.jobs_mut() {
            match &mut j.job {
                Job::React { target, .. } => m.map(target),
                Job::ChatQuery { conversation }
                | Job::Utterance { conversation }
                | Job::ChatMemory { conversation } => m.map(conversation),
                _ => {}
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

/// Puts a saved simulation into a world whose people were spawned from the save's scenario
/// (or one with the same people): every person's state, the conversations, the world's
/// resources; LLM work whose answer had not come is asked again.
pub fn restore(world: &mut World, data: &SaveData, dir: &Path) -> Result<(), String> {
    let mut q = world.query::<(Entity, &Identity)>();
    let people: Vec<(Entity, String)> = q.iter(world).map(|(e, id)| (e, id.name.clone())).collect();
    let names: Vec<String> = people.iter().map(|p| p.1.clone()).collect();
    check_people(data, &names, dir)?;

    // The work of the state being replaced is not wanted any more: free the model of it.
    let mut pq = world.query::<&Pending>();
    let mut stale: Vec<LlmHandle> = pq
        .iter(world)
        .flat_map(|p| p.jobs().iter().map(|j| j.handle))
        .collect();
    if let Some(iv) = &world.resource::<Interviews>().open
        && let Some((_, asking)) = &iv.question
    {
        stale.push(match asking {
            crate::play::interview::Asking::Embedding(h)
            | crate::play::interview::Asking::Answering(h) => *h,
        });
    }
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
        scratch.chatting_with = mind.chatting_with.map(|b| map.get(saved(b)));
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
    world.insert_resource(ConversationLog { lines: log });
    let mut chat = w.player_chat.clone();
    chat.remap(&map);
    world.insert_resource(chat);
    let mut interviews = w.interviews.clone();
    interviews.remap(&map);
    let reask = interviews
        .open
        .as_mut()
        .and_then(|iv| iv.question.take())
        .map(|(q, _)| q);
    world.insert_resource(interviews);
    if let Some(q) = reask {
        crate::play::interview::ask(world, &q)?;
    }
    world.insert_resource(ConsoleQueue(w.console_queue.iter().cloned().collect()));
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

/// Saves the world as `name` under the saves folder; returns where.
pub fn save_named(world: &mut World, name: &str) -> Result<PathBuf, String> {
    disk::check_name(name)?;
    let root = save_root(world)?;
    let data = capture(world, name)?;
    let dir = root.join(name);
    disk::write_save(&dir, &data)?;
    Ok(dir)
}

/// Loads a save into the running world (its people must be the scenario's).
pub fn load_named(world: &mut World, name: &str) -> Result<String, String> {
    let root = save_root(world)?;
    let scenario = &world.resource::<crate::ScenarioRes>().0;
    let dir = disk::resolve(&root, name, Some(&scenario.name));
    let data = disk::read_save(&dir)?;
    let scenario = &world.resource::<crate::ScenarioRes>().0;
    let elsewhere = |what: &str| {
        format!(
            "{} was made {what}: start it with `simulacra play --load {name}`",
            dir.display()
        )
    };
    if data.meta.scenario != scenario.name {
        return Err(elsewhere(&format!(
            "with the people of {}, and this game has those of {}",
            data.meta.scenario, scenario.name
        )));
    }
    let map = world.resource::<crate::sim::map::WorldMap>();
    if crate::sim::map::write_ron(map, "the town of this save") != data.map_text {
        return Err(elsewhere(&format!(
            "in another town than this game's ({})",
            map.world
        )));
    }
    let ours = &world.resource::<SaveContext>().config;
    let same = |a: &GameConfig| {
        (
            ron::to_string(&a.sim).ok(),
            ron::to_string(&a.cognition).ok(),
        )
    };
    if same(ours) != same(&data.config) {
        return Err(elsewhere(
            "with other settings (sim or cognition in its config.ron)",
        ));
    }
    restore(world, &data, &dir)?;
    Ok(format!(
        "loaded {} ({}, step {})",
        dir.display(),
        data.meta.now,
        data.meta.step
    ))
}

/// The saves folder of the running game.
pub fn save_root(world: &World) -> Result<PathBuf, String> {
    Ok(world
        .get_resource::<SaveContext>()
        .ok_or("this app cannot save or load (no save settings)")?
        .root())
}

/// An autosave being written on a thread of its own (the frame only takes the state).
#[derive(Resource, Default)]
pub struct AutosaveWriter(Option<std::thread::JoinHandle<Result<PathBuf, String>>>);

impl AutosaveWriter {
    /// Waits for the autosave being written, if any, and returns how it went.
    pub fn finish(&mut self) -> Option<Result<PathBuf, String>> {
        let h = self.0.take()?;
        Some(
            h.join()
                .unwrap_or_else(|_| Err("the autosave thread stopped unexpectedly".into())),
        )
    }

    fn busy(&self) -> bool {
        self.0.as_ref().is_some_and(|h| !h.is_finished())
    }
}

impl Drop for AutosaveWriter {
    fn drop(&mut self) {
        // An autosave being written is finished before the program ends.
        let _ = self.finish();
    }
}

/// Notes how an autosave went (a failure shows once in the console, the game goes on).
fn report_autosave(world: &mut World, result: Result<PathBuf, String>) {
    let mut ctx = world.resource_mut::<SaveContext>();
    match result {
        Ok(_) => ctx.last_error = None,
        Err(e) => {
            let first = ctx.last_error.is_none();
            ctx.last_error = Some(e.clone());
            if first {
                world
                    .resource_mut::<ConsoleLog>()
                    .err(format!("autosave failed (the game goes on): {e}"));
            }
        }
    }
}

/// Autosaves every `autosave_minutes` game minutes, keeping the newest `autosave_keep`: the
/// state is taken in the frame, then written (files, sync, rename, pruning) on a thread, so a
/// big town does not stall the game while its save is written.
pub fn autosave(world: &mut World) {
    if world.contains_resource::<crate::sim::clock::Frozen>() {
        return;
    }
    let done = {
        let mut w = world.resource_mut::<AutosaveWriter>();
        if w.busy() { None } else { w.finish() }
    };
    if let Some(result) = done {
        report_autosave(world, result);
    }
    let Some(ctx) = world.get_resource::<SaveContext>() else {
        return;
    };
    let every = ctx.settings.autosave_minutes as u64;
    if every == 0 {
        return;
    }
    let clock = world.resource::<SimClock>();
    let steps = (every * 60).div_ceil(clock.sec_per_step.max(1) as u64);
    let step = clock.step;
    if step == 0 || step < ctx.last_autosave + steps {
        return;
    }
    // The previous autosave is still being written (game time ran an autosave period ahead
    // of the disk): wait for it, so that every period is saved.
    finish_autosave(world);
    let ctx = world.resource::<SaveContext>();
    let (root, base, keep) = (ctx.root(), ctx.base.clone(), ctx.settings.autosave_keep);
    let name = disk::autosave_name(&base, step);
    world.resource_mut::<SaveContext>().last_autosave = step;
    let data = match capture(world, &name) {
        Ok(d) => d,
        Err(e) => return report_autosave(world, Err(e)),
    };
    let handle = std::thread::Builder::new()
        .name("autosave".into())
        .spawn(move || {
            let dir = root.join(&name);
            disk::write_save(&dir, &data)?;
            disk::prune_autosaves(&root, &base, keep)?;
            Ok(dir)
        });
    match handle {
        Ok(h) => world.resource_mut::<AutosaveWriter>().0 = Some(h),
        Err(e) => report_autosave(world, Err(format!("cannot start the autosave thread: {e}"))),
    }
}

/// Waits for an autosave being written (headless runs call it before they end).
pub fn finish_autosave(world: &mut World) {
    let done = world
        .get_resource_mut::<AutosaveWriter>()
        .and_then(|mut w| w.finish());
    if let Some(result) = done {
        report_autosave(world, result);
    }
}

/// The save plugin: movement log, autosave, loading at start.
pub(crate) fn plugin(app: &mut App, context: SaveContext) {
    replay::plugin(app);
    app.init_resource::<MovementLog>()
        .init_resource::<AutosaveWriter>()
        .insert_resource(context)
        .add_systems(Startup, load_on_start.after(crate::agent::spawn_people))
        .add_systems(
            crate::sim::SimStep,
            movement::record_movement
                .in_set(crate::sim::SimSystems::Clock)
                .before(crate::sim::clock::advance_clock),
        )
        // At the end of the step whose clock reaches the autosave time (not once per frame,
        // which may run many steps), so the cadence is the same at every speed.
        .add_systems(
            crate::sim::SimStep,
            autosave
                .in_set(crate::sim::SimSystems::Clock)
                .after(crate::sim::clock::advance_clock),
        );
}
