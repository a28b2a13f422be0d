//! The parts of a save as types: `meta.ron` ([`Meta`]), `world.ron` ([`WorldSave`]), one
//! `agents/NN-name.ron` per person ([`AgentSave`], a resident's [`Mind`]), and the whole
//! simulation in memory ([`SaveData`]).

use super::movement::MovementLog;
use crate::agent::avatar::AvatarRoute;
use crate::agent::commitments::Commitments;
use crate::agent::conversation::PlayerChat;
use crate::agent::conversation::{Conversation, LoggedLine, Speech, Talking};
use crate::agent::{CurrentAction, DayPlan, Facing, GridPos, Outlook, WalkPath};
use crate::cognition::ask::pending::Pending;
use crate::cognition::day::replan::Replan;
use crate::cognition::mind::remember::MemoryWork;
use crate::cognition::resident::scratch::Scratch;
use crate::config::GameConfig;
use crate::llm::Embedding;
use crate::memory::SpatialMemory;
use crate::memory::stream::{MemoryStream, NodeId};
use crate::play::ConsoleLog;
use crate::play::interview::Interviews;
use crate::sim::clock::SimClock;
use crate::sim::objects_state::ObjectStates;
use bevy::prelude::*;
use serde::{Deserialize, Serialize};

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
pub(super) struct MetaHead {
    pub(super) format: u32,
    #[serde(default)]
    pub(super) written_by: String,
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
    /// Console lines not yet run, as saves before 2026-11 kept them. A save is data and never
    /// runs a command: lines found here are shown in the console as not run, and none is written.
    #[serde(default, skip_serializing)]
    pub console_queue: Vec<String>,
    /// The avatar's `goto` walk.
    pub avatar_route: AvatarRoute,
    /// Answers replaced over the run, by what they were for and why (the run's summary
    /// counts them; saves before 2026-11-27 lack them and start from none).
    #[serde(default)]
    pub replaced: Vec<(String, crate::cognition::ask::flaws::Flaw, u64)>,
    /// Who was at each gathering someone accepted, while it went on.
    #[serde(default)]
    pub attendance: crate::cognition::talk::invite::Attendance,
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
    /// Gatherings accepted.
    #[serde(default, skip_serializing_if = "is_default")]
    pub commitments: Commitments,
}

fn is_default<T: Default + PartialEq>(t: &T) -> bool {
    *t == T::default()
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
