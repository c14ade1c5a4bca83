//! People's storage (`people`, `person_contacts`, `person_facts`, `person_distinctions`,
//! `people_forgotten`), behind `store.people()`: gathering records from projected mail (each
//! message once), the owner's listing and collections, a person's profile (contacts, facts with
//! their evidence, timeline, open threads), and the owner's keeping: changes, fact corrections,
//! duplicates with `Merge` and `Not the same`, `Repair identity` (split or re-link a contact) and
//! `Forget person`. Names, addresses and facts are the owner's data: none is logged.

use domain::ids::PrincipalId;
use domain::memory::Statement;
use domain::people::{ContactKind, FactSource, PeopleCollection};
use jiff::Timestamp;
use uuid::Uuid;

use crate::{Result, Store, named, prefixed, timestamp};

mod gathering;

pub use gathering::{Batch, Gathered, Heard, Learned, Mentioned, SentMessage};
pub(crate) use gathering::{Ungathered, read_messages};

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

impl People<'_> {
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
