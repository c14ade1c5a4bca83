//! Gathering: what the async worker reads from projected mail into people (each message once,
//! or again for an import), the sender facts the reader learns, the owner's sent messages it
//! returns for beliefs, and the people a conversation names.

use domain::ids::PrincipalId;
use domain::memory::Statement;
use domain::people::{ContactKind, machine_sender, name_from_address};
use jiff::Timestamp;
use serde::Deserialize;
use sqlx::types::Json;
use uuid::Uuid;

use super::{Contact, People, create, lock};
use crate::{Result, timestamp};

/// A message being gathered, as the fact reader sees it: what the sender wrote (untrusted).
#[derive(Clone, Copy, Debug)]
pub struct Heard<'a> {
    pub sender: &'a str,
    pub subject: &'a str,
    pub body: &'a str,
}

/// What the fact reader learned about a message's sender.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Learned {
    /// A telephone number (stored form).
    Phone(String),
    /// A fact.
    Fact(Statement),
}

/// Gathers `messages` (see [`People::gather`]) on `conn`, under the caller's people lock: what
/// they made is added to `gathered`; the owner's own messages among them are returned.
pub(crate) async fn read_messages(
    conn: &mut sqlx::PgConnection,
    principal: &PrincipalId,
    messages: &[Ungathered],
    read: &(dyn Fn(Heard<'_>) -> Vec<Learned> + Sync),
    gathered: &mut Gathered,
    now: jiff_sqlx::Timestamp,
) -> Result<Vec<SentMessage>> {
    let own: Vec<String> = sqlx::query_scalar("SELECT lower(address) FROM email_accounts WHERE address IS NOT NULL")
        .fetch_all(&mut *conn)
        .await?;
    let mut sent = Vec::new();
    for message in messages {
        if message.skip {
            continue;
        }
        let sender = message.sender.0.as_ref().and_then(address);
        let from_owner = sender.as_ref().is_some_and(|sender| own.contains(sender));
        if from_owner {
            sent.push(SentMessage {
                account_id: message.account_id.clone(),
                thread: message.thread,
                provider_message_id: message.provider_message_id.clone(),
                body: message.body.clone(),
            });
        }
        let parties: Vec<&Party> = if from_owner {
            message.recipients.0.iter().chain(message.copied.0.iter()).collect()
        } else {
            message.sender.0.iter().collect()
        };
        let seen_at = timestamp(message.sent_at);
        for party in parties {
            let Some(value) = address(party) else { continue };
            if own.contains(&value) || machine_sender(&value) {
                continue;
            }
            let email = Contact {
                kind: ContactKind::Email,
                value,
            };
            let (person, created) = match see(conn, principal, &email, seen_name(party), seen_at).await? {
                Some(seen) => seen,
                None => continue,
            };
            gathered.created += usize::from(created);
            if from_owner {
                continue;
            }
            let heard = Heard {
                sender: &email.value,
                subject: &message.subject,
                body: &message.body,
            };
            for learned in read(heard) {
                match learned {
                    Learned::Phone(number) => {
                        let phone = Contact {
                            kind: ContactKind::Phone,
                            value: number,
                        };
                        attach(conn, principal, person, &phone, seen_at).await?;
                    }
                    Learned::Fact(statement) => {
                        let noted = sqlx::query(
                            "INSERT INTO person_facts
                                 (id, person_id, statement, normalized, source, email_thread,
                                  provider_message_id, noted_at)
                             VALUES ($1, $2, $3, $4, 'email', $5, $6, $7)
                             ON CONFLICT (person_id, normalized) DO NOTHING",
                        )
                        .bind(Uuid::now_v7())
                        .bind(person)
                        .bind(statement.as_str())
                        .bind(statement.normalized())
                        .bind(message.thread)
                        .bind(&message.provider_message_id)
                        .bind(now)
                        .execute(&mut *conn)
                        .await?;
                        gathered.facts += noted.rows_affected() as usize;
                    }
                }
            }
        }
    }
    Ok(sent)
}

/// Someone the owner named in a conversation, with how they are related to the owner
/// (`Grace Hopper is the owner's sister`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Mentioned {
    /// Their name (`domain::people::name`'s form).
    pub name: String,
    /// How they relate to the owner (`domain::people::relationship`'s form).
    pub relationship: String,
    /// The belief that named them: kept as their fact, with the run as evidence.
    pub statement: Statement,
}

/// What a gathering did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Gathered {
    /// Messages gathered (each is gathered once).
    pub messages: usize,
    /// People made.
    pub created: usize,
    /// Facts noted.
    pub facts: usize,
}

/// A message the owner sent, gathered: what they wrote is theirs to form beliefs from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SentMessage {
    /// The account it was sent from (what a model request about it is charged to).
    pub account_id: String,
    pub thread: Uuid,
    pub provider_message_id: String,
    pub body: String,
}

