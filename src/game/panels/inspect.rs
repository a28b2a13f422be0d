//! The inspector: click a person (or `play --select NAME`) to see who they are, what they are
//! doing and where, today's plan, their memory stream (newest first, filtered by kind and by
//! text, each memory with its importance and its last retrieval's recency / relevance /
//! importance / score, reflections with links to their evidence) and the places they know as a
//! tree, and their conversations. Escape, the window's close button or a click on empty ground closes it. Drawn with
//! egui; clicks and keys over it do not reach the town.

use crate::agent::conversation::ConversationLog;
use crate::agent::{CurrentAction, DayPlan, GridPos, Identity, Resident};
use crate::cognition::ask::pending::Pending;
use crate::cognition::resident::scratch::Scratch;
use crate::game::shared::{SelectByName, Selected};
use crate::game::shared::{cursor_tile, short_time};
use crate::memory::SpatialMemory;
use crate::memory::news::{chain_line, trace};
use crate::memory::stream::{MemoryNode, MemoryStream, NodeId, NodeKind};
use crate::sim::clock::SimClock;
use crate::sim::map::WorldMap;
use crate::sim::time::minute_clock;
use bevy::prelude::*;
use bevy::window::PrimaryWindow;
use bevy_egui::{EguiContexts, egui};
use std::collections::HashMap;

/// Which page of the inspector is open.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Tab {
    /// Today's plan and current action.
    #[default]
    Day,
    /// The memory stream.
    Memory,
    /// Spatial memory.
    Places,
    /// The person's conversations, from the town's log.
    Talks,
}

/// The inspector's own state.
#[derive(Resource)]
pub struct InspectorState {
    /// The open page.
    pub tab: Tab,
    /// Kinds shown.
    pub kinds: [bool; 3],
    /// Text filter (case-insensitive; also matches "node_12").
    pub search: String,
    /// Memories opened through evidence links (the last is shown).
    pub trail: Vec<NodeId>,
    /// Most memories listed at once.
    pub limit: usize,
}

impl Default for InspectorState {
    fn default() -> Self {
        Self {
            tab: Tab::Day,
            kinds: [true; 3],
            search: String::new(),
            trail: Vec::new(),
            limit: 300,
        }
    }
}

/// Left click selects the person on (or next to) the clicked tile; Escape closes.
pub fn select_on_click(
    buttons: Res<ButtonInput<MouseButton>>,
    keys: Res<ButtonInput<KeyCode>>,
    map: Res<WorldMap>,
    window: Query<&Window, With<PrimaryWindow>>,
    camera: Query<(&Camera, &GlobalTransform), With<crate::game::shared::WorldCamera>>,
    people: Query<(Entity, &GridPos), With<Identity>>,
    mut selected: ResMut<Selected>,
    mut state: ResMut<InspectorState>,
) {
    if keys.just_pressed(KeyCode::Escape) {
        selected.0 = None;
    }
    if !buttons.just_pressed(MouseButton::Left) {
        return;
    }
    let (Ok(w), Ok(cam)) = (window.single(), camera.single()) else {
        return;
    };
    let Some(t) = cursor_tile(w, cam, &map) else {
        return;
    };
    let pick = people
        .iter()
        .filter(|(_, p)| p.tile.manhattan(t) <= 1)
        .min_by_key(|(_, p)| p.tile.manhattan(t))
        .map(|(e, _)| e);
    if pick != selected.0 {
        state.trail.clear();
    }
    selected.0 = pick;
}

/// A person for the camera to follow, without opening the inspector (`play --follow NAME`).
#[derive(Resource)]
pub struct FollowByName(pub String);

/// On a plain start the camera watches the first resident up and about (the town wakes in its
/// homes, away from the street where the player stands), until the player walks or presses F.
#[derive(Resource)]
pub struct WatchFirstAwake;

