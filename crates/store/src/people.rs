//! People's storage (`people`, `person_contacts`, `person_facts`, `person_distinctions`,
//! `people_forgotten`), behind `store.people()`: gathering records from projected mail (each
//! message once), the owner's listing and collections, a person's profile (contacts, facts with
//! their evidence, timeline, open threads), and the owner's keeping: changes, fact corrections,
//! duplicates with `Merge` and `Not the same`, `Repair identity` (split or re-link a contact) and
//! `Forget person`. Names, addresses and facts are the owner's data: none is logged.

use domain::ids::PrincipalId;
use domain::memory::Statement;
use domain::people::{ContactKind, FactSource, PeopleCollection, machine_sender, name_from_address};
use jiff::Timestamp;
use serde::Deserialize;
use sqlx::types::Json;
use uuid::Uuid;

use crate::{Result, Store, named, prefixed, timestamp};

/// People's part of the store (`store.people()`).
#[derive(Clone, Copy, Debug)]
pub struct People<'a> {
    store: &'a Store,
}

impl Store {
    /// People's storage.
    pub fn people(&self) -> People<'_> {
        People { store: self }
    }
}

/// A contact in its stored form (`domain::people::contact`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Contact {
    pub kind: ContactKind,
    pub value: String,
}

/// A person as the owner's listing shows them.
#[derive(Clone, Debug, PartialEq)]
pub struct PersonRow {
    pub id: Uuid,
    /// Their place in the listing (newest highest).
    pub position: i64,
    pub name: String,
    pub relationship: Option<String>,
    pub pinned: bool,
    pub needs_review: bool,
    pub created_at: Timestamp,
    pub updated_at: Timestamp,
}

#[derive(sqlx::FromRow)]
struct PersonRecord {
    id: Uuid,
    position: i64,
    name: String,
    relationship: Option<String>,
    pinned: bool,
    needs_review: bool,
    created_at: jiff_sqlx::Timestamp,
    updated_at: jiff_sqlx::Timestamp,
}

impl From<PersonRecord> for PersonRow {
    fn from(record: PersonRecord) -> PersonRow {
        PersonRow {
            id: record.id,
            position: record.position,
            name: record.name,
            relationship: record.relationship,
            pinned: record.pinned,
            needs_review: record.needs_review,
            created_at: timestamp(record.created_at),
            updated_at: timestamp(record.updated_at),
        }
    }
}

const PERSON_COLUMNS: &str = "id, position, name, relationship, pinned, needs_review, created_at, updated_at";

/// A person's contact with when it was seen.
#[derive(Clone, Debug, PartialEq)]
pub struct ContactRow {
    pub kind: ContactKind,
    pub value: String,
    /// The display name it was last seen with.
    pub name_seen: Option<String>,
    pub first_seen: Timestamp,
    pub last_seen: Timestamp,
}

/// A fact about a person, with its evidence and the owner's correction.
#[derive(Clone, Debug, PartialEq)]
pub struct FactRow {
    pub id: Uuid,
    pub statement: String,
    pub source: FactSource,
    pub email_thread: Option<Uuid>,
    pub provider_message_id: Option<String>,
    pub session: Option<Uuid>,
    pub run: Option<Uuid>,
    pub noted_at: Timestamp,
    pub correction: Option<String>,
    pub corrected_at: Option<Timestamp>,
}

#[derive(sqlx::FromRow)]
struct FactRecord {
    id: Uuid,
    statement: String,
    source: String,
    email_thread: Option<Uuid>,
    provider_message_id: Option<String>,
    session_id: Option<Uuid>,
    run_id: Option<Uuid>,
    noted_at: jiff_sqlx::Timestamp,
    correction: Option<String>,
    corrected_at: Option<jiff_sqlx::Timestamp>,
}

impl FactRecord {
    fn into_row(self) -> Result<FactRow> {
        Ok(FactRow {
            id: self.id,
            statement: self.statement,
            source: named(self.source)?,
            email_thread: self.email_thread,
            provider_message_id: self.provider_message_id,
            session: self.session_id,
            run: self.run_id,
            noted_at: timestamp(self.noted_at),
            correction: self.correction,
            corrected_at: self.corrected_at.map(timestamp),
        })
    }
}

