//! Memory with the real models (SmolLM2 for words, all-MiniLM-L6-v2 for embeddings): a
//! resident perceives a scene, every importance is a model answer in 1–10, a reflection asks 3
//! questions and stores insights whose evidence exists; and a question about a seed memory
//! finds that memory first among twenty unrelated ones.

use bevy::prelude::*;
use simulacra::SimPlugin;
use simulacra::agent::Resident;
use simulacra::config::GameConfig;
use simulacra::llm::config::{BackendConfig, BertConfig, LlamaConfig, LlmConfig};
use simulacra::llm::runtime::LlmRuntime;
use simulacra::llm::{Embedding, Llm, LlmValue};
use simulacra::memory::retrieve::{RetrievalParams, retrieve};
use simulacra::memory::stream::{MemoryStream, NewNode, NodeKind};
use simulacra::sim::clock::SimClock;
use simulacra::sim::objects_state::ObjectStates;
use simulacra::{headless_app, run_steps};
use std::time::Duration;

/// The embedded chat model and sentence embedder, as the game runs them by default (fewer slots).
pub fn real_llm() -> LlmConfig {
    LlmConfig {
        backends: vec![
            BackendConfig::Llama(LlamaConfig {
                model: crate::model_path().to_string_lossy().into(),
                slots: 8,
                context: 16384, // 2,048 tokens a slot: a day's hourly choice is up to ~1,100 generated
                threads: Some(2),
                ..Default::default()
            }),
            BackendConfig::Bert(BertConfig {
                model: crate::embedder_path().to_string_lossy().into(),
                threads: Some(2),
                ..Default::default()
            }),
        ],
        embedding_backend: Some("embedder".into()),
        timeout_s: 300.0,
        ..Default::default()
    }
}

/// Isabella alone, at 07:00 in her apartment (she leaves for the cafe at 08:00).
fn isabella_scenario() -> std::path::PathBuf {
    let n3 = std::fs::read_to_string(
        simulacra::data::data_root().join("config/scenarios/the_ville_n3.ron"),
    )
    .unwrap();
    let start = n3
        .find("        (\n            name: \"Maria Lopez\"")
        .unwrap();
    let end = n3.find("    ],\n)").unwrap();
    let one = format!("{}{}", &n3[..start], &n3[end..])
        .replace("start: \"2023-02-13 00:00\"", "start: \"2023-02-13 07:00\"");
    let dir = crate::temp_dir("isabella");
    let p = dir.join("isabella.ron");
    std::fs::write(&p, one).unwrap();
    p
}