/// Applies [`WatchFirstAwake`]: the first resident not asleep, said once in the console.
pub fn watch_first_awake(
    mut commands: Commands,
    wanted: Option<Res<WatchFirstAwake>>,
    people: Query<(Entity, &Identity, &crate::agent::CurrentAction), With<crate::agent::Resident>>,
    mut camera: ResMut<crate::game::shared::CameraMode>,
    mut console: ResMut<crate::play::ConsoleLog>,
    mut walked: MessageReader<crate::agent::avatar::AvatarMove>,
) {
    if wanted.is_none() {
        return;
    }
    // The player took the camera first (walked, dragged, jumped on the map, pressed F).
    let walked = walked.read().count() > 0;
    if camera.watch.is_some() || !camera.follow || walked {
        commands.remove_resource::<WatchFirstAwake>();
        return;
    }
    let awake = people.iter().find(|(_, _, a)| {
        !a.description.is_empty() && !crate::game::world::people::looks_asleep(a)
    });
    if let Some((e, id, a)) = awake {
        camera.watch = Some(e);
        camera.follow = true;
        console.out(format!(
            "Watching {} ({}), the first up; WASD walks you and brings the camera back, M shows everyone",
            id.name, a.description
        ));
        commands.remove_resource::<WatchFirstAwake>();
    }
}

/// Applies [`FollowByName`].
pub fn follow_by_name(
    mut commands: Commands,
    wanted: Option<Res<FollowByName>>,
    people: Query<(Entity, &Identity)>,
    mut camera: ResMut<crate::game::shared::CameraMode>,
) {
    let Some(wanted) = wanted else { return };
    if let Some((e, _)) = people
        .iter()
        .find(|(_, id)| id.name.eq_ignore_ascii_case(&wanted.0))
    {
        camera.watch = Some(e);
        camera.follow = true;
        commands.remove_resource::<FollowByName>();
    }
}

/// Applies [`SelectByName`].
pub fn select_by_name(
    mut commands: Commands,
    wanted: Option<Res<SelectByName>>,
    people: Query<(Entity, &Identity)>,
    mut selected: ResMut<Selected>,
    mut camera: ResMut<crate::game::shared::CameraMode>,
) {
    let Some(wanted) = wanted else { return };
    if let Some((e, _)) = people
        .iter()
        .find(|(_, id)| id.name.eq_ignore_ascii_case(&wanted.0))
    {
        selected.0 = Some(e);
        camera.watch = Some(e);
        commands.remove_resource::<SelectByName>();
    }
}

/// Which tab to open first (`play --inspect memory`).
#[derive(Resource)]
pub struct OpenTab(pub Tab);

/// What the inspector reads of a person.
type PersonQuery<'a> = (
    &'a Identity,
    &'a GridPos,
    &'a CurrentAction,
    Option<&'a Resident>,
    Option<&'a DayPlan>,
    Option<&'a MemoryStream>,
    Option<&'a SpatialMemory>,
    Option<&'a Pending>,
    Option<&'a Scratch>,
);

fn kind_icon(k: NodeKind) -> &'static str {
    match k {
        NodeKind::Event => "👁",
        NodeKind::Thought => "💭",
        NodeKind::Chat => "💬",
    }
}