/// One gathering: what it did, and the owner's own messages it took.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Batch {
    pub gathered: Gathered,
    pub sent: Vec<SentMessage>,
}

#[derive(Deserialize)]
struct Party {
    name: Option<String>,
    address: String,
}

/// A projected message as gathering reads it.
#[derive(sqlx::FromRow)]
pub(crate) struct Ungathered {
    pub(crate) account_id: String,
    pub(crate) provider_message_id: String,
    pub(crate) thread: Uuid,
    /// `null` when the message named no sender.
    sender: Json<Option<Party>>,
    recipients: Json<Vec<Party>>,
    copied: Json<Vec<Party>>,
    pub(crate) sent_at: jiff_sqlx::Timestamp,
    pub(crate) subject: String,
    pub(crate) body: String,
    pub(crate) skip: bool,
}

/// The stored form of an address seen on a message, `None` when it is not one.
fn address(party: &Party) -> Option<String> {
    domain::people::contact(ContactKind::Email, &party.address).ok()
}

/// A display name seen with an address, when it is a usable one (not the address itself).
fn seen_name(party: &Party) -> Option<String> {
    let name = domain::people::name(party.name.as_deref()?).ok()?;
    (!name.contains('@')).then_some(name)
}

impl People<'_> {
    /// Gathers up to `limit` messages not gathered yet (oldest first) for `principal`: every
    /// correspondent of a message that is neither bulk nor spam becomes (or is seen again on) a
    /// person, unless the owner forgot them. A message from the owner counts its recipients
    /// (and is returned, for beliefs); one to the owner, its sender, and `read` learns what it
    /// can about that sender from what they wrote. Machine senders (`noreply@`…) and the owner's own addresses are never
    /// people. One transaction under the principal's people lock.
    pub async fn gather(
        &self,
        principal: &PrincipalId,
        limit: u32,
        read: &(dyn Fn(Heard<'_>) -> Vec<Learned> + Sync),
    ) -> Result<Batch> {
        let now = self.store.now_sql();
        self.store
            .transaction(
                async |conn| {
                    lock(conn, principal).await?;
                    let messages: Vec<Ungathered> = sqlx::query_as(
                        "SELECT m.account_id, m.provider_message_id, m.thread, m.sender, m.recipients, m.copied,
                                m.sent_at, m.subject, m.body,
                                (t.in_spam OR t.suspected_spam
                                 OR EXISTS (SELECT 1 FROM jsonb_each(m.bulk) b WHERE b.value = 'true'::jsonb)) AS skip
                         FROM email_messages m JOIN email_threads t ON t.id = m.thread
                         WHERE m.people_seen_at IS NULL
                         ORDER BY m.sent_at, m.provider_message_id LIMIT $1
                         FOR UPDATE OF m SKIP LOCKED",
                    )
                    .bind(i64::from(limit))
                    .fetch_all(&mut *conn)
                    .await?;
                    let mut gathered = Gathered {
                        messages: messages.len(),
                        ..Gathered::default()
                    };
                    let sent = read_messages(conn, principal, &messages, read, &mut gathered, now).await?;
                    let accounts: Vec<&str> = messages.iter().map(|message| message.account_id.as_str()).collect();
                    let ids: Vec<&str> = messages
                        .iter()
                        .map(|message| message.provider_message_id.as_str())
                        .collect();
                    sqlx::query(
                        "UPDATE email_messages m SET people_seen_at = $3
                         FROM unnest($1::text[], $2::text[]) AS seen(account_id, provider_message_id)
                         WHERE m.account_id = seen.account_id AND m.provider_message_id = seen.provider_message_id",
                    )
                    .bind(&accounts)
                    .bind(&ids)
                    .bind(now)
                    .execute(&mut *conn)
                    .await?;
                    Ok(Batch { gathered, sent })
                },
                |_| true,
            )
            .await
    }

    /// Keeps the people the owner named in `run` of `session`: each is the person of the same
    /// name (compared as duplicates are) or a new record, not flagged for review since the
    /// owner said it; a relationship is set where the record has none, and the statement is
    /// their fact with the run as evidence. Returns how many records were made. One transaction
    /// under the principal's people lock.
    pub async fn mentioned(
        &self,
        principal: &PrincipalId,
        session: Uuid,
        run: Uuid,
        mentioned: &[Mentioned],
    ) -> Result<usize> {
        let now = self.store.now_sql();
        self.store
            .transaction(
                async |conn| {
                    lock(conn, principal).await?;
                    let mut created = 0;
                    for mention in mentioned {
                        let held: Option<Uuid> = sqlx::query_scalar(
                            "SELECT id FROM people
                             WHERE principal_id = $1
                               AND trim(regexp_replace(lower(name), '[^[:alnum:]]+', ' ', 'g'))
                                   = trim(regexp_replace(lower($2), '[^[:alnum:]]+', ' ', 'g'))
                             ORDER BY position LIMIT 1",
                        )
                        .bind(principal.as_str())
                        .bind(&mention.name)
                        .fetch_optional(&mut *conn)
                        .await?;
                        let person = match held {
                            Some(person) => person,
                            None => {
                                created += 1;
                                create(conn, principal, &mention.name, false, now).await?.id
                            }
                        };
                        sqlx::query(
                            "UPDATE people SET relationship = $2, updated_at = $3
                             WHERE id = $1 AND relationship IS NULL",
                        )
                        .bind(person)
                        .bind(&mention.relationship)
                        .bind(now)
                        .execute(&mut *conn)
                        .await?;
                        sqlx::query(
                            "INSERT INTO person_facts (id, person_id, statement, normalized, source, session_id, run_id,
                                                       noted_at)
                             VALUES ($1, $2, $3, $4, 'conversation', $5, $6, $7)
                             ON CONFLICT (person_id, normalized) DO NOTHING",
                        )
                        .bind(Uuid::now_v7())
                        .bind(person)
                        .bind(mention.statement.as_str())
                        .bind(mention.statement.normalized())
                        .bind(session)
                        .bind(run)
                        .bind(now)
                        .execute(&mut *conn)
                        .await?;
                    }
                    Ok(created)
                },
                |_| true,
            )
            .await
    }
}

