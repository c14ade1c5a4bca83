//! The stand-in's routes: the OAuth token grant and each Gmail REST call, every one checked
//! against the scopes Google documents for it.

use super::*;

pub(super) async fn token(State(inner): State<Shared>, Form(form): Form<HashMap<String, String>>) -> Response {
    let mut inner = lock(&inner);
    inner.token_requests += 1;
    let field = |name: &str| form.get(name).map(String::as_str).unwrap_or_default();
    if field("grant_type") != "refresh_token" || field("client_id").is_empty() || field("client_secret").is_empty() {
        return (StatusCode::BAD_REQUEST, Json(json!({ "error": "invalid_request" }))).into_response();
    }
    let Some(grant) = inner.grants.get(field("refresh_token")).cloned() else {
        return (
            StatusCode::BAD_REQUEST,
            Json(json!({ "error": "invalid_grant", "error_description": "Token has been expired or revoked." })),
        )
            .into_response();
    };
    let access = format!("access-{}", uuid::Uuid::new_v4().simple());
    let scope = grant.1.clone();
    inner.access.insert(access.clone(), grant);
    Json(json!({ "access_token": access, "expires_in": 3599, "scope": scope, "token_type": "Bearer" })).into_response()
}

pub(super) fn throttled(inner: &mut Inner) -> Option<Response> {
    if inner.read_throttles > 0 {
        inner.read_throttles -= 1;
        return Some(error(
            StatusCode::TOO_MANY_REQUESTS,
            "Too many concurrent requests for user.",
        ));
    }
    None
}

impl Inner {
    /// Starts a read: a scripted 429 first, then the bearer token's mailbox, which must hold the
    /// read-only or the modify scope.
    pub(super) fn read(&mut self, headers: &HeaderMap, call: &str) -> Result<String, Box<Response>> {
        if let Some(response) = throttled(self) {
            return Err(Box::new(response));
        }
        self.authorize(headers, &[READONLY, MODIFY], call)
            .map_err(|refused| Box::new(refused.into_response()))
    }
}

pub(super) async fn labels(State(inner): State<Shared>, headers: HeaderMap) -> Response {
    let mut inner = lock(&inner);
    if let Err(response) = inner.read(&headers, "GET labels") {
        return *response;
    }
    let labels: Vec<Value> = ["INBOX", "SENT", "DRAFT", "SPAM", "TRASH", "UNREAD"]
        .iter()
        .map(|id| json!({ "id": id, "name": id, "type": "system" }))
        .chain(std::iter::once(
            json!({ "id": "Label_1", "name": "Receipts", "type": "user" }),
        ))
        .collect();
    Json(json!({ "labels": labels })).into_response()
}

/// Whether `message` matches one search term of the provider's query language (the subset the
/// service uses: `in:`, `label:`, `subject:`, `rfc822msgid:`, `from:`, `to:`, `after:` and
/// `before:` in Unix seconds, and plain words).
pub(super) fn matches(message: &StoredMessage, term: &str) -> bool {
    let contains = |haystack: &str, needle: &str| haystack.to_lowercase().contains(&needle.to_lowercase());
    let has_label = |label: &str| message.label_ids.iter().any(|l| l.eq_ignore_ascii_case(label));
    match term.split_once(':') {
        Some(("in", folder)) => match folder.to_lowercase().as_str() {
            "drafts" => has_label("DRAFT"),
            "sent" => has_label("SENT"),
            "inbox" => has_label("INBOX"),
            "anywhere" => true,
            other => has_label(other),
        },
        Some(("label", label)) => has_label(label),
        Some(("subject", words)) => contains(&message.subject, words),
        Some(("rfc822msgid", id)) => message.message_id.trim_matches(['<', '>']) == id.trim_matches(['<', '>']),
        Some(("from", who)) => contains(&message.from, who),
        Some(("to", who)) => message.to.iter().any(|to| contains(to, who)),
        Some(("after", seconds)) => seconds.parse().is_ok_and(|after: i64| message.internal_date >= after),
        Some(("before", seconds)) => seconds.parse().is_ok_and(|before: i64| message.internal_date < before),
        _ => contains(&message.subject, term) || contains(&message.body, term),
    }
}

