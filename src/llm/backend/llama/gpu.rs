//! Where the chat model runs: on a GPU that llama.cpp's backends offer (Vulkan, in a build with
//! the `vulkan` feature), with as many of its layers as the config asks or as fit, or on the
//! CPU. A GPU that cannot take the model (no memory, a driver error) leaves it on the CPU, with
//! one line naming the cause; nothing else changes.
//!
//! llama.cpp's Vulkan backend offers GPUs only (a Vulkan device that runs on the CPU, such as
//! Mesa's lavapipe, is left out unless `GGML_VK_VISIBLE_DEVICES` names it: the tests do).

use crate::llm::config::LlamaConfig;
use llama_cpp_2::model::LlamaModel;
use llama_cpp_2::model::params::LlamaModelParams;
use llama_cpp_2::{LlamaBackendDeviceType, list_llama_ggml_backend_devices};
use std::path::Path;

/// A GPU a model can be put on.
#[derive(Debug, Clone, PartialEq)]
pub struct Gpu {
    /// llama.cpp's index of the device.
    pub index: usize,
    /// Its name ("Vulkan0").
    pub name: String,
    /// What it is ("NVIDIA GeForce RTX 3060", "llvmpipe (LLVM 15.0.6, 256 bits)").
    pub description: String,
    /// Its memory in bytes, all and free.
    pub memory_total: usize,
    pub memory_free: usize,
}

/// The GPUs this build's backends offer (none in a build without a GPU backend).
pub fn gpus() -> Vec<Gpu> {
    if super::global_backend().is_err() {
        return Vec::new();
    }
    list_llama_ggml_backend_devices()
        .into_iter()
        .filter(|d| {
            matches!(
                d.device_type,
                LlamaBackendDeviceType::Gpu | LlamaBackendDeviceType::IntegratedGpu
            )
        })
        .map(|d| Gpu {
            index: d.index,
            name: d.name,
            description: d.description,
            memory_total: d.memory_total,
            memory_free: d.memory_free,
        })
        .collect()
}

/// Where a model was put.
#[derive(Debug, Clone, PartialEq)]
pub struct Placement {
    /// The GPU holding its layers (`None`: the CPU).
    pub gpu: Option<Gpu>,
    /// Layers on the GPU, of all it could take (llama.cpp's count: the blocks and the output).
    pub layers: u32,
    pub of: u32,
    /// Why it is on the CPU although a GPU was asked for.
    pub fell_back: Option<String>,
}

impl Placement {
    /// A word or two for the HUD: "CPU", "Vulkan0 31/31 layers".
    pub fn short(&self) -> String {
        match &self.gpu {
            Some(g) => format!("{} {}/{} layers", g.name, self.layers, self.of),
            None if self.fell_back.is_some() => "CPU (GPU failed)".into(),
            None => "CPU".into(),
        }
    }

    /// The whole line: which device, how much of the model is on it, and why not where one
    /// was asked for.
    pub fn line(&self) -> String {
        match (&self.gpu, &self.fell_back) {
            (Some(g), _) => format!(
                "on {} ({}, {} MiB), {} of {} layers",
                g.name,
                g.description,
                g.memory_total >> 20,
                self.layers,
                self.of
            ),
            (None, Some(why)) => format!("on the CPU: {why}"),
            (None, None) => "on the CPU".into(),
        }
    }
}

/// What to try, in order: the GPU and its layer counts, most first, then the CPU.
#[derive(Debug, Clone, PartialEq)]
pub struct Plan {
    pub gpu: Option<Gpu>,
    /// Layer counts to try on `gpu` (empty: the CPU at once).
    pub layers: Vec<u32>,
    /// Why no GPU is tried although one was asked for (a name that matches none).
    pub problem: Option<String>,
}

/// The plan for a config, among `gpus`: `gpu_layers` alone, or every layer (`of`) and then
/// halves down to one; on the GPU `gpu_device` names, or the first.
pub fn plan(cfg: &LlamaConfig, gpus: &[Gpu], of: u32) -> Plan {
    let cpu = |problem: Option<String>| Plan {
        gpu: None,
        layers: Vec::new(),
        problem,
    };
    if cfg.gpu_layers == Some(0) || of == 0 {
        return cpu(None);
    }
    let gpu = match cfg.gpu_device.as_deref().map(str::trim) {
        None | Some("") => gpus.first().cloned(),
        Some(want) => {
            let low = want.to_lowercase();
            match gpus.iter().find(|g| {
                g.name.eq_ignore_ascii_case(want) || g.description.to_lowercase().contains(&low)
            }) {
                Some(g) => Some(g.clone()),
                None => {
                    let offered: Vec<String> = gpus
                        .iter()
                        .map(|g| format!("{} ({})", g.name, g.description))
                        .collect();
                    return cpu(Some(format!(
                        "no GPU matches gpu_device \"{want}\" (this build offers {})",
                        if offered.is_empty() {
                            "none".to_string()
                        } else {
                            offered.join(", ")
                        }
                    )));
                }
            }
        }
    };
    let Some(gpu) = gpu else { return cpu(None) };
    let layers = match cfg.gpu_layers {
        Some(n) => vec![n.min(of)],
        None => {
            let mut v = vec![of];
            let mut n = of / 2;
            while n >= 1 {
                v.push(n);
                n /= 2;
            }
            v
        }
    };
    Plan {
        gpu: Some(gpu),
        layers,
        problem: None,
    }
}

/// The layers llama.cpp can put on a GPU for a model file: its blocks and the output layer,
/// read from the header (0 where it cannot be read).
pub fn offloadable(path: &Path) -> u32 {
    crate::llm::models::gguf::block_count(path).map_or(0, |b| b + 1)
}