const FACT_COLUMNS: &str =
    "id, statement, source, email_thread, provider_message_id, session_id, run_id, noted_at, correction, corrected_at";

/// A message on a person's timeline.
#[derive(Clone, Debug, PartialEq)]
pub struct TimelineRow {
    pub thread: Uuid,
    pub provider_message_id: String,
    pub subject: String,
    pub sent_at: Timestamp,
    /// They sent it (otherwise the owner sent it to them).
    pub from_them: bool,
}

/// A conversation with a person that waits for the owner's reply.
#[derive(Clone, Debug, PartialEq)]
pub struct OpenThreadRow {
    pub thread: Uuid,
    pub subject: String,
    pub latest_at: Timestamp,
}

/// Which people a listing shows: newest first, before `before` (a position) when given.
#[derive(Clone, Debug, Default)]
pub struct PeopleQuery {
    pub collection: Option<PeopleCollection>,
    pub before: Option<i64>,
    pub limit: u32,
}

/// The owner's change to a person; `None` leaves a field as it is.
#[derive(Clone, Debug, Default)]
pub struct PersonChange {
    pub name: Option<String>,
    /// `Some(None)` clears it.
    pub relationship: Option<Option<String>>,
    pub pinned: Option<bool>,
    /// Reviewed: no longer in Needs review.
    pub reviewed: bool,
}

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

/// What splitting contacts off a person did.
#[derive(Clone, Debug, PartialEq)]
pub enum Split {
    /// The new person holding them (told apart from the first).
    Done(PersonRow),
    /// The owner has no such person.
    NotFound,
    /// A contact given is not that person's.
    NotTheirs,
    /// Every contact of the person was given: there would be nothing left to split from.
    All,
}

/// What `Merge` did.
#[derive(Clone, Debug, PartialEq)]
pub enum Merged {
    /// The person kept, holding both records' contacts and facts.
    Done(PersonRow),
    /// The owner has no such person (either of them).
    NotFound,
    /// A person cannot merge with themselves.
    Same,
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

    /// The owner's people that `query` selects, newest first.
    pub async fn list(&self, principal: &PrincipalId, query: &PeopleQuery) -> Result<Vec<PersonRow>> {
        let records: Vec<PersonRecord> = sqlx::query_as(&format!(
            "SELECT {PERSON_COLUMNS} FROM people
             WHERE principal_id = $1
               AND ($2::text IS NULL OR ($2 = 'pinned' AND pinned) OR ($2 = 'needs_review' AND needs_review))
               AND ($3::bigint IS NULL OR position < $3)
             ORDER BY position DESC LIMIT $4"
        ))
        .bind(principal.as_str())
        .bind(query.collection.map(PeopleCollection::as_str))
        .bind(query.before)
        .bind(i64::from(query.limit))
        .fetch_all(&self.store.pool)
        .await?;
        Ok(records.into_iter().map(PersonRow::from).collect())
    }

    /// One of the owner's people.
    pub async fn get(&self, principal: &PrincipalId, id: Uuid) -> Result<Option<PersonRow>> {
        person(&self.store.pool, principal, id).await
    }

    /// A person's contacts, addresses first, most recently seen first.
    pub async fn contacts(&self, principal: &PrincipalId, id: Uuid) -> Result<Vec<ContactRow>> {
        let rows: Vec<(
            String,
            String,
            Option<String>,
            jiff_sqlx::Timestamp,
            jiff_sqlx::Timestamp,
        )> = sqlx::query_as(
            "SELECT kind, value, name_seen, first_seen, last_seen FROM person_contacts
             WHERE person_id = $1 AND principal_id = $2
             ORDER BY kind, last_seen DESC, value",
        )
        .bind(id)
        .bind(principal.as_str())
        .fetch_all(&self.store.pool)
        .await?;
        rows.into_iter()
            .map(|(kind, value, name_seen, first_seen, last_seen)| {
                Ok(ContactRow {
                    kind: named(kind)?,
                    value,
                    name_seen,
                    first_seen: timestamp(first_seen),
                    last_seen: timestamp(last_seen),
                })
            })
            .collect()
    }