#[test]
fn a_resident_perceives_scores_and_reflects_with_the_real_models() {
    let _model = crate::real_model_lock();
    let mut config = GameConfig {
        llm: real_llm(),
        ..Default::default()
    };
    // SmolLM2-135M rates importance poorly (often 1 or 2 here): a low threshold makes the reflection come soon.
    config.cognition.reflection_threshold = 4;
    // The routine plans her day here: this test is about memory (planning has its own).
    config.cognition.planning = simulacra::cognition::config::Planning::Routine;
    let sim = SimPlugin::load(
        isabella_scenario().to_str().unwrap(),
        Some("smallville"),
        config,
    )
    .unwrap();
    let mut app = headless_app(sim);
    run_steps(&mut app, 1);
    // A scene in her apartment: the stove and the shower are on.
    let now = app.world().resource::<SimClock>().now;
    {
        let mut objects = app.world_mut().resource_mut::<ObjectStates>();
        objects.set(
            "the Ville:Isabella Rodriguez's apartment:main room:cooking area",
            "burning",
            None,
            now,
        );
        objects.set(
            "the Ville:Isabella Rodriguez's apartment:bathroom:shower",
            "leaking water onto the floor",
            None,
            now,
        );
    }
    let isa = app
        .world_mut()
        .query_filtered::<Entity, With<Resident>>()
        .single(app.world())
        .unwrap();
    let mut reflected = false;
    for _ in 0..40 {
        run_steps(&mut app, 30);
        let s = app.world().get::<MemoryStream>(isa).unwrap();
        if s.nodes().iter().any(|n| n.is_reflection()) {
            // Let the rest of the reflection's answers arrive.
            run_steps(&mut app, 60);
            reflected = true;
            break;
        }
    }
    let s = app.world().get::<MemoryStream>(isa).unwrap().clone();
    let stats = app.world().resource::<Llm>().stats();
    for n in s.nodes() {
        println!(
            "{} [{}{}] {}",
            n.id,
            n.importance,
            if n.evidence.is_empty() {
                String::new()
            } else {
                format!(
                    " ← {:?}",
                    n.evidence.iter().map(|e| e.to_string()).collect::<Vec<_>>()
                )
            },
            n.description
        );
    }
    print!("{}", stats.table());
    assert!(
        s.nodes()
            .iter()
            .any(|n| n.kind == NodeKind::Event && n.description == "cooking area is burning"),
        "the burning stove was not perceived"
    );
    let imp = &stats.by_purpose["importance"];
    assert!(imp.calls >= 1);
    assert_eq!(imp.fallbacks, 0, "every importance came from the model");
    assert_eq!(imp.parse_failures, 0, "the shape holds by construction");
    assert!(s.nodes().iter().all(|n| (1..=10).contains(&n.importance)));
    assert!(
        reflected,
        "no reflection within 20 game hours' worth of checks"
    );
    let q = &stats.by_purpose["reflect_questions"];
    assert_eq!(q.fallbacks, 0, "the questions came from the model");
    assert_eq!(
        stats.by_purpose["reflect_query"].calls,
        3 * q.calls,
        "3 questions per reflection, each embedded to retrieve its evidence"
    );
    let insights: Vec<_> = s.nodes().iter().filter(|n| n.is_reflection()).collect();
    assert!(!insights.is_empty());
    for i in insights {
        assert!(i.depth >= 1);
        for e in &i.evidence {
            assert!(s.contains(*e), "{} cites {e}, which does not exist", i.id);
        }
    }
}

#[test]
fn a_question_about_a_seed_memory_finds_it_first_among_twenty_unrelated_ones() {
    let _model = crate::real_model_lock();
    let rt = LlmRuntime::start(&LlmConfig {
        backends: real_llm().backends.split_off(1),
        embedding_backend: None,
        ..real_llm()
    });
    let seed = "Isabella Rodriguez is throwing a Valentine's Day party at Hobbs Cafe on February 14th from 5pm to 7pm";
    let unrelated = [
        "Klaus Mueller is reading a book about urban sociology in the library",
        "Tom Moreno is stacking cans of soup on the grocery shelf",
        "The shower in the dorm bathroom is leaking",
        "Wolfgang Schulz is lifting weights in the garden",
        "Ryan Park is fixing a bug in his code",
        "Jane Moreno is watering the plants",
        "Giorgio Rossi is solving a difficult equation",
        "Abigail Chen is drawing a storyboard",
        "Sam Moore is running for mayor",
        "John Lin is counting pills behind the pharmacy counter",
        "Ayesha Khan is writing an essay about poetry",
        "Carmen Ortiz is restocking hammers at the supply store",
        "It rained all morning in Smallville",
        "Arthur Burton is cleaning glasses at the pub",
        "Eddy Lin is practising the piano",
        "Yuriko Yamamoto is filing tax documents",
        "Latoya Williams is taking photographs of the pond",
        "Adam Smith is reading philosophy",
        "Mei Lin is grading exams",
        "Jennifer Moore is painting a watercolour",
    ];
    let embed = |text: &str| -> Embedding {
        let r = crate::embed_reply(&rt, text, Duration::from_secs(300));
        let LlmValue::Embedding(e) = r.value else {
            panic!("{:?}", r.source)
        };
        assert_eq!(&*e.model, "bert:all-MiniLM-L6-v2");
        assert_eq!(e.dim(), 384);
        e
    };
    let now = simulacra::sim::time::GameTime::parse("2023-02-13 09:00").unwrap();
    let mut stream = MemoryStream::default();
    // Everything formed at the same moment with the same importance: only relevance decides.
    for text in unrelated
        .iter()
        .take(10)
        .chain([&seed])
        .chain(unrelated.iter().skip(10))
    {
        stream.add(
            NodeKind::Thought,
            NewNode {
                description: text.to_string(),
                importance: Some(5),
                embedding: Some(embed(text)),
                ..Default::default()
            },
            now,
        );
    }
    for question in [
        "Is anyone planning a party?",
        "What is happening at Hobbs Cafe on Valentine's Day?",
    ] {
        let q = embed(question);
        let found = retrieve(&stream, Some(&q), now, &RetrievalParams::default(), 3);
        let first = stream.get(found[0].id).unwrap();
        assert_eq!(first.description, seed, "{question}");
    }
}

