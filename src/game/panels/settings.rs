//! The window's own settings (O): speed, UI scale, which labels show, live pacing and night
//! skipping. The UI scale, the labels and that the first-start help was seen are kept between
//! sessions in a small file (`$XDG_CONFIG_HOME/simulacra/window.ron`,
//! else `~/.config/simulacra/window.ron`; `SIMULACRA_WINDOW_SETTINGS` names another). Screenshot runs neither read nor write it unless
//! `SIMULACRA_WINDOW_SETTINGS` names the file.

use crate::game::shared::Panels;
use crate::sim::clock::{SimPace, Speed};
use bevy::prelude::*;
use bevy_egui::{EguiContexts, egui};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// Which labels show over people.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub enum Labels {
    /// Names and actions; in a crowd, by priority (hover shows the hidden ones).
    #[default]
    Crowd,
    /// Every name and action, crowded or not.
    All,
    /// Names only.
    Names,
    /// None (hover shows who is who).
    Off,
}

/// What the settings file holds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct WindowSettings {
    /// Size of the HUD, panels and menus (1 = as designed).
    pub ui_scale: f32,
    /// Which labels show.
    pub labels: Labels,
    /// The first-start help was shown and closed.
    pub seen_help: bool,
}

impl Default for WindowSettings {
    fn default() -> Self {
        Self {
            ui_scale: 1.0,
            labels: Labels::Crowd,
            seen_help: false,
        }
    }
}

/// The UI scale's range.
pub const UI_SCALES: std::ops::RangeInclusive<f32> = 0.75..=2.0;

/// The settings in play, where they are kept (none: not kept), and whether the panel is open.
#[derive(Resource, Default)]
pub struct Settings {
    /// The values.
    pub values: WindowSettings,
    /// The file (None: this run keeps nothing, as in screenshot runs).
    pub file: Option<PathBuf>,
    /// The settings panel is shown.
    pub open: bool,
    /// The UI scale being dragged on the slider (applied and kept when the drag ends).
    pub scale_edit: Option<f32>,
}

/// The settings file's default place.
pub fn default_file() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("SIMULACRA_WINDOW_SETTINGS") {
        return Some(PathBuf::from(p));
    }
    let base = std::env::var_os("XDG_CONFIG_HOME")
        .map(PathBuf::from)
        .filter(|p| p.is_absolute())
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".config")))?;
    Some(base.join("simulacra").join("window.ron"))
}

/// Reads the settings file: defaults when there is none; a file that does not parse is named
/// with its line and column (and defaults are used).
pub fn read(path: &Path) -> Result<WindowSettings, String> {
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Ok(WindowSettings::default());
        }
        Err(e) => return Err(format!("{}: {e}", path.display())),
    };
    let mut s: WindowSettings = ron::from_str(&text).map_err(|e| {
        format!(
            "{}:{}:{}: {} (using the default settings)",
            path.display(),
            e.span.start.line,
            e.span.start.col,
            e.code
        )
    })?;
    s.ui_scale = s.ui_scale.clamp(*UI_SCALES.start(), *UI_SCALES.end());
    Ok(s)
}

/// Writes the settings file atomically (a temporary file, then a rename).
pub fn write(path: &Path, s: &WindowSettings) -> Result<(), String> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    }
    let text = ron::ser::to_string_pretty(s, ron::ser::PrettyConfig::default())
        .map_err(|e| e.to_string())?;
    let tmp = path.with_extension("ron.tmp");
    std::fs::write(&tmp, text).map_err(|e| format!("{}: {e}", tmp.display()))?;
    std::fs::rename(&tmp, path).map_err(|e| format!("{}: {e}", path.display()))
}

/// Loads the settings for a window run that keeps them; opens the help on a first start.
pub fn load(app: &mut App, keep: bool, show_help: bool) {
    // A file named in SIMULACRA_WINDOW_SETTINGS is used by every run, screenshot runs included
    // (to show a setting in a screenshot); the default file only by runs that keep settings.
    let named = std::env::var_os("SIMULACRA_WINDOW_SETTINGS").is_some();
    let file = (keep || named).then(default_file).flatten();
    let (values, file) = match file {
        Some(f) => match read(&f) {
            Ok(v) => (v, Some(f)),
            // A file that does not parse is the player's to mend: never written over.
            Err(e) => {
                eprintln!("warning: {e}; this session keeps no settings");
                (WindowSettings::default(), None)
            }
        },
        None => (WindowSettings::default(), None),
    };
    let first = file.is_some() && !values.seen_help;
    app.world_mut().resource_mut::<Panels>().help = first || show_help;
    app.insert_resource(Settings {
        values,
        file,
        open: false,
        scale_edit: None,
    });
}