/// Shows one memory's details; evidence links push onto the trail.
fn node_details(
    ui: &mut egui::Ui,
    n: &MemoryNode,
    stream: &MemoryStream,
    town: &Town,
    trail: &mut Vec<NodeId>,
) {
    ui.label(format!(
        "{} · {} #{} · depth {}",
        n.id,
        n.kind.label(),
        n.kind_index,
        n.depth
    ));
    ui.label(format!("({}, {}, {})", n.subject, n.predicate, n.object));
    ui.label(format!(
        "created {} · last accessed {}{}",
        short_time(n.created),
        short_time(n.last_accessed),
        n.expiry
            .map(|e| format!(" · expires {}", short_time(e)))
            .unwrap_or_default()
    ));
    ui.label(format!(
        "importance {}{}",
        n.importance,
        if n.scored { "" } else { " (not yet scored)" }
    ));
    if !n.keywords.is_empty() {
        ui.label(format!("keywords: {}", n.keywords.join(", ")));
    }
    ui.label(match &n.embedding {
        Some(e) => format!("embedding: {} ({}d)", e.model, e.dim()),
        None => "embedding: pending".into(),
    });
    match n.last_score {
        Some(s) => ui.label(format!(
            "last retrieval {}: recency {:.2} · relevance {:.2} · importance {:.2} → score {:.2}",
            short_time(s.at),
            s.recency,
            s.relevance,
            s.importance,
            s.score
        )),
        None => ui.label("never retrieved"),
    };
    if !n.evidence.is_empty() {
        ui.horizontal_wrapped(|ui| {
            ui.label(if n.kind == NodeKind::Thought {
                "because of:"
            } else {
                "conversation:"
            });
            for e in &n.evidence {
                let text = stream
                    .get(*e)
                    .map(|x| format!("{e}: {}", truncate(&x.description, 40)))
                    .unwrap_or_else(|| format!("{e} (missing)"));
                if ui.link(text).clicked() {
                    trail.push(*e);
                }
            }
        });
    }
    if let Some(g) = &n.gathering {
        ui.label(format!("gathering: {}", g.describe()));
    }
    if let Some(t) = &n.told {
        // Where it came from, through every retelling, to its first holder.
        let hops = trace(
            &|who: &str| town.streams.get(who).copied(),
            &town.holder,
            n.id,
        );
        ui.label(format!(
            "heard from {} in the conversation of {}",
            t.speaker, t.conversation
        ));
        ui.label(egui::RichText::new(format!("provenance: {}", chain_line(&hops))).strong());
        for h in hops.iter().skip(1) {
            ui.label(
                egui::RichText::new(format!(
                    "  {} · {} {}: {}",
                    h.holder,
                    short_time(h.at),
                    if h.node.0 == 0 {
                        "(own words)".to_string()
                    } else {
                        h.node.to_string()
                    },
                    truncate(&h.description, 60)
                ))
                .small(),
            );
        }
    }
    for (who, line) in &n.chat {
        ui.label(format!("{who}: {line}"));
    }
}

/// Everyone's memory by name (to trace what someone heard), and whose memory is shown.
struct Town<'a> {
    streams: HashMap<String, &'a MemoryStream>,
    holder: String,
}

fn truncate(s: &str, n: usize) -> String {
    if s.chars().count() <= n {
        s.to_string()
    } else {
        format!("{}…", s.chars().take(n).collect::<String>())
    }
}