/// The sentence embedder (all-MiniLM-L6-v2 run by llama.cpp from the file written from the
/// fetched weights) gives the vectors and tokens of a reference computed from the same weights
/// and tokenizer with numpy and Hugging Face's tokenizers
/// (`tests/fixtures/embedder/make_reference.py`, its output beside it), accents and punctuation
/// included.
#[test]
fn the_sentence_embedder_matches_a_reference_computed_from_its_weights() {
    let _model = crate::real_model_lock();
    let model = simulacra::llm::backend::bert::SentenceModel::load(&crate::embedder_path())
        .expect("the embedder loads");
    assert_eq!(model.dim(), 384);
    let reference = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/embedder/reference.jsonl"),
    )
    .unwrap();
    let rows: Vec<serde_json::Value> = reference
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(rows.len(), 3);
    let tokens: Vec<_> = rows
        .iter()
        .map(|r| model.tokens(r["text"].as_str().unwrap(), 256))
        .collect();
    let mut embedder = model.embedder(2, 32).expect("a context");
    let got = embedder.embed_tokens(&tokens);
    for ((r, toks), v) in rows.iter().zip(&tokens).zip(got) {
        let ids: Vec<i64> = r["ids"]
            .as_array()
            .unwrap()
            .iter()
            .map(|x| x.as_i64().unwrap())
            .collect();
        let ours: Vec<i64> = toks.iter().map(|t| t.0 as i64).collect();
        assert_eq!(ours, ids, "tokens of {}", r["text"]);
        let (v, n) = v.expect("a vector");
        assert_eq!(n as usize, ids.len());
        let want: Vec<f32> = r["v"]
            .as_array()
            .unwrap()
            .iter()
            .map(|x| x.as_f64().unwrap() as f32)
            .collect();
        let cos: f32 = v.iter().zip(&want).map(|(a, b)| a * b).sum();
        let worst = v
            .iter()
            .zip(&want)
            .map(|(a, b)| (a - b).abs())
            .fold(0.0f32, f32::max);
        println!(
            "{}: cosine {cos:.7}, largest difference {worst:.2e}",
            r["text"]
        );
        assert!(
            cos > 0.99999 && worst < 1e-3,
            "{}: cosine {cos}, worst {worst}",
            r["text"]
        );
    }
}

