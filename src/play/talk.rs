//! The avatar's conversations. `talk <name>` (or the game's talk key) asks for a conversation
//! with a resident near the avatar; the resident stops, turns to the player, and pauses its plan
//! (it resumes afterwards, the talk written into its plan as with any conversation). The player's
//! lines wait in [`PlayerChat::outbox`] and are said on the player's turn
//! ([`crate::cognition::talk::converse::converse`]); the resident answers in character from its
//! retrieved memories at interactive priority, and remembers the talk like any other, with the
//! player as a named person, so what the player says can spread through town.

use super::command::clean_text;
use crate::agent::avatar::Avatar;
use crate::agent::conversation::{Conversation, Party, PlayerChat, Talking, start_conversation};
use crate::agent::{CurrentAction, GridPos, Identity, Resident, WalkPath};
use crate::cognition::config::Cognition;
use crate::sim::clock::SimClock;
use crate::sim::map::WorldMap;
use crate::sim::objects_state::ObjectStates;
use bevy::prelude::*;

/// Most lines in a conversation with the player (both sides together).
pub const PLAYER_MAX_LINES: usize = 40;

/// The player says a line in the conversation the avatar is in. Errors when there is none. The
/// text is cleaned and cut as console text is; the returned string notes a cut.
pub fn player_says(world: &mut World, text: &str) -> Result<Option<String>, String> {
    let (text, cut) = clean_text(text);
    if text.is_empty() {
        return Err("expected something to say".into());
    }
    // A resident who spoke to the avatar first: answering joins that conversation.
    let joined = {
        let mut q = world.query_filtered::<&Talking, With<Avatar>>();
        q.iter(world).next().map(|t| t.conversation)
    };
    let mut chat = world.resource_mut::<PlayerChat>();
    if chat.conversation.is_none() {
        chat.conversation = joined;
    }
    if chat.conversation.is_none() && chat.wants.is_none() {
        return Err(
            "you are not talking with anyone: `talk <name>` first (walk up to them)".into(),
        );
    }
    chat.outbox.push_back(text);
    Ok(cut.then(|| {
        format!(
            "(your line was cut to {} characters)",
            super::command::MAX_INPUT_CHARS
        )
    }))
}

/// Why the avatar cannot start talking with a resident now, if it cannot.
pub fn talk_problem(
    name: &str,
    resident: (&CurrentAction, &GridPos, bool),
    avatar: (&GridPos, bool),
    max_tiles: u32,
) -> Option<String> {
    let (action, pos, talking) = resident;
    let d = pos.tile.manhattan(avatar.0.tile);
    if avatar.1 {
        Some("you are already in a conversation: `bye` first".into())
    } else if talking {
        Some(format!("{name} is busy talking with someone"))
    } else if action.is_asleep() {
        Some(format!("{name} is asleep"))
    } else if d > max_tiles {
        Some(format!(
            "{name} is {d} tiles away; walk within {max_tiles} tiles to talk"
        ))
    } else {
        None
    }
}

/// Starts the conversation the player asked for: the resident comes over and stops what it was
/// doing; the player speaks first.
#[expect(
    clippy::type_complexity,
    clippy::too_many_arguments,
    reason = "a conversation changes both people"
)]
pub fn start_player_talks(
    mut commands: Commands,
    mut chat: ResMut<PlayerChat>,
    mut log: ResMut<super::ConsoleLog>,
    map: Res<WorldMap>,
    clock: Res<SimClock>,
    cog: Res<Cognition>,
    mut objects: ResMut<ObjectStates>,
    mut residents: Query<
        (
            &Identity,
            &mut CurrentAction,
            &mut WalkPath,
            &GridPos,
            Has<Talking>,
        ),
        (With<Resident>, Without<Avatar>),
    >,
    avatar: Query<(Entity, &Identity, &CurrentAction, &GridPos, Has<Talking>), With<Avatar>>,
) {
    let Some(r) = chat.wants.take() else {
        return;
    };
    let Ok((pe, pid, paction, ppos, ptalking)) = avatar.single() else {
        log.err("there is no avatar to talk with");
        return;
    };
    let Ok((rid, mut raction, mut rwalk, rpos, rtalking)) = residents.get_mut(r) else {
        log.err("that person is not in town");
        return;
    };
    if let Some(problem) = talk_problem(
        &rid.name,
        (&raction, rpos, rtalking),
        (ppos, ptalking),
        cog.0.talk_max_tiles,
    ) {
        log.err(problem.clone());
        chat.notice = Some(problem);
        return;
    }
    let (mut action, mut walk) = (paction.clone(), WalkPath::default());
    let name = rid.name.clone();
    let conv = start_conversation(
        &mut commands,
        &map,
        &clock,
        &mut objects,
        Party {
            entity: r,
            name: name.clone(),
            action: &mut raction,
            walk: &mut rwalk,
            pos: *rpos,
            walks: true,
        },
        Party {
            entity: pe,
            name: pid.name.clone(),
            action: &mut action,
            walk: &mut walk,
            pos: *ppos,
            walks: false,
        },
        PLAYER_MAX_LINES,
    );
    // The player asked, so the player speaks first.
    commands.queue(move |w: &mut World| {
        if let Some(mut c) = w.get_mut::<Conversation>(conv) {
            c.next = 1;
        }
    });
    chat.conversation = Some(conv);
    chat.notice = None;
    log.out(format!(
        "you are talking with {name} (`say <text>`, `bye` to leave)"
    ));
}

/// Leaves the player's conversation (it ends at the next step).
pub fn player_leaves(world: &mut World) -> Result<(), String> {
    let mut chat = world.resource_mut::<PlayerChat>();
    chat.outbox.clear();
    let Some(conv) = chat.conversation.take() else {
        return Err("you are not talking with anyone".into());
    };
    if let Some(mut c) = world.get_mut::<Conversation>(conv) {
        c.closing = true;
    }
    Ok(())
}
