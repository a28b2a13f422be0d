//! The HTTP side: the client (rustls with ring), the API key from the environment, one JSON
//! exchange, and how its errors read.

use crate::llm::backend::dialect;
use crate::llm::backend::{BackendError, ErrorKind};
use crate::llm::config::OpenAiConfig;
use serde_json::Value;
use std::time::Duration;

/// Installs rustls' ring crypto provider for the process (once; a provider already installed,
/// by us or anyone, is kept).
pub fn install_crypto_provider() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        if rustls::crypto::CryptoProvider::get_default().is_none() {
            // Err means another thread installed one meanwhile: that one serves as well.
            let _ = rustls::crypto::ring::default_provider().install_default();
        }
    });
}

/// The HTTP client: HTTP and HTTPS (rustls with ring, the system's root certificates). On a
/// machine with no root certificates at all it still builds, for plain `http://` (an `https://`
/// server is then refused as unknown), and says so once.
pub fn http_client(
    connect_timeout: Duration,
    ca_file: Option<&std::path::Path>,
) -> Result<reqwest::Client, String> {
    install_crypto_provider();
    // A certificate of the config's own, trusted beside the system's.
    let extra = match ca_file {
        None => Vec::new(),
        Some(p) => {
            let pem = crate::data::read_bounded(p, 1024 * 1024)
                .map_err(|e| format!("ca_file {}: {e}", p.display()))?;
            reqwest::Certificate::from_pem_bundle(pem.as_bytes())
                .map_err(|e| format!("ca_file {}: not a PEM certificate: {e}", p.display()))?
        }
    };
    let builder = || {
        reqwest::Client::builder()
            .connect_timeout(connect_timeout)
            .tls_certs_merge(extra.clone())
    };
    match builder().build() {
        Ok(c) => Ok(c),
        Err(e) => {
            static SAID: std::sync::Once = std::sync::Once::new();
            SAID.call_once(|| {
                eprintln!(
                    "llm: no root certificates on this system ({}): https:// servers cannot be verified; install ca-certificates (./scripts/setup.sh does) or set SSL_CERT_FILE. http:// servers work.",
                    error_chain(&e)
                )
            });
            builder()
                .tls_certs_only(Vec::new())
                .build()
                .map_err(|e| format!("cannot build the HTTP client: {e}"))
        }
    }
}

/// Reads the API key from the variable the config names: the key, or why there is none.
pub fn api_key(cfg: &OpenAiConfig) -> (Option<String>, Option<String>) {
    match &cfg.api_key_env {
        None => (None, None),
        Some(var) => match std::env::var(var) {
            Ok(k) if !k.trim().is_empty() => (Some(k.trim().to_string()), None),
            _ => (
                None,
                Some(format!("fatal: the API key variable ${var} is not set")),
            ),
        },
    }
}

/// An HTTP exchange that did not give JSON.
#[derive(Debug)]
pub enum HttpError {
    /// No answer: refused, reset, timed out.
    Transport(String),
    /// An error status and the body.
    Status(u16, String),
    /// A 2xx whose body is not JSON.
    NotJson(String),
}

/// The largest answer body read from a server (a model list, a chat answer, an embedding of
/// per-token vectors for a long text).
pub const MAX_ANSWER_BYTES: usize = 16 * 1024 * 1024;

/// Posts (or, with no body, gets) and reads JSON.
pub async fn send(
    client: &reqwest::Client,
    url: &str,
    key: Option<&str>,
    body: Option<&Value>,
) -> Result<Value, HttpError> {
    let mut req = match body {
        Some(b) => client.post(url).json(b),
        None => client.get(url),
    };
    if let Some(k) = key {
        req = req.bearer_auth(k);
    }
    let mut resp = req
        .send()
        .await
        .map_err(|e| HttpError::Transport(format!("{url}: {}", with_tls_hint(error_chain(&e)))))?;
    let status = resp.status();
    // Read up to a limit: an answer of a few lines, or an embedding, is kilobytes; a server
    // that sends more is broken or hostile, and is not read into memory.
    let too_big = || {
        HttpError::Transport(format!(
            "{url}: the answer is larger than {MAX_ANSWER_BYTES} bytes; not read"
        ))
    };
    if resp
        .content_length()
        .is_some_and(|n| n > MAX_ANSWER_BYTES as u64)
    {
        return Err(too_big());
    }
    let mut bytes = Vec::new();
    while let Some(chunk) = resp
        .chunk()
        .await
        .map_err(|e| HttpError::Transport(format!("{url}: {}", error_chain(&e))))?
    {
        if bytes.len() + chunk.len() > MAX_ANSWER_BYTES {
            return Err(too_big());
        }
        bytes.extend_from_slice(&chunk);
    }
    if !status.is_success() {
        return Err(HttpError::Status(
            status.as_u16(),
            String::from_utf8_lossy(&bytes).to_string(),
        ));
    }
    serde_json::from_slice(&bytes)
        .map_err(|e| HttpError::NotJson(format!("{url}: answer is not JSON: {e}")))
}

/// A certificate refused by the handshake, said with the way out.
fn with_tls_hint(chain: String) -> String {
    if chain.contains("UnknownIssuer") || chain.contains("invalid peer certificate") {
        format!(
            "{chain} — the server's certificate is not signed by an authority this machine trusts: name its certificate (PEM) in the backend's ca_file, or add it to the system's store"
        )
    } else if chain.contains("NotValidForName") {
        format!(
            "{chain} — the server's certificate is not for this host name: use the name it was made for in the endpoint's URL"
        )
    } else {
        chain
    }
}

/// An error with its causes (reqwest's own text hides the TLS or connection reason).
pub fn error_chain(e: &dyn std::error::Error) -> String {
    let mut s = e.to_string();
    let mut src = e.source();
    while let Some(c) = src {
        let t = c.to_string();
        if !s.contains(&t) {
            s.push_str(": ");
            s.push_str(&t);
        }
        src = c.source();
    }
    s
}

pub(super) fn status_message(url: &str, status: u16, body: &str) -> String {
    let hint = if status == 401 {
        " (check the API key variable named in the config)"
    } else {
        ""
    };
    format!("{url}: HTTP {status}{hint}: {}", dialect::short(body))
}

pub(super) fn transport_error(e: HttpError) -> BackendError {
    match e {
        HttpError::Transport(m) => BackendError::new(ErrorKind::Http, m),
        HttpError::NotJson(m) => BackendError::new(ErrorKind::Malformed, m),
        HttpError::Status(s, b) => {
            BackendError::new(ErrorKind::Http, format!("HTTP {s}: {}", dialect::short(&b)))
        }
    }
}