/// Splits a query into terms, keeping quoted phrases (`subject:"a b"`) whole.
pub(super) fn terms(query: &str) -> Vec<String> {
    let mut terms = Vec::new();
    let mut current = String::new();
    let mut quoted = false;
    for c in query.chars() {
        match c {
            '"' => quoted = !quoted,
            c if c.is_whitespace() && !quoted => {
                if !current.is_empty() {
                    terms.push(std::mem::take(&mut current));
                }
            }
            c => current.push(c),
        }
    }
    if !current.is_empty() {
        terms.push(current);
    }
    terms
}

/// The messages of a mailbox a list query finds, newest first: `q`'s terms, with drafts found
/// only when a folder is named, and Spam and Trash only with `includeSpamTrash`, `in:anywhere`,
/// or by their own name.
pub(super) fn search<'a>(messages: &'a [StoredMessage], query: &[(String, String)]) -> Vec<&'a StoredMessage> {
    let parameter = |name: &str| query.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str());
    let spam_and_trash = parameter("includeSpamTrash") == Some("true");
    let terms = terms(parameter("q").unwrap_or_default());
    let folder_named = terms
        .iter()
        .any(|term| term.starts_with("in:") || term.starts_with("label:"));
    let anywhere = terms.iter().any(|term| {
        let term = term.to_ascii_lowercase();
        ["in:anywhere", "in:spam", "in:trash", "label:spam", "label:trash"].contains(&term.as_str())
    });
    messages
        .iter()
        .rev()
        .filter(|message| {
            let has = |label: &str| message.label_ids.iter().any(|l| l == label);
            let hidden =
                (has("DRAFT") && !folder_named) || ((has("SPAM") || has("TRASH")) && !(spam_and_trash || anywhere));
            !hidden && terms.iter().all(|term| matches(message, term))
        })
        .collect()
}

/// Puts one page of `items` under `member` in `answer` (none when the page is empty), with the
/// next page's token when more follow: `maxResults` (default 100) per page, `pageToken` an
/// offset. Whether the page had anything.
pub(super) fn paged(answer: &mut Value, member: &str, items: &[Value], query: &[(String, String)]) -> bool {
    let parameter = |name: &str| query.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str());
    let max: usize = parameter("maxResults").and_then(|v| v.parse().ok()).unwrap_or(100);
    let offset: usize = parameter("pageToken").and_then(|v| v.parse().ok()).unwrap_or(0);
    let page: Vec<&Value> = items.iter().skip(offset).take(max).collect();
    if page.is_empty() {
        return false;
    }
    answer[member] = json!(page);
    if offset + page.len() < items.len() {
        answer["nextPageToken"] = json!((offset + page.len()).to_string());
    }
    true
}

/// `users.messages.list`: ids and thread ids, newest first, paged.
pub(super) async fn messages(
    State(inner): State<Shared>,
    headers: HeaderMap,
    Query(query): Query<Vec<(String, String)>>,
) -> Response {
    let mut inner = lock(&inner);
    let mailbox = match inner.read(&headers, "GET messages.list") {
        Ok(mailbox) => mailbox,
        Err(response) => return *response,
    };
    let found: Vec<Value> = search(&inner.mailboxes[&mailbox].messages, &query)
        .into_iter()
        .map(|message| json!({ "id": message.id, "threadId": message.thread_id }))
        .collect();
    let mut answer = json!({ "resultSizeEstimate": found.len() });
    paged(&mut answer, "messages", &found, &query);
    Json(answer).into_response()
}

