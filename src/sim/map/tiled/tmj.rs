//! The `.tmj`/`.json` reader: serde structs for Tiled's documented JSON format
//! (<https://doc.mapeditor.org/en/stable/reference/json-map-format/>; no maintained crate
//! reads it), with external tilesets in `.tsj`/`.json` or `.tsx`.

use super::ArtTileset;
use super::absolute_dir;
use super::doc::{Doc, check_map, decode_text, parse_colour};
use super::tmx::tiled_tileset;
use crate::data_error::DataError;
use serde::Deserialize;
use std::path::Path;

fn yes() -> bool {
    true
}

fn one() -> f32 {
    1.0
}

#[derive(Deserialize)]
struct JMap {
    #[serde(default)]
    orientation: Option<String>,
    #[serde(default)]
    infinite: bool,
    width: i64,
    height: i64,
    tilewidth: u32,
    tileheight: u32,
    #[serde(default)]
    layers: Vec<JLayer>,
    #[serde(default)]
    tilesets: Vec<JTileset>,
    #[serde(default)]
    properties: Vec<JProperty>,
}

#[derive(Deserialize)]
struct JProperty {
    name: String,
    #[serde(default)]
    value: serde_json::Value,
}

#[derive(Deserialize)]
struct JLayer {
    #[serde(rename = "type")]
    kind: String,
    #[serde(default)]
    name: String,
    #[serde(default = "yes")]
    visible: bool,
    #[serde(default = "one")]
    opacity: f32,
    #[serde(default)]
    data: Option<serde_json::Value>,
    #[serde(default)]
    encoding: Option<String>,
    #[serde(default)]
    compression: Option<String>,
    #[serde(default)]
    chunks: Option<serde_json::Value>,
    #[serde(default)]
    layers: Vec<JLayer>,
    #[serde(default)]
    offsetx: f64,
    #[serde(default)]
    offsety: f64,
}

#[derive(Deserialize)]
struct JTileset {
    #[serde(default)]
    firstgid: u32,
    #[serde(default)]
    source: Option<String>,
    #[serde(default)]
    name: String,
    #[serde(default)]
    tilewidth: u32,
    #[serde(default)]
    tileheight: u32,
    #[serde(default)]
    tilecount: u32,
    #[serde(default)]
    columns: u32,
    #[serde(default)]
    margin: u32,
    #[serde(default)]
    spacing: u32,
    #[serde(default)]
    image: Option<String>,
    #[serde(default)]
    imagewidth: u32,
    #[serde(default)]
    imageheight: u32,
    #[serde(default)]
    transparentcolor: Option<String>,
}

fn json_error(path: &Path, e: serde_json::Error) -> DataError {
    DataError::new(path, e.line(), "", format!("not a Tiled map in JSON: {e}"))
}

/// Reads a `.tmj`/`.json` map into a [`Doc`].
pub(super) fn read_tmj(path: &Path, src: &str) -> Result<Doc, DataError> {
    let map: JMap = serde_json::from_str(src).map_err(|e| json_error(path, e))?;
    check_map(
        path,
        map.orientation.as_deref().unwrap_or("orthogonal"),
        map.infinite,
        map.width,
        map.height,
        map.tilewidth,
        map.tileheight,
    )?;
    let dir = absolute_dir(path);
    let mut tilesets = Vec::new();
    for (i, t) in map.tilesets.iter().enumerate() {
        tilesets.push(json_tileset(path, &dir, i, t)?);
    }
    let world = map
        .properties
        .iter()
        .find(|p| p.name.eq_ignore_ascii_case("world"))
        .and_then(|p| p.value.as_str())
        .map(str::to_string);
    let mut doc = Doc::new(
        path,
        (map.width as i32, map.height as i32),
        (map.tilewidth, map.tileheight),
        tilesets,
        world,
    );
    json_layers(path, &map.layers, true, 1.0, &mut doc)?;
    Ok(doc)
}