/// O opens or closes the settings (when no text field has the keyboard).
pub fn settings_key(keys: Res<ButtonInput<KeyCode>>, mut settings: ResMut<Settings>) {
    if keys.just_pressed(KeyCode::KeyO) {
        settings.open = !settings.open;
    }
}

/// Keeps what the settings say applied: the UI scale to Bevy's UI and to egui.
pub fn apply_settings(
    settings: Res<Settings>,
    mut ui_scale: ResMut<UiScale>,
    mut contexts: EguiContexts,
) {
    let s = settings.values.ui_scale;
    if (ui_scale.0 - s).abs() > f32::EPSILON {
        ui_scale.0 = s;
    }
    if let Ok(ctx) = contexts.ctx_mut()
        && (ctx.zoom_factor() - s).abs() > f32::EPSILON
    {
        ctx.set_zoom_factor(s);
    }
}

/// Remembers that the first-start help was seen once it is closed.
pub fn remember_help_seen(panels: Res<Panels>, mut settings: ResMut<Settings>) {
    if !panels.help && panels.is_changed() && !settings.values.seen_help && !panels.is_added() {
        settings.values.seen_help = true;
        save(&settings);
    }
}

fn save(settings: &Settings) {
    if let Some(f) = &settings.file
        && let Err(e) = write(f, &settings.values)
    {
        warn!("could not keep the window settings: {e}");
    }
}

/// The settings panel.
pub fn settings_ui(
    mut contexts: EguiContexts,
    mut settings: ResMut<Settings>,
    mut pace: ResMut<SimPace>,
    mut skip: ResMut<crate::game::shared::NightSkip>,
    mut cog: ResMut<crate::cognition::config::Cognition>,
) -> Result {
    if !settings.open {
        return Ok(());
    }
    let ctx = contexts.ctx_mut()?;
    let mut open = true;
    let before = settings.values.clone();
    egui::Window::new("Settings")
        .id(egui::Id::new("settings"))
        .open(&mut open)
        .resizable(false)
        .anchor(egui::Align2::CENTER_TOP, egui::vec2(0.0, 12.0))
        .show(ctx, |ui| {
            egui::Grid::new("settings grid")
                .num_columns(2)
                .spacing([16.0, 8.0])
                .show(ui, |ui| {
                    ui.label("Speed");
                    ui.horizontal(|ui| {
                        if ui.button("-").clicked() {
                            pace.speed = pace.speed.slower();
                        }
                        ui.label(pace.speed.label());
                        if ui.button("+").clicked() {
                            pace.speed = pace.speed.faster();
                        }
                        let label = if pace.paused { "Resume" } else { "Pause" };
                        if ui.button(label).clicked() {
                            pace.paused = !pace.paused;
                        }
                        if ui.button("Max").clicked() {
                            pace.speed = Speed::Max;
                        }
                    });
                    ui.end_row();
                    ui.label("UI scale");
                    // The scale applies when the slider is let go (changing it under the
                    // pointer would move the slider away from it).
                    let mut scale = settings.scale_edit.unwrap_or(settings.values.ui_scale);
                    let slider = ui.add(
                        egui::Slider::new(&mut scale, UI_SCALES)
                            .step_by(0.05)
                            .custom_formatter(|v, _| format!("{:.0} %", v * 100.0)),
                    );
                    if slider.dragged() {
                        settings.scale_edit = Some(scale);
                    } else if slider.drag_stopped() || slider.changed() {
                        settings.scale_edit = None;
                        settings.values.ui_scale = scale;
                    }
                    ui.end_row();
                    ui.label("Labels");
                    ui.horizontal(|ui| {
                        for (l, name) in [
                            (Labels::Crowd, "by priority"),
                            (Labels::All, "all"),
                            (Labels::Names, "names only"),
                            (Labels::Off, "off"),
                        ] {
                            ui.selectable_value(&mut settings.values.labels, l, name);
                        }
                    });
                    ui.end_row();
                    ui.label("Time and the model");
                    let mut live = cog.0.pacing == crate::cognition::config::Pacing::Live;
                    if ui
                        .checkbox(
                            &mut live,
                            "live: the town never waits for the model's plans",
                        )
                        .changed()
                    {
                        cog.0.pacing = if live {
                            crate::cognition::config::Pacing::Live
                        } else {
                            crate::cognition::config::Pacing::Wait
                        };
                    }
                    ui.end_row();
                    ui.label("Nights");
                    ui.checkbox(&mut skip.enabled, "run ahead while everyone sleeps (N)");
                    ui.end_row();
                });
            match &settings.file {
                Some(f) => ui.small(format!("Kept in {}", f.display())),
                None => ui.small("This run keeps no settings."),
            };
        });
    settings.open = open;
    if settings.values != before {
        save(&settings);
    }
    Ok(())
}