pub(super) async fn threads(
    State(inner): State<Shared>,
    headers: HeaderMap,
    Query(query): Query<Vec<(String, String)>>,
) -> Response {
    let mut inner = lock(&inner);
    let mailbox = match inner.read(&headers, "GET threads") {
        Ok(mailbox) => mailbox,
        Err(response) => return *response,
    };
    let mut seen = Vec::new();
    let mut found = Vec::new();
    for message in search(&inner.mailboxes[&mailbox].messages, &query) {
        if seen.contains(&message.thread_id) {
            continue;
        }
        seen.push(message.thread_id.clone());
        found.push(
            json!({ "id": message.thread_id, "snippet": message.body.chars().take(100).collect::<String>(),
                           "historyId": "1" }),
        );
    }
    let mut answer = json!({ "resultSizeEstimate": found.len() });
    if !paged(&mut answer, "threads", &found, &query) {
        answer["resultSizeEstimate"] = json!(0);
    }
    Json(answer).into_response()
}

pub(super) async fn thread(
    State(inner): State<Shared>,
    headers: HeaderMap,
    Path(id): Path<String>,
    Query(query): Query<Vec<(String, String)>>,
) -> Response {
    // `format=metadata` with `metadataHeaders` answers with those headers only.
    let wanted: Vec<&str> = query
        .iter()
        .filter(|(k, _)| k == "metadataHeaders")
        .map(|(_, v)| v.as_str())
        .collect();
    let metadata = query.iter().any(|(k, v)| k == "format" && v == "metadata");
    let mut inner = lock(&inner);
    let mailbox = match inner.authorize(&headers, &[READONLY, MODIFY], "GET threads/{id}") {
        Ok(mailbox) => mailbox,
        Err(refused) => return refused.into_response(),
    };
    let messages: Vec<Value> = inner.mailboxes[&mailbox]
        .messages
        .iter()
        .filter(|message| message.thread_id == id)
        .map(|message| {
            let all = [
                ("From".to_owned(), message.from.clone()),
                ("To".to_owned(), message.to.join(", ")),
                ("Subject".to_owned(), message.subject.clone()),
                ("Date".to_owned(), rfc2822(message.internal_date)),
                ("Message-ID".to_owned(), format!("<{}>", message.message_id)),
            ]
            .into_iter()
            .chain(message.extra_headers.iter().cloned());
            let shown: Vec<Value> = all
                .filter(|(name, _)| {
                    !metadata || wanted.is_empty() || wanted.iter().any(|w| w.eq_ignore_ascii_case(name))
                })
                .map(|(name, value)| json!({ "name": name, "value": value }))
                .collect();
            json!({
                "id": message.id, "threadId": message.thread_id, "labelIds": message.label_ids,
                "snippet": message.body.chars().take(100).collect::<String>(),
                "internalDate": (message.internal_date * 1000).to_string(),
                "payload": { "headers": shown }
            })
        })
        .collect();
    if messages.is_empty() {
        return error(StatusCode::NOT_FOUND, "Requested entity was not found.");
    }
    Json(json!({ "id": id, "historyId": "1", "messages": messages })).into_response()
}

/// Parses a base64url RFC 5322 `raw` into a stored message of `mailbox`.
pub(super) fn parse_raw(inner: &mut Inner, mailbox: &str, raw: &str, label: &str) -> Result<StoredMessage, Refused> {
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(raw.trim_end_matches('='))
        .map_err(|_| Refused(StatusCode::BAD_REQUEST, "Invalid value for ByteString"))?;
    let parsed = mail_parser::MessageParser::default()
        .parse(&bytes)
        .ok_or(Refused(StatusCode::BAD_REQUEST, "Invalid RFC 5322 message"))?;
    let to: Vec<String> = parsed
        .to()
        .map(|to| to.iter().filter_map(|a| a.address()).map(str::to_owned).collect())
        .unwrap_or_default();
    if to.is_empty() {
        return Err(Refused(StatusCode::BAD_REQUEST, "Invalid To header"));
    }
    let extra_headers = parsed
        .headers()
        .iter()
        .filter(|header| {
            let name = header.name().to_ascii_lowercase();
            name.starts_with("x-") || name == "in-reply-to" || name == "references"
        })
        .filter_map(|header| {
            parsed
                .header_raw(header.name())
                .map(|value| (header.name().to_owned(), value.trim().to_owned()))
        })
        .collect();
    let id = inner.id();
    Ok(StoredMessage {
        id: id.clone(),
        thread_id: id,
        label_ids: vec![label.to_owned()],
        message_id: parsed.message_id().unwrap_or_default().to_owned(),
        internal_date: unix_now(),
        extra_headers,
        raw: None,
        subject: parsed.subject().unwrap_or_default().to_owned(),
        from: inner.mailboxes[mailbox].address.clone(),
        to,
        body: parsed
            .body_text(0)
            .map(|text| text.replace("\r\n", "\n").trim_end().to_owned())
            .unwrap_or_default(),
    })
}