/// Importance by likeness with the real embedder: everyday observations of the town score low,
/// life events the scale does not list score high (the shipped scale, `importance_by: Likeness`).
#[test]
fn the_importance_scale_tells_mundane_memories_from_poignant_ones_with_the_real_embedder() {
    use simulacra::memory::importance::ImportanceScale;
    let _model = crate::real_model_lock();
    let model = simulacra::llm::backend::bert::SentenceModel::load(&crate::embedder_path())
        .expect("the embedder loads");
    let path = simulacra::data::data_root().join("config/prompts/importance_scale.txt");
    let scale = ImportanceScale::parse(&path, &std::fs::read_to_string(&path).unwrap()).unwrap();
    let mundane = [
        "Isabella Rodriguez is sleeping",
        "bed is being slept in",
        "Klaus Mueller is having breakfast",
        "shower is idle",
    ];
    let poignant = [
        "Maria's grandmother passed away last night",
        "Klaus was accepted into a PhD programme",
        "Isabella and her boyfriend broke up",
        "Tom lost his job at the market",
        "Ayesha got engaged to her partner",
    ];
    let texts: Vec<&str> = scale
        .examples
        .iter()
        .map(|(_, t)| t.as_str())
        .chain(mundane)
        .chain(poignant)
        .collect();
    let tokens: Vec<_> = texts.iter().map(|t| model.tokens(t, 256)).collect();
    let mut embedder = model.embedder(2, 32).expect("a context");
    let unit = |v: Vec<f32>| {
        let n = v.iter().map(|x| x * x).sum::<f32>().sqrt();
        v.into_iter().map(|x| x / n).collect::<Vec<f32>>()
    };
    let vectors: Vec<Vec<f32>> = embedder
        .embed_tokens(&tokens)
        .into_iter()
        .map(|v| unit(v.expect("a vector").0))
        .collect();
    let (examples, memories) = vectors.split_at(scale.examples.len());
    let examples: Vec<&[f32]> = examples.iter().map(|v| v.as_slice()).collect();
    let scores: Vec<u8> = memories
        .iter()
        .map(|v| scale.score(&examples, v).expect("a score"))
        .collect();
    for (t, s) in mundane.iter().chain(&poignant).zip(&scores) {
        println!("{s:>2}  {t}");
    }
    let (low, high) = scores.split_at(mundane.len());
    assert!(
        low.iter().all(|s| *s <= 3),
        "everyday observations: {low:?}"
    );
    assert!(high.iter().all(|s| *s >= 6), "life events: {high:?}");
}

/// The likeness at which an activity is refined and placed as one done before
/// (`cognition.reuse_likeness`), set on the real embedder: the same activity in other words
/// (punctuation, a verb's form, a plural, a preposition, a place added) is at least that like it
/// (seen: 0.94–0.99); another meal, another workplace, another place for the same thing, the
/// evening's counterpart of the morning's routine, or another's side of the same thing is less
/// (seen: 0.27–0.82), compared as a resident's scratch keeps them, packed. The embedder is
/// strict: "writing her research paper" and "writing research paper" are 0.72 apart, so such
/// pairs are asked as two.
#[test]
fn the_likeness_threshold_tells_the_same_activity_in_other_words_from_another_activity() {
    use simulacra::cognition::config::CognitionConfig;
    use simulacra::cognition::resident::scratch::PackedVector;
    let _model = crate::real_model_lock();
    let model = simulacra::llm::backend::bert::SentenceModel::load(&crate::embedder_path())
        .expect("the embedder loads");
    let same = [
        ("having breakfast", "Having breakfast."),
        ("working at the cafe", "working in the cafe"),
        ("opening the cafe", "open the cafe"),
        (
            "having a quick breakfast",
            "having a quick breakfast at home",
        ),
        (
            "reading a book in the library",
            "reading books in the library",
        ),
        ("getting ready for the day", "getting ready for the day."),
    ];
    let other = [
        ("having lunch", "having dinner"),
        ("having breakfast at home", "having breakfast at Hobbs Cafe"),
        ("working at the pharmacy", "working at the supply store"),
        ("reading in the library", "studying in the library"),
        ("getting ready for the day", "getting ready for bed"),
        ("taking a walk in the park", "relaxing at home"),
        (
            "teaching a class at the college",
            "attending a class at the college",
        ),
        ("going to the cafe", "working at the cafe"),
        ("writing a paper", "writing a poem"),
        ("cleaning the kitchen", "cleaning the bathroom"),
        ("painting in the studio", "painting in the park"),
        ("chatting with customers", "serving customers"),
    ];
    let texts: Vec<&str> = same
        .iter()
        .chain(&other)
        .flat_map(|(a, b)| [*a, *b])
        .collect();
    let tokens: Vec<_> = texts.iter().map(|t| model.tokens(t, 256)).collect();
    let mut embedder = model.embedder(2, 32).expect("a context");
    let packed: Vec<PackedVector> = embedder
        .embed_tokens(&tokens)
        .into_iter()
        .map(|v| PackedVector::pack(&v.expect("a vector").0))
        .collect();
    let threshold = CognitionConfig::default().reuse_likeness;
    for (i, (a, b)) in same.iter().chain(&other).enumerate() {
        let l = packed[2 * i].likeness(&packed[2 * i + 1]);
        let is_same = i < same.len();
        println!(
            "{l:.4} {} \"{a}\" / \"{b}\"",
            if is_same { "same " } else { "other" }
        );
    }
    for (i, (a, b)) in same.iter().chain(&other).enumerate() {
        let l = packed[2 * i].likeness(&packed[2 * i + 1]);
        if i < same.len() {
            assert!(
                l >= threshold,
                "the same: \"{a}\" / \"{b}\": {l} < {threshold}"
            );
        } else {
            assert!(
                l < threshold,
                "another: \"{a}\" / \"{b}\": {l} >= {threshold}"
            );
        }
    }
}