    /// What is known about a person, oldest first (at most 100).
    pub async fn facts(&self, principal: &PrincipalId, id: Uuid) -> Result<Vec<FactRow>> {
        let records: Vec<FactRecord> = sqlx::query_as(&format!(
            "SELECT {} FROM person_facts f JOIN people p ON p.id = f.person_id
             WHERE f.person_id = $1 AND p.principal_id = $2
             ORDER BY f.noted_at, f.id LIMIT 100",
            prefixed(FACT_COLUMNS, "f")
        ))
        .bind(id)
        .bind(principal.as_str())
        .fetch_all(&self.store.pool)
        .await?;
        records.into_iter().map(FactRecord::into_row).collect()
    }

    /// A person's timeline: the latest messages they sent the owner or the owner sent them,
    /// newest first (at most `limit`).
    pub async fn timeline(&self, principal: &PrincipalId, id: Uuid, limit: u32) -> Result<Vec<TimelineRow>> {
        let rows: Vec<(Uuid, String, String, jiff_sqlx::Timestamp, bool)> = sqlx::query_as(
            "WITH theirs AS (SELECT value FROM person_contacts
                             WHERE person_id = $1 AND principal_id = $2 AND kind = 'email'),
                  own AS (SELECT lower(address) AS address FROM email_accounts WHERE address IS NOT NULL)
             SELECT thread, provider_message_id, subject, sent_at, from_them FROM (
                 SELECT m.thread, m.provider_message_id, m.subject, m.sent_at, true AS from_them
                 FROM email_messages m WHERE lower(m.sender->>'address') IN (SELECT value FROM theirs)
                 UNION ALL
                 SELECT m.thread, m.provider_message_id, m.subject, m.sent_at, false
                 FROM email_messages m
                 WHERE lower(m.sender->>'address') IN (SELECT address FROM own)
                   AND EXISTS (SELECT 1 FROM jsonb_array_elements(m.recipients || m.copied) r
                               WHERE lower(r->>'address') IN (SELECT value FROM theirs))
             ) AS messages
             ORDER BY sent_at DESC, provider_message_id DESC LIMIT $3",
        )
        .bind(id)
        .bind(principal.as_str())
        .bind(i64::from(limit))
        .fetch_all(&self.store.pool)
        .await?;
        Ok(rows
            .into_iter()
            .map(
                |(thread, provider_message_id, subject, sent_at, from_them)| TimelineRow {
                    thread,
                    provider_message_id,
                    subject,
                    sent_at: timestamp(sent_at),
                    from_them,
                },
            )
            .collect())
    }

    /// A person's open threads: conversations in the Inbox with them that need the owner's
    /// reply, newest first (at most 20).
    pub async fn open_threads(&self, principal: &PrincipalId, id: Uuid) -> Result<Vec<OpenThreadRow>> {
        let rows: Vec<(Uuid, String, jiff_sqlx::Timestamp)> = sqlx::query_as(
            "SELECT t.id, t.subject, t.latest_at FROM email_threads t
             WHERE t.in_inbox AND t.reply_need = 'needs_reply' AND t.handled_at IS NULL
               AND EXISTS (SELECT 1 FROM jsonb_array_elements(t.correspondents) c
                           JOIN person_contacts pc ON pc.kind = 'email' AND pc.value = lower(c->>'address')
                           WHERE pc.person_id = $1 AND pc.principal_id = $2)
             ORDER BY t.latest_at DESC, t.id DESC LIMIT 20",
        )
        .bind(id)
        .bind(principal.as_str())
        .fetch_all(&self.store.pool)
        .await?;
        Ok(rows
            .into_iter()
            .map(|(thread, subject, latest_at)| OpenThreadRow {
                thread,
                subject,
                latest_at: timestamp(latest_at),
            })
            .collect())
    }

    /// Applies the owner's change to a person; `None` when the owner has no such person.
    pub async fn change(&self, principal: &PrincipalId, id: Uuid, change: &PersonChange) -> Result<Option<PersonRow>> {
        let record: Option<PersonRecord> = sqlx::query_as(&format!(
            "UPDATE people SET
                 name = COALESCE($3, name),
                 relationship = CASE WHEN $4 THEN $5 ELSE relationship END,
                 pinned = COALESCE($6, pinned),
                 needs_review = needs_review AND NOT $7,
                 updated_at = $8
             WHERE id = $1 AND principal_id = $2
             RETURNING {PERSON_COLUMNS}"
        ))
        .bind(id)
        .bind(principal.as_str())
        .bind(change.name.as_deref())
        .bind(change.relationship.is_some())
        .bind(change.relationship.clone().flatten())
        .bind(change.pinned)
        .bind(change.reviewed)
        .bind(self.store.now_sql())
        .fetch_optional(&self.store.pool)
        .await?;
        Ok(record.map(PersonRow::from))
    }

    /// The owner's correction of a fact (`None` takes it back); `None` when the owner has no
    /// such fact about that person.
    pub async fn correct(
        &self,
        principal: &PrincipalId,
        person: Uuid,
        fact: Uuid,
        correction: Option<&Statement>,
    ) -> Result<Option<FactRow>> {
        let record: Option<FactRecord> = sqlx::query_as(&format!(
            "UPDATE person_facts f SET correction = $4, corrected_at = CASE WHEN $4 IS NULL THEN NULL ELSE $5 END
             FROM people p
             WHERE f.id = $1 AND f.person_id = $2 AND p.id = f.person_id AND p.principal_id = $3
             RETURNING {}",
            prefixed(FACT_COLUMNS, "f")
        ))
        .bind(fact)
        .bind(person)
        .bind(principal.as_str())
        .bind(correction.map(Statement::as_str))
        .bind(self.store.now_sql())
        .fetch_optional(&self.store.pool)
        .await?;
        record.map(FactRecord::into_row).transpose()
    }

    /// Pairs of the owner's people that may be one person (the same name, compared in lower
    /// case with only letters and digits), never a pair the owner told apart; at most `limit`.
    pub async fn duplicates(&self, principal: &PrincipalId, limit: u32) -> Result<Vec<(PersonRow, PersonRow)>> {
        let pairs: Vec<(Uuid, Uuid)> = sqlx::query_as(
            "WITH named AS (
                 SELECT id, trim(regexp_replace(lower(name), '[^[:alnum:]]+', ' ', 'g')) AS key
                 FROM people WHERE principal_id = $1)
             SELECT a.id, b.id FROM named a JOIN named b ON a.key = b.key AND a.id < b.id
             WHERE a.key <> ''
               AND NOT EXISTS (SELECT 1 FROM person_distinctions d WHERE d.first = a.id AND d.second = b.id)
             ORDER BY a.id, b.id LIMIT $2",
        )
        .bind(principal.as_str())
        .bind(i64::from(limit))
        .fetch_all(&self.store.pool)
        .await?;
        let mut found = Vec::with_capacity(pairs.len());
        for (first, second) in pairs {
            if let (Some(first), Some(second)) = (self.get(principal, first).await?, self.get(principal, second).await?)
            {
                found.push((first, second));
            }
        }
        Ok(found)
    }

    /// `Merge`: `from`'s contacts and facts move to `into` (a fact `into` holds already is
    /// dropped), `into` keeps a pin or relationship either had, and `from` is gone. A later
    /// gathering finds the contacts where the merge put them.
    pub async fn merge(&self, principal: &PrincipalId, into: Uuid, from: Uuid) -> Result<Merged> {
        if into == from {
            return Ok(Merged::Same);
        }
        let now = self.store.now_sql();
        self.store
            .transaction(
                async |conn| {
                    lock(conn, principal).await?;
                    let (Some(kept), Some(gone)) = (
                        person(&mut *conn, principal, into).await?,
                        person(&mut *conn, principal, from).await?,
                    ) else {
                        return Ok(Merged::NotFound);
                    };
                    sqlx::query(
                        "DELETE FROM person_facts f WHERE f.person_id = $2
                           AND EXISTS (SELECT 1 FROM person_facts k WHERE k.person_id = $1 AND k.normalized = f.normalized)",
                    )
                    .bind(into)
                    .bind(from)
                    .execute(&mut *conn)
                    .await?;
                    for table in ["person_facts", "person_contacts"] {
                        sqlx::query(&format!("UPDATE {table} SET person_id = $1 WHERE person_id = $2"))
                            .bind(into)
                            .bind(from)
                            .execute(&mut *conn)
                            .await?;
                    }
                    let record: PersonRecord = sqlx::query_as(&format!(
                        "UPDATE people SET pinned = $2, relationship = $3, updated_at = $4 WHERE id = $1
                         RETURNING {PERSON_COLUMNS}"
                    ))
                    .bind(into)
                    .bind(kept.pinned || gone.pinned)
                    .bind(kept.relationship.or(gone.relationship))
                    .bind(now)
                    .fetch_one(&mut *conn)
                    .await?;
                    sqlx::query("DELETE FROM people WHERE id = $1")
                        .bind(from)
                        .execute(&mut *conn)
                        .await?;
                    Ok(Merged::Done(record.into()))
                },
                |_| true,
            )
            .await
    }

    /// `Not the same`: the two are never offered as duplicates again; `false` when the owner
    /// has no such people (or it is one person).
    pub async fn distinguish(&self, principal: &PrincipalId, a: Uuid, b: Uuid) -> Result<bool> {
        if a == b {
            return Ok(false);
        }
        let mut conn = self.store.pool.acquire().await?;
        distinguish(&mut conn, principal, a, b, self.store.now_sql()).await
    }

    /// `Repair identity`, split: `contacts` of `id` move to a new person named `name` (reviewed:
    /// the owner made it), told apart from `id`.
    pub async fn split(&self, principal: &PrincipalId, id: Uuid, contacts: &[Contact], name: &str) -> Result<Split> {
        let now = self.store.now_sql();
        self.store
            .transaction(
                async |conn| {
                    lock(conn, principal).await?;
                    if person(&mut *conn, principal, id).await?.is_none() {
                        return Ok(Split::NotFound);
                    }
                    let held: Vec<(String, String)> =
                        sqlx::query_as("SELECT kind, value FROM person_contacts WHERE person_id = $1")
                            .bind(id)
                            .fetch_all(&mut *conn)
                            .await?;
                    let theirs = |contact: &Contact| {
                        held.iter()
                            .any(|(kind, value)| kind == contact.kind.as_str() && *value == contact.value)
                    };
                    if !contacts.iter().all(theirs) {
                        return Ok(Split::NotTheirs);
                    }
                    if held.iter().all(|(kind, value)| {
                        contacts
                            .iter()
                            .any(|contact| contact.kind.as_str() == kind && contact.value == *value)
                    }) {
                        return Ok(Split::All);
                    }
                    let new = create(conn, principal, name, false, now).await?;
                    for contact in contacts {
                        sqlx::query(
                            "UPDATE person_contacts SET person_id = $1
                             WHERE principal_id = $2 AND kind = $3 AND value = $4",
                        )
                        .bind(new.id)
                        .bind(principal.as_str())
                        .bind(contact.kind.as_str())
                        .bind(&contact.value)
                        .execute(&mut *conn)
                        .await?;
                    }
                    distinguish(conn, principal, id, new.id, now).await?;
                    Ok(Split::Done(new))
                },
                |outcome| matches!(outcome, Split::Done(_)),
            )
            .await
    }

    /// `Repair identity`, re-link: `contact` becomes `id`'s (taken from whoever held it, or
    /// added), also when it was a forgotten person's: the owner asked. `None` when the owner
    /// has no such person.
    pub async fn link(&self, principal: &PrincipalId, id: Uuid, contact: &Contact) -> Result<Option<PersonRow>> {
        let now = self.store.now_sql();
        self.store
            .transaction(
                async |conn| {
                    lock(conn, principal).await?;
                    let Some(found) = person(&mut *conn, principal, id).await? else {
                        return Ok(None);
                    };
                    sqlx::query(
                        "INSERT INTO person_contacts (principal_id, kind, value, person_id, first_seen, last_seen)
                         VALUES ($1, $2, $3, $4, $5, $5)
                         ON CONFLICT (principal_id, kind, value) DO UPDATE SET person_id = EXCLUDED.person_id",
                    )
                    .bind(principal.as_str())
                    .bind(contact.kind.as_str())
                    .bind(&contact.value)
                    .bind(id)
                    .bind(now)
                    .execute(&mut *conn)
                    .await?;
                    Ok(Some(found))
                },
                |_| true,
            )
            .await
    }

    /// `Forget person`: the record, its contacts and its facts are gone, and a gathering never
    /// makes it again from the same addresses or numbers (only their digests stay); `false`
    /// when the owner has no such person.
    pub async fn forget(&self, principal: &PrincipalId, id: Uuid) -> Result<bool> {
        let now = self.store.now_sql();
        self.store
            .transaction(
                async |conn| {
                    lock(conn, principal).await?;
                    if person(&mut *conn, principal, id).await?.is_none() {
                        return Ok(false);
                    }
                    sqlx::query(
                        "INSERT INTO people_forgotten (principal_id, kind, digest, forgotten_at)
                         SELECT principal_id, kind, sha256(convert_to(value, 'UTF8')), $2
                         FROM person_contacts WHERE person_id = $1
                         ON CONFLICT DO NOTHING",
                    )
                    .bind(id)
                    .bind(now)
                    .execute(&mut *conn)
                    .await?;
                    sqlx::query("DELETE FROM people WHERE id = $1")
                        .bind(id)
                        .execute(&mut *conn)
                        .await?;
                    Ok(true)
                },
                |_| true,
            )
            .await
    }
}