/// Adds this part of the window: its resources and systems, each in its place in the frame.
pub(crate) fn plugin(app: &mut App) {
    app.init_resource::<Settings>()
        .add_systems(
            Update,
            settings_key
                .run_if(not(bevy_egui::input::egui_wants_any_keyboard_input))
                .in_set(crate::AppSystems::Input),
        )
        .add_systems(
            bevy_egui::EguiPrimaryContextPass,
            (settings_ui, apply_settings),
        )
        .add_systems(
            Update,
            remember_help_seen.in_set(crate::game::shared::Present::Settings),
        );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_round_trip_and_a_bad_file_names_its_line() {
        let dir = std::env::temp_dir().join(format!("simulacra-settings-{}", std::process::id()));
        let f = dir.join("window.ron");
        assert_eq!(
            read(&f).unwrap(),
            WindowSettings::default(),
            "no file: defaults"
        );
        let s = WindowSettings {
            ui_scale: 1.5,
            labels: Labels::Names,
            seen_help: true,
        };
        write(&f, &s).unwrap();
        assert_eq!(read(&f).unwrap(), s);
        std::fs::write(&f, "(\n  ui_scale: 1.2,\n  labels: Sideways,\n)").unwrap();
        let e = read(&f).unwrap_err();
        assert!(e.contains("window.ron:3:"), "{e}");
        std::fs::write(&f, "(ui_scale: 9.0)").unwrap();
        assert_eq!(read(&f).unwrap().ui_scale, 2.0, "clamped");
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// A settings file that does not parse is never written over (the help still opens, and
    /// closing it keeps nothing); a good one opens no help once the help was seen.
    #[test]
    fn a_bad_settings_file_is_left_alone_and_a_seen_help_stays_closed() {
        let dir = std::env::temp_dir().join(format!("simulacra-settings-b-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let f = dir.join("window.ron");
        // SAFETY: nextest runs each test in a process of its own.
        unsafe { std::env::set_var("SIMULACRA_WINDOW_SETTINGS", &f) };
        std::fs::write(&f, "(ui_scale: oops)").unwrap();
        let mut app = App::new();
        app.init_resource::<Panels>();
        load(&mut app, true, false);
        assert!(
            app.world().resource::<Settings>().file.is_none(),
            "not kept"
        );
        assert!(
            !app.world().resource::<Panels>().help,
            "no file to say it was seen: no help"
        );
        assert_eq!(std::fs::read_to_string(&f).unwrap(), "(ui_scale: oops)");
        write(
            &f,
            &WindowSettings {
                seen_help: true,
                ..WindowSettings::default()
            },
        )
        .unwrap();
        let mut app = App::new();
        app.init_resource::<Panels>();
        load(&mut app, true, false);
        assert!(app.world().resource::<Settings>().file.is_some());
        assert!(
            !app.world().resource::<Panels>().help,
            "seen before: closed"
        );
        std::fs::remove_file(&f).unwrap();
        let mut app = App::new();
        app.init_resource::<Panels>();
        load(&mut app, true, false);
        assert!(
            app.world().resource::<Panels>().help,
            "a first start opens the help"
        );
        let _ = std::fs::remove_dir_all(&dir);
    }
}
