//! What the player reads and does over the town: the HUD's bars ([`hud`]), the console, chat,
//! help, people and object menus ([`console`]), the inspector ([`inspect`]), the conversation log
//! ([`log`]), the map ([`minimap`]), saves ([`saves`]), settings ([`settings`]), the replay's
//! controls ([`replay_bar`]) and the labels over people ([`labels`]).

pub mod console;
pub mod hud;
pub mod inspect;
pub mod labels;
pub mod log;
pub mod minimap;
pub mod replay_bar;
pub mod saves;
pub mod settings;