fn json_tileset(path: &Path, dir: &Path, i: usize, t: &JTileset) -> Result<ArtTileset, DataError> {
    let field = format!("tilesets[{i}]");
    if t.firstgid == 0 {
        return Err(DataError::new(
            path,
            0,
            field,
            "has no firstgid (the gid of its first tile)",
        ));
    }
    let Some(source) = &t.source else {
        return Ok(art_tileset(dir, t, t.firstgid));
    };
    // An external tileset: `.tsj`/`.json` in the same JSON form, `.tsx` read by the tiled crate.
    let file = dir.join(source);
    let ext = file
        .extension()
        .and_then(|e| e.to_str())
        .unwrap_or("")
        .to_ascii_lowercase();
    if ext == "tsx" {
        let ts = ::tiled::Loader::new()
            .load_tsx_tileset(&file)
            .map_err(|e| {
                DataError::new(
                    path,
                    0,
                    field.clone(),
                    format!("the tileset {} cannot be read: {e}", file.display()),
                )
            })?;
        return Ok(tiled_tileset(&ts, t.firstgid));
    }
    let text = crate::data::read_bounded(&file, crate::data::MAX_TEXT_BYTES).map_err(|e| {
        DataError::new(
            path,
            0,
            field.clone(),
            format!("the tileset {} cannot be read: {e}", file.display()),
        )
    })?;
    let ext_ts: JTileset = serde_json::from_str(&text).map_err(|e| {
        DataError::new(
            &file,
            e.line(),
            "",
            format!("not a Tiled tileset in JSON: {e}"),
        )
    })?;
    Ok(art_tileset(&absolute_dir(&file), &ext_ts, t.firstgid))
}

fn art_tileset(dir: &Path, t: &JTileset, first_gid: u32) -> ArtTileset {
    ArtTileset {
        name: t.name.clone(),
        first_gid,
        tile_count: t.tilecount,
        columns: t.columns,
        tile_width: t.tilewidth,
        tile_height: t.tileheight,
        margin: t.margin,
        spacing: t.spacing,
        image: t.image.as_ref().map(|i| dir.join(i)),
        image_width: t.imagewidth,
        image_height: t.imageheight,
        transparent: t.transparentcolor.as_deref().and_then(parse_colour),
    }
}

/// Tile layers (groups walked into, their visibility and opacity passed down) pushed onto the
/// document; other layers are noted as not read.
fn json_layers(
    path: &Path,
    layers: &[JLayer],
    visible: bool,
    opacity: f32,
    doc: &mut Doc,
) -> Result<(), DataError> {
    for l in layers {
        match l.kind.as_str() {
            "tilelayer" => {
                let gids = json_gids(path, l, (doc.width * doc.height) as usize)?;
                doc.push_tile_layer(
                    &l.name,
                    (l.offsetx, l.offsety),
                    visible && l.visible,
                    opacity * l.opacity,
                    gids,
                );
            }
            "group" => json_layers(
                path,
                &l.layers,
                visible && l.visible,
                opacity * l.opacity,
                doc,
            )?,
            other => doc.notes.push(format!(
                "{other} '{}' is not read (only tile layers make the town)",
                l.name
            )),
        }
    }
    Ok(())
}

/// A tile layer's gids: a list of numbers, or text (base64 unless the layer says otherwise,
/// perhaps packed) unpacked no further than the map's `map_cells`. A layer in chunks (an
/// infinite map) or with no data is an error.
fn json_gids(path: &Path, l: &JLayer, map_cells: usize) -> Result<Vec<u32>, DataError> {
    let field = || format!("layer '{}'", l.name);
    if l.chunks.is_some() {
        return Err(DataError::new(
            path,
            0,
            field(),
            "holds chunks (an infinite map); in Tiled untick Map > Map Properties > Infinite and save again",
        ));
    }
    let gids = match &l.data {
        Some(serde_json::Value::Array(cells)) => {
            let mut out = Vec::with_capacity(cells.len());
            for (i, c) in cells.iter().enumerate() {
                let g = c
                    .as_u64()
                    .filter(|g| *g <= u32::MAX as u64)
                    .ok_or_else(|| {
                        DataError::new(
                            path,
                            0,
                            format!("{}, cell {i}", field()),
                            format!("{c} is not a tile id (a whole number, 0 for none)"),
                        )
                    })?;
                out.push(g as u32);
            }
            out
        }
        Some(serde_json::Value::String(text)) => decode_text(
            text,
            Some(l.encoding.as_deref().unwrap_or("base64")),
            l.compression.as_deref(),
            map_cells,
        )
        .map_err(|m| DataError::new(path, 0, field(), m))?,
        _ => {
            return Err(DataError::new(
                path,
                0,
                field(),
                "has no data (a list of tile ids)",
            ));
        }
    };
    Ok(gids)
}