/// Loads a model with `layers` of it on `gpu` (none: on the CPU only).
pub fn load(path: &Path, gpu: Option<&Gpu>, layers: u32) -> Result<LlamaModel, String> {
    let backend = super::global_backend()?;
    // No device listed: the CPU alone (llama.cpp would otherwise still send a long prompt's
    // products to a GPU it finds, weights and all).
    let mut params = LlamaModelParams::default()
        .with_n_gpu_layers(0)
        .with_devices(&[])
        .map_err(|e| e.to_string())?;
    if let Some(g) = gpu {
        params = params
            .with_n_gpu_layers(layers)
            .with_devices(&[g.index])
            .map_err(|e| e.to_string())?;
    }
    LlamaModel::load_from_file(backend, path, &params).map_err(|e| match gpu {
        Some(g) => format!("{} could not take {layers} layers: {e}", g.name),
        None => format!("cannot load {}: {e}", path.display()),
    })
}

/// Loads the model at `path` where `cfg` asks and hands it to `start` (which makes its context
/// and returns what it will): on the GPU with the plan's layer counts, most first, each try that
/// fails to load or to start giving way to the next, and last on the CPU, saying why once.
pub fn with_placed<T>(
    path: &Path,
    cfg: &LlamaConfig,
    mut start: impl FnMut(&LlamaModel, &Placement) -> Result<T, String>,
) -> Result<T, String> {
    let of = offloadable(path);
    let plan = plan(cfg, &gpus(), of);
    let mut why = plan.problem.clone();
    for &layers in &plan.layers {
        let gpu = plan.gpu.clone();
        let name = gpu.as_ref().map_or(String::new(), |g| g.name.clone());
        match load(path, gpu.as_ref(), layers) {
            Ok(model) => {
                let placement = Placement {
                    gpu,
                    layers,
                    of,
                    fell_back: None,
                };
                match start(&model, &placement) {
                    Ok(t) => return Ok(t),
                    Err(e) => {
                        why = Some(format!("{name} could not start with {layers} layers: {e}"))
                    }
                }
            }
            Err(e) => why = Some(e),
        }
    }
    if let Some(w) = &why {
        eprintln!("llama.cpp: the model runs on the CPU: {w}");
    }
    let placement = Placement {
        gpu: None,
        layers: 0,
        of,
        fell_back: why,
    };
    start(&load(path, None, 0)?, &placement)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gpu(i: usize, name: &str, what: &str) -> Gpu {
        Gpu {
            index: i,
            name: name.into(),
            description: what.into(),
            memory_total: 8 << 30,
            memory_free: 7 << 30,
        }
    }

    #[test]
    fn all_that_fit_tries_every_layer_then_halves() {
        let gpus = [gpu(1, "Vulkan0", "AMD Radeon RX 7600")];
        let p = plan(&LlamaConfig::default(), &gpus, 31);
        assert_eq!(p.gpu.as_ref().unwrap().name, "Vulkan0");
        assert_eq!(p.layers, vec![31, 15, 7, 3, 1]);
        let some = LlamaConfig {
            gpu_layers: Some(10),
            ..Default::default()
        };
        assert_eq!(plan(&some, &gpus, 31).layers, vec![10]);
        let many = LlamaConfig {
            gpu_layers: Some(99),
            ..Default::default()
        };
        assert_eq!(plan(&many, &gpus, 31).layers, vec![31]);
    }

    #[test]
    fn the_cpu_when_asked_or_when_no_gpu_is_offered() {
        let gpus = [gpu(1, "Vulkan0", "AMD Radeon RX 7600")];
        let cpu_only = LlamaConfig {
            gpu_layers: Some(0),
            ..Default::default()
        };
        let p = plan(&cpu_only, &gpus, 31);
        assert!(p.gpu.is_none() && p.layers.is_empty() && p.problem.is_none());
        let p = plan(&LlamaConfig::default(), &[], 31);
        assert!(p.gpu.is_none() && p.problem.is_none(), "{p:?}");
    }

    #[test]
    fn a_device_is_chosen_by_name_or_description_and_a_wrong_one_is_said() {
        let gpus = [
            gpu(1, "Vulkan0", "Intel(R) UHD Graphics 770"),
            gpu(2, "Vulkan1", "NVIDIA GeForce RTX 3060"),
        ];
        let by = |w: &str| {
            plan(
                &LlamaConfig {
                    gpu_device: Some(w.into()),
                    ..Default::default()
                },
                &gpus,
                31,
            )
        };
        assert_eq!(by("vulkan1").gpu.unwrap().index, 2);
        assert_eq!(by("geforce").gpu.unwrap().index, 2);
        let p = by("Radeon");
        assert!(p.gpu.is_none());
        let why = p.problem.unwrap();
        assert!(
            why.contains("\"Radeon\"") && why.contains("Vulkan1 (NVIDIA GeForce RTX 3060)"),
            "{why}"
        );
    }

    #[test]
    fn placements_in_words() {
        let on = Placement {
            gpu: Some(gpu(1, "Vulkan0", "llvmpipe (LLVM 15.0.6, 256 bits)")),
            layers: 31,
            of: 31,
            fell_back: None,
        };
        assert_eq!(on.short(), "Vulkan0 31/31 layers");
        assert_eq!(
            on.line(),
            "on Vulkan0 (llvmpipe (LLVM 15.0.6, 256 bits), 8192 MiB), 31 of 31 layers"
        );
        let off = Placement {
            gpu: None,
            layers: 0,
            of: 31,
            fell_back: Some("Vulkan0 could not take 31 layers: out of memory".into()),
        };
        assert_eq!(off.short(), "CPU (GPU failed)");
        assert!(off.line().starts_with("on the CPU: Vulkan0 could not"));
    }
}