/// A contact seen on a message at `seen_at`: the person holding it (seen again), or a new
/// person made for it (`true`); `None` when the owner forgot whoever held it.
async fn see(
    conn: &mut sqlx::PgConnection,
    principal: &PrincipalId,
    contact: &Contact,
    name: Option<String>,
    seen_at: Timestamp,
) -> Result<Option<(Uuid, bool)>> {
    let seen_sql = jiff_sqlx::Timestamp::from(seen_at);
    let held: Option<Uuid> = sqlx::query_scalar(
        "UPDATE person_contacts SET
             name_seen = CASE WHEN $5 >= last_seen THEN COALESCE($4, name_seen) ELSE COALESCE(name_seen, $4) END,
             first_seen = LEAST(first_seen, $5), last_seen = GREATEST(last_seen, $5)
         WHERE principal_id = $1 AND kind = $2 AND value = $3
         RETURNING person_id",
    )
    .bind(principal.as_str())
    .bind(contact.kind.as_str())
    .bind(&contact.value)
    .bind(name.as_deref())
    .bind(seen_sql)
    .fetch_optional(&mut *conn)
    .await?;
    if let Some(person) = held {
        return Ok(Some((person, false)));
    }
    if forgotten(conn, principal, contact).await? {
        return Ok(None);
    }
    let display = name.clone().unwrap_or_else(|| name_from_address(&contact.value));
    let made = create(conn, principal, &display, true, seen_sql).await?;
    sqlx::query(
        "INSERT INTO person_contacts (principal_id, kind, value, person_id, name_seen, first_seen, last_seen)
         VALUES ($1, $2, $3, $4, $5, $6, $6)",
    )
    .bind(principal.as_str())
    .bind(contact.kind.as_str())
    .bind(&contact.value)
    .bind(made.id)
    .bind(name.as_deref())
    .bind(seen_sql)
    .execute(&mut *conn)
    .await?;
    Ok(Some((made.id, true)))
}

/// A contact learned about `person` (a number in their signature): added when nobody holds it
/// and the owner did not forget it; seen again when it is theirs already.
async fn attach(
    conn: &mut sqlx::PgConnection,
    principal: &PrincipalId,
    person: Uuid,
    contact: &Contact,
    seen_at: Timestamp,
) -> Result<()> {
    if forgotten(conn, principal, contact).await? {
        return Ok(());
    }
    sqlx::query(
        "INSERT INTO person_contacts (principal_id, kind, value, person_id, first_seen, last_seen)
         VALUES ($1, $2, $3, $4, $5, $5)
         ON CONFLICT (principal_id, kind, value) DO UPDATE
             SET last_seen = GREATEST(person_contacts.last_seen, EXCLUDED.last_seen)
             WHERE person_contacts.person_id = EXCLUDED.person_id",
    )
    .bind(principal.as_str())
    .bind(contact.kind.as_str())
    .bind(&contact.value)
    .bind(person)
    .bind(jiff_sqlx::Timestamp::from(seen_at))
    .execute(conn)
    .await?;
    Ok(())
}

async fn forgotten(conn: &mut sqlx::PgConnection, principal: &PrincipalId, contact: &Contact) -> Result<bool> {
    let forgotten: bool = sqlx::query_scalar(
        "SELECT EXISTS (SELECT 1 FROM people_forgotten
                        WHERE principal_id = $1 AND kind = $2 AND digest = sha256(convert_to($3, 'UTF8')))",
    )
    .bind(principal.as_str())
    .bind(contact.kind.as_str())
    .bind(&contact.value)
    .fetch_one(conn)
    .await?;
    Ok(forgotten)
}