/// The principal's people lock, held to the end of the transaction: gathering and the owner's
/// keeping never interleave.
pub(crate) async fn lock(conn: &mut sqlx::PgConnection, principal: &PrincipalId) -> Result<()> {
    sqlx::query("SELECT pg_advisory_xact_lock(hashtextextended('steward people ' || $1, 0))")
        .bind(principal.as_str())
        .execute(conn)
        .await?;
    Ok(())
}

async fn person<'c>(
    executor: impl sqlx::PgExecutor<'c>,
    principal: &PrincipalId,
    id: Uuid,
) -> Result<Option<PersonRow>> {
    let record: Option<PersonRecord> = sqlx::query_as(&format!(
        "SELECT {PERSON_COLUMNS} FROM people WHERE id = $1 AND principal_id = $2"
    ))
    .bind(id)
    .bind(principal.as_str())
    .fetch_optional(executor)
    .await?;
    Ok(record.map(PersonRow::from))
}

async fn create(
    conn: &mut sqlx::PgConnection,
    principal: &PrincipalId,
    name: &str,
    needs_review: bool,
    now: jiff_sqlx::Timestamp,
) -> Result<PersonRow> {
    let record: PersonRecord = sqlx::query_as(&format!(
        "INSERT INTO people (id, principal_id, name, needs_review, created_at, updated_at)
         VALUES ($1, $2, $3, $4, $5, $5) RETURNING {PERSON_COLUMNS}"
    ))
    .bind(Uuid::now_v7())
    .bind(principal.as_str())
    .bind(name)
    .bind(needs_review)
    .bind(now)
    .fetch_one(conn)
    .await?;
    Ok(record.into())
}

async fn distinguish(
    conn: &mut sqlx::PgConnection,
    principal: &PrincipalId,
    a: Uuid,
    b: Uuid,
    now: jiff_sqlx::Timestamp,
) -> Result<bool> {
    let (first, second) = if a < b { (a, b) } else { (b, a) };
    let owned: i64 = sqlx::query_scalar("SELECT count(*) FROM people WHERE id IN ($1, $2) AND principal_id = $3")
        .bind(first)
        .bind(second)
        .bind(principal.as_str())
        .fetch_one(&mut *conn)
        .await?;
    if owned != 2 {
        return Ok(false);
    }
    sqlx::query(
        "INSERT INTO person_distinctions (principal_id, first, second, decided_at) VALUES ($1, $2, $3, $4)
         ON CONFLICT DO NOTHING",
    )
    .bind(principal.as_str())
    .bind(first)
    .bind(second)
    .bind(now)
    .execute(conn)
    .await?;
    Ok(true)
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