/// A text's vector is the same bits whatever shares its decode: alone, or with texts of other
/// lengths before and after it (which residents' memories are embedded together depends on when
/// they come, residents on their own clocks above all).
#[test]
fn an_embedding_does_not_depend_on_what_shares_its_batch() {
    let _model = crate::real_model_lock();
    let model = simulacra::llm::backend::bert::SentenceModel::load(&crate::embedder_path())
        .expect("the embedder loads");
    let texts = [
        "Isabella Rodriguez is planning a Valentine's Day party at Hobbs Cafe",
        "bed is idle",
        "Klaus Mueller is reading a book about gentrification in the library",
        "Maria Lopez is studying for her physics exam at Oak Hill College",
    ];
    let tokens: Vec<_> = texts.iter().map(|t| model.tokens(t, 256)).collect();
    let mut embedder = model.embedder(2, 32).expect("a context");
    let alone: Vec<Vec<f32>> = tokens
        .iter()
        .map(|t| {
            embedder
                .embed_tokens(std::slice::from_ref(t))
                .remove(0)
                .unwrap()
                .0
        })
        .collect();
    let together: Vec<Vec<f32>> = embedder
        .embed_tokens(&tokens)
        .into_iter()
        .map(|r| r.unwrap().0)
        .collect();
    let reversed: Vec<Vec<f32>> = {
        let rev: Vec<_> = tokens.iter().rev().cloned().collect();
        let mut v: Vec<Vec<f32>> = embedder
            .embed_tokens(&rev)
            .into_iter()
            .map(|r| r.unwrap().0)
            .collect();
        v.reverse();
        v
    };
    for (i, t) in texts.iter().enumerate() {
        let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        let worst = |a: &[f32], b: &[f32]| {
            a.iter()
                .zip(b)
                .map(|(x, y)| (x - y).abs())
                .fold(0.0f32, f32::max)
        };
        println!(
            "{t}: together {:.2e}, reversed {:.2e}",
            worst(&alone[i], &together[i]),
            worst(&alone[i], &reversed[i])
        );
        assert_eq!(
            bits(&together[i]),
            bits(&alone[i]),
            "{t}: alone and together"
        );
        assert_eq!(
            bits(&reversed[i]),
            bits(&alone[i]),
            "{t}: alone and in another order"
        );
    }
}