pub(super) async fn create_draft(State(inner): State<Shared>, headers: HeaderMap, Json(body): Json<Value>) -> Response {
    let fault = {
        let mut inner = lock(&inner);
        let mailbox = match inner.authorize(&headers, &[MODIFY], "POST drafts") {
            Ok(mailbox) => mailbox,
            Err(refused) => return refused.into_response(),
        };
        let Some(raw) = body["message"]["raw"].as_str() else {
            return error(StatusCode::BAD_REQUEST, "Missing draft message");
        };
        let message = match parse_raw(&mut inner, &mailbox, raw, "DRAFT") {
            Ok(message) => message,
            Err(refused) => return refused.into_response(),
        };
        let draft_id = format!("r{}", inner.id());
        let answer = json!({ "id": draft_id, "message": { "id": message.id, "threadId": message.thread_id,
                                                          "labelIds": ["DRAFT"] } });
        let fault = inner.draft_fault.take();
        if fault == Some(SendFault::DropUnsent) {
            drop(inner);
            std::panic::resume_unwind(Box::new("connection dropped on purpose"));
        }
        let stored = inner.mailboxes.get_mut(&mailbox).expect("mailbox");
        stored.drafts.push((draft_id, message.id.clone()));
        stored.add(message);
        match fault {
            None => return Json(answer).into_response(),
            Some(fault) => fault,
        }
    };
    dropped(fault).await
}

/// Ends a request after a scripted fault: never answers, or closes the connection unanswered.
pub(super) async fn dropped(fault: SendFault) -> Response {
    match fault {
        SendFault::Hold => std::future::pending().await,
        // Unwinding the connection's task closes it without an answer (and without the panic
        // hook's report).
        SendFault::DropConnection | SendFault::DropUnsent => {
            std::panic::resume_unwind(Box::new("connection dropped on purpose"))
        }
    }
}

pub(super) async fn send(State(inner): State<Shared>, headers: HeaderMap, Json(body): Json<Value>) -> Response {
    let fault = {
        let mut inner = lock(&inner);
        let mailbox = match inner.authorize(&headers, &[SEND, MODIFY], "POST messages/send") {
            Ok(mailbox) => mailbox,
            Err(refused) => return refused.into_response(),
        };
        let Some(raw) = body["raw"].as_str() else {
            return error(
                StatusCode::BAD_REQUEST,
                "'raw' RFC822 payload message string is required",
            );
        };
        if inner.send_fault == Some(SendFault::DropUnsent) {
            inner.send_fault = None;
            drop(inner);
            std::panic::resume_unwind(Box::new("connection dropped on purpose"));
        }
        let mut message = match parse_raw(&mut inner, &mailbox, raw, "SENT") {
            Ok(message) => message,
            Err(refused) => return refused.into_response(),
        };
        // A reply joins the thread it names, which must be the sender's.
        if let Some(thread) = body["threadId"].as_str() {
            if !inner.mailboxes[&mailbox].messages.iter().any(|m| m.thread_id == thread) {
                return error(StatusCode::NOT_FOUND, "Requested entity was not found.");
            }
            message.thread_id = thread.to_owned();
        }
        // The provider gives a sent message a Message-ID of its own.
        if !inner.keep_sent_message_ids {
            message.message_id = format!("CA+{}@mail.gmail.com", message.id);
        }
        // Delivered to every mailbox of a recipient, as an incoming message.
        let recipients: Vec<String> = inner
            .mailboxes
            .iter()
            .filter(|(_, mailbox)| message.to.contains(&mailbox.address))
            .map(|(name, _)| name.clone())
            .collect();
        for name in recipients {
            let id = inner.id();
            let copy = StoredMessage {
                id: id.clone(),
                thread_id: id,
                label_ids: vec!["INBOX".into(), "UNREAD".into()],
                ..message.clone()
            };
            let target = inner.mailboxes.get_mut(&name).expect("mailbox");
            target.add(copy);
        }
        let answer = json!({ "id": message.id, "threadId": message.thread_id, "labelIds": ["SENT"] });
        let sender = inner.mailboxes.get_mut(&mailbox).expect("mailbox");
        sender.add(message);
        match inner.send_fault.take() {
            None => return Json(answer).into_response(),
            Some(fault) => fault,
        }
    };
    dropped(fault).await
}

