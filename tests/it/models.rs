//! `simulacra models`: the GGUF chat models already on the machine, found in stores laid out as
//! Ollama, LM Studio and Hugging Face lay them out (made here from the shipped model file), with
//! what their headers say; what is not a chat model, not GGUF, or named by a broken manifest or
//! link is skipped with the reason.

use simulacra::llm::models::{Roots, Store, list, report};
use std::path::Path;

/// `file` placed at `at` without copying its 94 MB where the file system allows (a hard link).
fn place(file: &Path, at: &Path) {
    std::fs::create_dir_all(at.parent().unwrap()).unwrap();
    if std::fs::hard_link(file, at).is_err() {
        std::fs::copy(file, at).unwrap();
    }
}

#[test]
fn the_models_in_ollamas_lm_studios_and_hugging_faces_stores_are_found_with_their_headers() {
    let model = crate::model_path();
    let embedder = simulacra::llm::backend::bert_gguf::gguf_for(&crate::embedder_path()).unwrap();
    let home = crate::temp_dir("model-stores");
    let project = home.join("project-models");
    std::fs::create_dir_all(&project).unwrap();
    // Ollama: a manifest per tag (its config layer, then the model's), the weights a blob
    // named by its digest.
    let ollama = home.join(".ollama/models");
    let hex = "a".repeat(64);
    place(&model, &ollama.join(format!("blobs/sha256-{hex}")));
    let manifest = |digest: &str| {
        serde_json::json!({
            "schemaVersion": 2,
            "mediaType": "application/vnd.docker.distribution.manifest.v2+json",
            "config": {"mediaType": "application/vnd.docker.container.image.v1+json", "digest": format!("sha256:{}", "c".repeat(64)), "size": 485},
            "layers": [
                {"mediaType": "application/vnd.ollama.image.model", "digest": digest, "size": 94_000_000},
                {"mediaType": "application/vnd.ollama.image.template", "digest": format!("sha256:{}", "d".repeat(64)), "size": 100}
            ]
        })
        .to_string()
    };
    let tags = ollama.join("manifests/registry.ollama.ai/library/smollm2");
    std::fs::create_dir_all(&tags).unwrap();
    std::fs::write(tags.join("135m"), manifest(&format!("sha256:{hex}"))).unwrap();
    // A tag whose blob was never pulled, and one whose digest would lead out of the blobs.
    std::fs::write(
        tags.join("partial"),
        manifest(&format!("sha256:{}", "b".repeat(64))),
    )
    .unwrap();
    std::fs::write(
        tags.join("escape"),
        manifest("sha256:../../../../etc/passwd"),
    )
    .unwrap();
    // LM Studio: publisher/repository/file; an embedder beside the model is no chat model.
    let lm = home.join(".lmstudio/models/HuggingFaceTB/SmolLM2-135M-Instruct-GGUF");
    place(&model, &lm.join("SmolLM2-135M-Instruct.Q4_1.gguf"));
    place(
        &embedder,
        &home.join(".lmstudio/models/sentence-transformers/all-MiniLM-L6-v2-GGUF/model.gguf"),
    );
    // Hugging Face: the snapshot's file a relative link to its blob; a link left dangling.
    let hf = home.join(".cache/huggingface/hub/models--HuggingFaceTB--SmolLM2-135M-Instruct-GGUF");
    place(&model, &hf.join("blobs/0123abcd"));
    let snapshot = hf.join("snapshots/4f1c0ffee");
    std::fs::create_dir_all(&snapshot).unwrap();
    std::os::unix::fs::symlink(
        "../../blobs/0123abcd",
        snapshot.join("SmolLM2-135M-Instruct.Q4_1.gguf"),
    )
    .unwrap();
    std::os::unix::fs::symlink("../../blobs/gone", snapshot.join("missing.gguf")).unwrap();
    // The project's folder: a file that is not GGUF.
    std::fs::write(project.join("notes.gguf"), b"not a model at all").unwrap();

    let listing = list(&Roots::under_home(&home, project.clone()));
    let text = report(&listing);
    println!("{text}");
    let names: Vec<(Store, &str)> = listing
        .found
        .iter()
        .map(|f| (f.store, f.name.as_str()))
        .collect();
    assert_eq!(
        names,
        [
            (Store::Ollama, "smollm2:135m"),
            (
                Store::LmStudio,
                "HuggingFaceTB/SmolLM2-135M-Instruct-GGUF/SmolLM2-135M-Instruct.Q4_1.gguf"
            ),
            (
                Store::HuggingFace,
                "HuggingFaceTB/SmolLM2-135M-Instruct-GGUF/SmolLM2-135M-Instruct.Q4_1.gguf"
            ),
        ],
        "{text}"
    );
    let bytes = std::fs::metadata(&model).unwrap().len();
    for f in &listing.found {
        assert_eq!(f.info.architecture, "llama", "{text}");
        assert_eq!(f.info.quantisation, "Q4_1", "{text}");
        assert!(
            (100_000_000..200_000_000).contains(&f.info.parameters),
            "{text}"
        );
        assert_eq!(f.info.parameters_words(), "135M", "{text}");
        assert_eq!(f.info.context_length, Some(8192), "{text}");
        assert!(f.info.chat_template);
        assert_eq!(f.bytes, bytes);
    }
    assert_eq!(
        listing.found[0].path,
        ollama.join(format!("blobs/sha256-{hex}"))
    );
    // Each thing passed over, with why.
    let why = |end: &str| {
        listing
            .skipped
            .iter()
            .find(|s| s.path.ends_with(end))
            .map(|s| s.why.clone())
            .unwrap_or_else(|| panic!("{end} not skipped: {text}"))
    };
    assert!(why("smollm2/partial").contains("missing"), "{text}");
    assert!(why("smollm2/escape").contains("not sha256:<hex>"), "{text}");
    assert!(
        why("all-MiniLM-L6-v2-GGUF/model.gguf").contains("not a chat model (architecture bert"),
        "{text}"
    );
    assert!(
        why("4f1c0ffee/missing.gguf").contains("cannot be read"),
        "{text}"
    );
    assert!(why("notes.gguf").contains("not a GGUF file"), "{text}");
    assert_eq!(listing.skipped.len(), 5, "{text}");
    // The command lists them, and `--model` with the Ollama tag runs the embedded llama.cpp on
    // its blob (answering with the file's own chat template), reading it as it is: nothing is
    // written into another program's store.
    let run = |args: &[&str]| {
        std::process::Command::new(crate::simulacra_bin())
            .args(args)
            .env("HOME", &home)
            .env_remove("OLLAMA_MODELS")
            .env_remove("HF_HUB_CACHE")
            .env_remove("HF_HOME")
            .current_dir(simulacra::data::data_root())
            .output()
            .unwrap()
    };
    let listed = run(&["models"]);
    let out = String::from_utf8_lossy(&listed.stdout);
    assert!(listed.status.success(), "{out}");
    assert!(
        out.contains("smollm2:135m") && out.contains("hugging-face") && out.contains("lm-studio"),
        "{out}"
    );
    let blobs = || std::fs::read_dir(ollama.join("blobs")).unwrap().count();
    let before = blobs();
    let probed = run(&[
        "check",
        "--probe",
        "--scenario",
        "the_ville_n3",
        "--model",
        "smollm2:135m",
    ]);
    let out = String::from_utf8_lossy(&probed.stdout);
    assert!(
        probed.status.success(),
        "{out}{}",
        String::from_utf8_lossy(&probed.stderr)
    );
    assert!(
        out.contains(&format!("model {}", listing.found[0].path.display())),
        "{out}"
    );
    assert_eq!(blobs(), before, "nothing written into Ollama's blobs");
    let refused = run(&[
        "check",
        "--scenario",
        "the_ville_n3",
        "--model",
        "llama3.2:3b",
    ]);
    let err = String::from_utf8_lossy(&refused.stderr);
    assert_eq!(refused.status.code(), Some(2), "{err}");
    assert!(
        err.contains("no store has a model by that name") && err.contains("smollm2:135m"),
        "{err}"
    );
    // Stores that are not there are passed over without a word.
    let empty = list(&Roots::under_home(
        &home.join("nobody"),
        home.join("nothing"),
    ));
    assert_eq!((empty.found.len(), empty.skipped.len()), (0, 0));
    assert!(report(&empty).starts_with("no GGUF chat model found"));
    let _ = std::fs::remove_dir_all(&home);
}
