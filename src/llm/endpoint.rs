//! An OpenAI-compatible server's address as a config gives it: what is wrong with one (said
//! before anything starts), and an address as it may be shown (without a user name or password,
//! which are never written or printed).

/// What is wrong with an endpoint, in words that say the fix; `None` when it is usable. An
/// address with a user name or password in it is refused (it would be written with the config
/// into every save and lab folder, and printed) and never echoed.
pub fn problem(e: &str) -> Option<String> {
    if has_userinfo(e) {
        return Some(format!(
            "{:?}: an endpoint with a user name or password in it is refused (it would be written into saves and reports); give the server's key with `api_key_env`",
            without_userinfo(e)
        ));
    }
    let l = e.to_ascii_lowercase();
    if !(l.starts_with("http://") || l.starts_with("https://")) {
        return Some(format!(
            "{e:?}: an endpoint is an http:// or https:// URL, such as \"http://127.0.0.1:8080/v1\""
        ));
    }
    // The base URL ends in /v1 (or another API root); a bare host is the usual slip, and the
    // server would answer 404 to every request.
    let rest = e.split_once("://").map_or(e, |(_, r)| r);
    if !rest.trim_end_matches('/').contains('/') {
        return Some(format!(
            "{e:?} has no path: the base URL of an OpenAI-compatible server ends in /v1, such as \"{}/v1\"",
            e.trim_end_matches('/')
        ));
    }
    None
}

/// Whether a URL carries a user name or password (`http://user:pw@host/…`).
pub fn has_userinfo(url: &str) -> bool {
    let rest = url.split_once("://").map_or(url, |(_, r)| r);
    let authority = rest.split(['/', '?', '#']).next().unwrap_or("");
    authority.contains('@')
}

/// A URL without its user name and password (`http://…@host/v1`), for messages.
pub fn without_userinfo(url: &str) -> String {
    let (scheme, rest) = url.split_once("://").unwrap_or(("", url));
    let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let (authority, path) = rest.split_at(end);
    let host = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    let shown = if host.len() < authority.len() {
        format!("…@{host}")
    } else {
        host.to_string()
    };
    if scheme.is_empty() {
        format!("{shown}{path}")
    } else {
        format!("{scheme}://{shown}{path}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_user_name_or_password_is_found_and_never_shown() {
        assert!(has_userinfo("http://user:pw@127.0.0.1:8080/v1"));
        assert!(has_userinfo("https://token@host/v1"));
        assert!(!has_userinfo("http://127.0.0.1:8080/v1?who=a@b"));
        assert_eq!(
            without_userinfo("http://user:pw@127.0.0.1:8080/v1"),
            "http://…@127.0.0.1:8080/v1"
        );
        assert_eq!(without_userinfo("http://host/v1"), "http://host/v1");
        let m = problem("http://user:pw@127.0.0.1:8080/v1").unwrap();
        assert!(!m.contains("pw") && !m.contains("user:"), "{m}");
        assert!(problem("ftp://127.0.0.1/v1").unwrap().contains("http://"));
        assert!(problem("http://127.0.0.1:8080").unwrap().contains("/v1"));
        assert_eq!(problem("http://127.0.0.1:8080/v1"), None);
    }
}