/// Applies a label change to every message of `thread`, recording each in the history; whether
/// the thread exists.
pub(super) fn relabel_thread(mailbox: &mut Mailbox, thread: &str, add: &[&str], remove: &[&str]) -> bool {
    let indexes: Vec<usize> = (0..mailbox.messages.len())
        .filter(|&index| mailbox.messages[index].thread_id == thread)
        .collect();
    for &index in &indexes {
        let message = &mut mailbox.messages[index];
        let added: Vec<String> = add
            .iter()
            .filter(|label| !message.label_ids.iter().any(|l| l == *label))
            .map(|label| (*label).to_owned())
            .collect();
        let removed: Vec<String> = remove
            .iter()
            .filter(|label| message.label_ids.iter().any(|l| l == *label))
            .map(|label| (*label).to_owned())
            .collect();
        message.label_ids.extend(added.iter().cloned());
        message.label_ids.retain(|label| !removed.contains(label));
        let message = message.clone();
        if !added.is_empty() {
            mailbox.record("labelsAdded", &message, &added);
        }
        if !removed.is_empty() {
            mailbox.record("labelsRemoved", &message, &removed);
        }
    }
    !indexes.is_empty()
}

/// A stored message as RFC 5322 bytes: as delivered, or written from its fields.
pub(super) fn rfc5322(message: &StoredMessage) -> Vec<u8> {
    if let Some(raw) = &message.raw {
        return raw.clone();
    }
    let mut builder = mail_builder::MessageBuilder::new()
        .from(message.from.as_str())
        .to(message.to.iter().map(String::as_str).collect::<Vec<_>>())
        .subject(message.subject.as_str())
        .message_id(message.message_id.trim_matches(['<', '>']))
        .date(message.internal_date)
        .text_body(message.body.as_str());
    for (name, value) in &message.extra_headers {
        builder = builder.header(name.clone(), mail_builder::headers::raw::Raw::new(value.clone()));
    }
    builder.write_to_vec().unwrap_or_default()
}

pub(super) async fn profile(State(inner): State<Shared>, headers: HeaderMap) -> Response {
    let mut inner = lock(&inner);
    let mailbox = match inner.read(&headers, "GET profile") {
        Ok(mailbox) => mailbox,
        Err(response) => return *response,
    };
    let Some(mailbox) = inner.mailboxes.get(&mailbox) else {
        return error(StatusCode::NOT_FOUND, "Requested entity was not found.");
    };
    let threads: std::collections::HashSet<&str> = mailbox
        .messages
        .iter()
        .map(|message| message.thread_id.as_str())
        .collect();
    Json(json!({
        "emailAddress": mailbox.address,
        "messagesTotal": mailbox.messages.len(),
        "threadsTotal": threads.len(),
        "historyId": mailbox.history_id.to_string(),
    }))
    .into_response()
}

