//! The loopback callback: only a request carrying its consent's `state` can end a consent.

use super::*;

/// What a callback request ended the consent with.
pub(super) enum Callback {
    Code(String),
    Refused(String),
}

/// Serves the loopback until the callback arrives or the deadline passes. Connections are
/// served concurrently (a preconnected idle one must not block the real callback); requests
/// other than the callback (another path, or another `state`) are answered and the wait goes on.
pub(super) async fn wait_for_callback(
    listener: &TcpListener,
    state: &str,
    scope: MailScope,
    deadline: Instant,
    clock: &(dyn Clock + Sync),
) -> Result<String, BootstrapError> {
    let name = scope.kind();
    let state: Arc<str> = state.into();
    let (sender, mut callbacks) = mpsc::channel(4);
    // Dropped on return, which aborts whatever connections are still open.
    let mut connections = JoinSet::new();
    let mut tick = tokio::time::interval(CLOCK_POLL);
    loop {
        expired(clock, deadline, name)?;
        tokio::select! {
            accepted = listener.accept() => {
                if let Ok((stream, _)) = accepted {
                    connections.spawn(serve(stream, state.clone(), scope, sender.clone()));
                }
            }
            Some(callback) = callbacks.recv() => {
                return match callback {
                    Callback::Code(code) => Ok(code),
                    Callback::Refused(reason) => Err(BootstrapError::Incomplete(reason)),
                };
            }
            _ = tick.tick() => {}
        }
        while connections.try_join_next().is_some() {}
    }
}

pub(super) async fn serve(mut stream: TcpStream, state: Arc<str>, scope: MailScope, sender: mpsc::Sender<Callback>) {
    let Ok(Some(head)) = tokio::time::timeout(CALLBACK_READ_TIMEOUT, read_head(&mut stream)).await else {
        return;
    };
    let (status, page, callback) = classify(&head, &state, scope);
    let body = format!(
        "<!doctype html><html><head><meta charset=\"utf-8\"><title>Steward mail bootstrap</title></head>\
         <body><p>{page}</p></body></html>\n"
    );
    let answer = format!(
        "HTTP/1.1 {status}\r\nContent-Type: text/html; charset=utf-8\r\nContent-Length: {}\r\n\
         Cache-Control: no-store\r\nReferrer-Policy: no-referrer\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    // The page is answered before the consent moves on, so the browser is not left hanging.
    let _ = stream.write_all(answer.as_bytes()).await;
    let _ = stream.shutdown().await;
    if let Some(callback) = callback {
        let _ = sender.send(callback).await;
    }
}

/// The request line and headers, or `None` when the peer sent no complete head.
pub(super) async fn read_head(stream: &mut TcpStream) -> Option<String> {
    let mut head = Vec::new();
    let mut chunk = [0u8; 2048];
    loop {
        let read = stream.read(&mut chunk).await.ok()?;
        if read == 0 {
            return None;
        }
        head.extend_from_slice(&chunk[..read]);
        if head.windows(4).any(|window| window == b"\r\n\r\n") || head.windows(2).any(|window| window == b"\n\n") {
            return Some(String::from_utf8_lossy(&head).into_owned());
        }
        if head.len() > REQUEST_HEAD_MAX_BYTES {
            return None;
        }
    }
}

/// The status line, the page text and, for the callback itself, what it ends the consent with.
/// The page never echoes the request.
pub(super) fn classify(head: &str, expected_state: &str, scope: MailScope) -> (&'static str, String, Option<Callback>) {
    let name = scope.kind();
    let not_callback = |status| (status, "This is not a consent callback.".to_owned(), None);
    let mut request_line = head.lines().next().unwrap_or_default().split(' ');
    let (Some(method), Some(target)) = (request_line.next(), request_line.next()) else {
        return not_callback("400 Bad Request");
    };
    if method != "GET" {
        return not_callback("405 Method Not Allowed");
    }
    let Some(url) = target
        .starts_with('/')
        .then(|| Url::parse(&format!("http://127.0.0.1{target}")).ok())
        .flatten()
    else {
        return not_callback("400 Bad Request");
    };
    if url.path() != "/" {
        return not_callback("404 Not Found");
    }
    let first = |key: &str| {
        url.query_pairs()
            .find(|(found, _)| found == key)
            .map(|(_, value)| value.into_owned())
    };
    let (code, state, error) = (first("code"), first("state"), first("error"));
    if code.is_none() && state.is_none() && error.is_none() {
        return not_callback("404 Not Found");
    }
    // Only a request carrying this consent's state can end it: anything else (a page or a local
    // process guessing at the port) is answered and the wait goes on.
    if state.as_deref() != Some(expected_state) {
        return (
            "400 Bad Request",
            "This is not the callback of the consent in progress.".to_owned(),
            None,
        );
    }
    let refused = |reason: String| {
        (
            "200 OK",
            format!(
                "The {name} consent did not complete. You can close this window; the terminal says what to do next."
            ),
            Some(Callback::Refused(reason)),
        )
    };
    if let Some(error) = error {
        let shown = if plain_code(&error) { error } else { "an error".into() };
        return refused(format!("the provider answered the {name} consent with {shown}"));
    }
    match code.filter(|code| !code.is_empty()) {
        None => refused(format!("the {name} callback carried no authorization code")),
        Some(code) => (
            "200 OK",
            format!("Steward received the {name} consent. You can close this window and return to the terminal."),
            Some(Callback::Code(code)),
        ),
    }
}