/// Draws the inspector for the selected person.
pub fn inspector_ui(
    mut contexts: EguiContexts,
    mut selected: ResMut<Selected>,
    mut state: ResMut<InspectorState>,
    open_tab: Option<Res<OpenTab>>,
    mut commands: Commands,
    map: Res<WorldMap>,
    clock: Res<SimClock>,
    log: Res<ConversationLog>,
    people: Query<PersonQuery>,
) -> Result {
    if let Some(t) = open_tab {
        state.tab = t.0;
        commands.remove_resource::<OpenTab>();
    }
    let Some(entity) = selected.0 else {
        return Ok(());
    };
    let Ok((id, pos, action, resident, plan, stream, spatial, pending, scratch)) =
        people.get(entity)
    else {
        selected.0 = None;
        return Ok(());
    };
    let ctx = contexts.ctx_mut()?;
    let mut open = true;
    let state = &mut *state;
    // At the right edge, clear of the HUD at the top left.
    let right = ctx.content_rect().right();
    egui::Window::new(format!("{} ({})", id.name, id.age))
        .id(egui::Id::new("inspector"))
        .open(&mut open)
        .pivot(egui::Align2::RIGHT_TOP)
        .default_pos([right - 8.0, 8.0])
        .default_width(430.0)
        .max_width(520.0)
        .default_height(560.0)
        .resizable(true)
        .show(ctx, |ui| {
            if let Some(r) = resident {
                let p = &r.persona.spec;
                ui.label(format!("Traits: {}", p.innate));
                ui.add(egui::Label::new(egui::RichText::new(&p.learned).small()).wrap());
            } else {
                ui.label(&id.description);
            }
            let here = map.address(pos.tile).to_string();
            ui.label(format!("{} {}", action.emoji, action.description));
            ui.label(egui::RichText::new(format!("at {here}")).small());
            if !action.address.is_empty() && here != action.address {
                ui.label(egui::RichText::new(format!("going to {}", action.address)).small());
            }
            if let (Some(p), Some(s)) = (pending, scratch) {
                ui.label(
                    egui::RichText::new(format!(
                        "waiting on {} LLM answer(s) · reflects in {} importance",
                        p.len(),
                        s.reflection.remaining.max(0)
                    ))
                    .small(),
                );
            }
            ui.separator();
            // Tabs of one fixed width: a growing memory count never moves them under the mouse.
            ui.horizontal(|ui| {
                let memories = format!("Memory ({})", stream.map(|s| s.len()).unwrap_or(0));
                for (tab, label) in [
                    (Tab::Day, "Day"),
                    (Tab::Memory, memories.as_str()),
                    (Tab::Places, "Places"),
                    (Tab::Talks, "Talks"),
                ] {
                    let button = egui::Button::selectable(state.tab == tab, label);
                    if ui.add_sized([96.0, 22.0], button).clicked() {
                        state.tab = tab;
                    }
                }
            });
            ui.separator();
            match state.tab {
                Tab::Day => day_tab(ui, plan),
                Tab::Memory => match stream {
                    Some(s) => {
                        let town = Town {
                            streams: people
                                .iter()
                                .filter_map(|p| Some((p.0.name.clone(), p.5?)))
                                .collect(),
                            holder: id.name.clone(),
                        };
                        memory_tab(ui, s, &town, state, &clock)
                    }
                    None => {
                        ui.label("The player's avatar keeps no memory stream.");
                    }
                },
                Tab::Talks => super::log::talks_tab(ui, &id.name, &log, scratch),
                Tab::Places => match spatial {
                    Some(sp) => places_tab(ui, sp),
                    None => {
                        ui.label("No spatial memory.");
                    }
                },
            }
        });
    if !open {
        selected.0 = None;
    }
    Ok(())
}

fn day_tab(ui: &mut egui::Ui, plan: Option<&DayPlan>) {
    let Some(plan) = plan else {
        ui.label("No plan.");
        return;
    };
    let heading = match plan.source {
        crate::agent::PlanSource::Model => {
            format!("Today's plan (wakes at {})", minute_clock(plan.wake_min))
        }
        _ => "Today (daily routine: no plan from the model yet)".to_string(),
    };
    ui.label(egui::RichText::new(heading).strong());
    if plan.source == crate::agent::PlanSource::Model && !plan.broad.is_empty() {
        ui.label(
            egui::RichText::new(format!("In broad strokes: {}", plan.broad.join("; "))).small(),
        );
    }
    egui::ScrollArea::vertical().id_salt("day").show(ui, |ui| {
        for (i, b) in plan.blocks.iter().enumerate() {
            let text = format!(
                "{}-{} {} {}",
                minute_clock(b.start),
                minute_clock(b.end),
                b.emoji,
                b.description
            );
            if plan.current == Some(i) {
                ui.label(egui::RichText::new(format!("▶ {text}")).strong());
            } else {
                ui.label(text);
            }
        }
    });
}