pub(super) async fn history(
    State(inner): State<Shared>,
    headers: HeaderMap,
    Query(query): Query<Vec<(String, String)>>,
) -> Response {
    let mut inner = lock(&inner);
    let mailbox = match inner.read(&headers, "GET history") {
        Ok(mailbox) => mailbox,
        Err(response) => return *response,
    };
    let parameter = |name: &str| query.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str());
    let Some(start) = parameter("startHistoryId").and_then(|start| start.parse::<u64>().ok()) else {
        return error(StatusCode::BAD_REQUEST, "Invalid startHistoryId");
    };
    let Some(mailbox) = inner.mailboxes.get(&mailbox) else {
        return error(StatusCode::NOT_FOUND, "Requested entity was not found.");
    };
    if start < mailbox.history_floor {
        return error(StatusCode::NOT_FOUND, "Requested entity was not found.");
    }
    let newer: Vec<Value> = mailbox
        .history
        .iter()
        .filter(|record| record["id"].as_str().and_then(|id| id.parse::<u64>().ok()) > Some(start))
        .cloned()
        .collect();
    let mut body = json!({ "historyId": mailbox.history_id.to_string() });
    paged(&mut body, "history", &newer, &query);
    Json(body).into_response()
}

pub(super) async fn message_raw(
    State(inner): State<Shared>,
    headers: HeaderMap,
    Path(id): Path<String>,
    Query(query): Query<Vec<(String, String)>>,
) -> Response {
    let mut inner = lock(&inner);
    let mailbox = match inner.read(&headers, "GET messages") {
        Ok(mailbox) => mailbox,
        Err(response) => return *response,
    };
    if !query.iter().any(|(k, v)| k == "format" && v == "raw") {
        return error(StatusCode::BAD_REQUEST, "this stand-in answers format=raw only");
    }
    let Some(message) = inner
        .mailboxes
        .get(&mailbox)
        .and_then(|mailbox| mailbox.messages.iter().find(|message| message.id == id))
    else {
        return error(StatusCode::NOT_FOUND, "Requested entity was not found.");
    };
    let raw = base64::engine::general_purpose::URL_SAFE.encode(rfc5322(message));
    Json(json!({
        "id": message.id,
        "threadId": message.thread_id,
        "labelIds": message.label_ids,
        "internalDate": (message.internal_date * 1000).to_string(),
        "raw": raw,
    }))
    .into_response()
}

pub(super) async fn modify_thread(
    State(inner): State<Shared>,
    headers: HeaderMap,
    Path(id): Path<String>,
    Json(body): Json<Value>,
) -> Response {
    let fault = {
        let mut inner = lock(&inner);
        let mailbox = match inner.authorize(&headers, &[MODIFY], "POST threads.modify") {
            Ok(mailbox) => mailbox,
            Err(refused) => return refused.into_response(),
        };
        let fault = inner.modify_fault.take();
        if fault == Some(SendFault::DropUnsent) {
            drop(inner);
            std::panic::resume_unwind(Box::new("connection dropped on purpose"));
        }
        let labels = |name: &str| -> Vec<String> {
            body[name]
                .as_array()
                .map(|labels| labels.iter().filter_map(|l| l.as_str().map(str::to_owned)).collect())
                .unwrap_or_default()
        };
        let (add, remove) = (labels("addLabelIds"), labels("removeLabelIds"));
        let Some(mailbox) = inner.mailboxes.get_mut(&mailbox) else {
            return error(StatusCode::NOT_FOUND, "Requested entity was not found.");
        };
        let add: Vec<&str> = add.iter().map(String::as_str).collect();
        let remove: Vec<&str> = remove.iter().map(String::as_str).collect();
        if !relabel_thread(mailbox, &id, &add, &remove) {
            return error(StatusCode::NOT_FOUND, "Requested entity was not found.");
        }
        let messages: Vec<Value> = mailbox
            .messages
            .iter()
            .filter(|message| message.thread_id == id)
            .map(|message| json!({ "id": message.id, "threadId": message.thread_id, "labelIds": message.label_ids }))
            .collect();
        let answer = json!({ "id": id, "historyId": mailbox.history_id.to_string(), "messages": messages });
        match fault {
            None => return Json(answer).into_response(),
            Some(fault) => fault,
        }
    };
    dropped(fault).await
}