fn memory_tab(
    ui: &mut egui::Ui,
    stream: &MemoryStream,
    town: &Town,
    state: &mut InspectorState,
    clock: &SimClock,
) {
    ui.horizontal(|ui| {
        for (i, k) in NodeKind::ALL.iter().enumerate() {
            ui.checkbox(
                &mut state.kinds[i],
                format!("{} {}s", kind_icon(*k), k.label()),
            );
        }
    });
    ui.horizontal(|ui| {
        ui.label("search");
        ui.text_edit_singleline(&mut state.search);
        if !state.search.is_empty() && ui.button("✖").clicked() {
            state.search.clear();
        }
    });
    if let Some(focus) = state.trail.last().copied() {
        ui.group(|ui| {
            ui.horizontal(|ui| {
                if ui.button("← back").clicked() {
                    state.trail.pop();
                }
                ui.label(egui::RichText::new(format!("evidence {focus}")).strong());
            });
            match stream.get(focus) {
                Some(n) => {
                    ui.label(format!("{} {}", kind_icon(n.kind), n.description));
                    let mut trail = std::mem::take(&mut state.trail);
                    node_details(ui, n, stream, town, &mut trail);
                    state.trail = trail;
                }
                None => {
                    ui.label("no such memory");
                }
            }
        });
    }
    let needle = state.search.trim().to_lowercase();
    let shown: Vec<&MemoryNode> = stream
        .nodes()
        .iter()
        .rev()
        .filter(|n| state.kinds[NodeKind::ALL.iter().position(|k| *k == n.kind).unwrap_or(0)])
        .filter(|n| {
            needle.is_empty()
                || n.description.to_lowercase().contains(&needle)
                || n.id.to_string() == needle
                || n.keywords.iter().any(|k| k.contains(&needle))
        })
        .collect();
    ui.label(
        egui::RichText::new(format!(
            "{} of {} memories · now {}",
            shown.len(),
            stream.len(),
            clock.now.clock_12h()
        ))
        .small(),
    );
    let mut trail = std::mem::take(&mut state.trail);
    egui::ScrollArea::vertical()
        .id_salt("memories")
        .show(ui, |ui| {
            for n in shown.iter().take(state.limit) {
                let score = n
                    .last_score
                    .map(|s| format!(" · score {:.2}", s.score))
                    .unwrap_or_default();
                let head = format!(
                    "{} {} [{}{}] {}",
                    kind_icon(n.kind),
                    short_time(n.created),
                    n.importance,
                    score,
                    truncate(&n.description, 52)
                );
                egui::CollapsingHeader::new(head)
                    .id_salt(("node", n.id.0))
                    .show(ui, |ui| {
                        ui.label(&n.description);
                        node_details(ui, n, stream, town, &mut trail);
                    });
            }
            if shown.len() > state.limit {
                ui.label(format!(
                    "… {} more (narrow the search)",
                    shown.len() - state.limit
                ));
            }
        });
    state.trail = trail;
}

fn places_tab(ui: &mut egui::Ui, sp: &SpatialMemory) {
    ui.label(egui::RichText::new(&sp.world).strong());
    egui::ScrollArea::vertical()
        .id_salt("places")
        .show(ui, |ui| {
            for (sector, arenas) in &sp.tree {
                egui::CollapsingHeader::new(sector)
                    .id_salt(("sector", sector))
                    .show(ui, |ui| {
                        for (arena, objects) in arenas {
                            egui::CollapsingHeader::new(arena)
                                .id_salt(("arena", sector, arena))
                                .show(ui, |ui| {
                                    if objects.is_empty() {
                                        ui.label("(nothing known here)");
                                    }
                                    for o in objects {
                                        ui.label(format!("• {o}"));
                                    }
                                });
                        }
                    });
            }
        });
}

/// Adds this part of the window: its resources and systems, each in its place in the frame.
pub(crate) fn plugin(app: &mut App) {
    app.init_resource::<InspectorState>()
        .add_systems(
            Update,
            (
                select_on_click.run_if(not(bevy_egui::input::egui_wants_any_pointer_input)),
                select_by_name,
                follow_by_name,
                watch_first_awake,
            )
                .in_set(crate::AppSystems::Input),
        )
        .add_systems(bevy_egui::EguiPrimaryContextPass, inspector_ui);
}
