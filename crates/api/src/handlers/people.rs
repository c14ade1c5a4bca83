//! People (`/v1/people`, mounted with `AGENT_MEMORY_API_ENABLED=1`; `people.read`,
//! `people.write`): the owner's correspondents, newest first with keyset cursors and the Pinned
//! and Needs review collections; a person's profile; the owner's changes and fact corrections;
//! duplicates with `Merge` and `Not the same`; and `Manage person`: `Repair identity` and
//! `Forget person` (the record and its facts go, and the same sources do not make it again).

use axum::extract::State;
use axum::http::StatusCode;
use axum::{Extension, Json as JsonResponse};
use domain::ErrorCode;
use domain::cursor::CursorKind;
use domain::memory::Statement;
use store::people::{Contact, ContactRow, FactRow, Merged, PeopleQuery, PersonChange, PersonRow, Split};
use uuid::Uuid;
use wire::people::{
    ContactRef, CorrectFact, DuplicatePair, Duplicates, FactEvidence, ListPeople, OpenThread, OtherPerson, PeoplePage,
    Person, PersonContact, PersonFact, PersonProfile, RepairIdentity, TimelineDirection, TimelineEntry, UpdatePerson,
};

use super::email::{page_after, parse_uuid};
use crate::AppState;
use crate::auth::Caller;
use crate::extract::{Json, Path, Query};
use crate::problem::ApiError;

const DEFAULT_PAGE_SIZE: u32 = 50;
const MAX_PAGE_SIZE: u32 = 100;
/// The messages a profile's timeline shows.
const TIMELINE_LENGTH: u32 = 20;
/// The most duplicate pairs offered at once.
const MAX_DUPLICATES: u32 = 50;

fn person(row: PersonRow) -> Person {
    Person {
        person_id: row.id,
        name: row.name,
        relationship: row.relationship,
        pinned: row.pinned,
        needs_review: row.needs_review,
        created_at: row.created_at,
        updated_at: row.updated_at,
    }
}

fn contact(row: ContactRow) -> PersonContact {
    PersonContact {
        kind: row.kind,
        value: row.value,
        name_seen: row.name_seen,
        first_seen: row.first_seen,
        last_seen: row.last_seen,
    }
}

fn fact(row: FactRow) -> PersonFact {
    PersonFact {
        fact_id: row.id,
        statement: row.statement,
        source: row.source,
        evidence: FactEvidence {
            email_thread_id: row.email_thread,
            provider_message_id: row.provider_message_id,
            session_id: row.session,
            run_id: row.run,
        },
        noted_at: row.noted_at,
        correction: row.correction,
        corrected_at: row.corrected_at,
    }
}

fn person_id(text: &str) -> Result<Uuid, ApiError> {
    parse_uuid(text, ErrorCode::PersonNotFound)
}

fn not_found() -> ApiError {
    ApiError::new(ErrorCode::PersonNotFound)
}

fn invalid(field: &str, detail: impl Into<String>) -> ApiError {
    ApiError::new(ErrorCode::ValidationFailed).detail(detail).field(field)
}

fn stored_contact(given: &ContactRef, field: &str) -> Result<Contact, ApiError> {
    let value = domain::people::contact(given.kind, &given.value).map_err(|error| invalid(field, error.to_string()))?;
    Ok(Contact {
        kind: given.kind,
        value,
    })
}

/// The owner's people, newest first, paged by cursor.
#[utoipa::path(
    get, path = "/v1/people", tag = "people",
    security(("bearer" = ["people.read"])),
    params(ListPeople),
    responses((status = 200, description = "A page of people", body = PeoplePage))
)]
pub async fn list(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    Query(params): Query<ListPeople>,
) -> Result<JsonResponse<PeoplePage>, ApiError> {
    let limit = super::page_limit(params.limit, DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE)?;
    let before = page_after(
        &state,
        CursorKind::People,
        params.cursor.as_deref(),
        super::decode_sequence,
    )?;
    let query = PeopleQuery {
        collection: params.collection,
        before,
        limit: limit + 1,
    };
    let mut rows = state.store.people().list(&caller.principal, &query).await?;
    let next_cursor = super::next_page(&state, CursorKind::People, &mut rows, limit, |last| {
        last.position.to_be_bytes().to_vec()
    });
    Ok(JsonResponse(PeoplePage {
        people: rows.into_iter().map(person).collect(),
        next_cursor,
    }))
}

/// A person's profile: names, contacts, facts with their evidence and corrections, timeline and
/// open threads.
#[utoipa::path(
    get, path = "/v1/people/{person_id}", tag = "people",
    security(("bearer" = ["people.read"])),
    params(("person_id" = Uuid, Path)),
    responses((status = 200, description = "The person's profile", body = PersonProfile))
)]
pub async fn get(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    Path(id): Path<String>,
) -> Result<JsonResponse<PersonProfile>, ApiError> {
    let id = person_id(&id)?;
    Ok(JsonResponse(profile(&state, &caller, id).await?))
}

async fn profile(state: &AppState, caller: &Caller, id: Uuid) -> Result<PersonProfile, ApiError> {
    let people = state.store.people();
    let row = people.get(&caller.principal, id).await?.ok_or_else(not_found)?;
    let contacts = people.contacts(&caller.principal, id).await?;
    let facts = people.facts(&caller.principal, id).await?;
    let timeline = people.timeline(&caller.principal, id, TIMELINE_LENGTH).await?;
    let open = people.open_threads(&caller.principal, id).await?;
    let mut names = vec![row.name.clone()];
    for seen in contacts.iter().filter_map(|contact| contact.name_seen.as_ref()) {
        if !names.contains(seen) {
            names.push(seen.clone());
        }
    }
    Ok(PersonProfile {
        person: person(row),
        names,
        contacts: contacts.into_iter().map(contact).collect(),
        facts: facts.into_iter().map(fact).collect(),
        timeline: timeline
            .into_iter()
            .map(|entry| TimelineEntry {
                email_thread_id: entry.thread,
                provider_message_id: entry.provider_message_id,
                subject: entry.subject,
                sent_at: entry.sent_at,
                direction: if entry.from_them {
                    TimelineDirection::FromThem
                } else {
                    TimelineDirection::ToThem
                },
            })
            .collect(),
        open_threads: open
            .into_iter()
            .map(|thread| OpenThread {
                email_thread_id: thread.thread,
                subject: thread.subject,
                latest_at: thread.latest_at,
            })
            .collect(),
    })
}

/// The owner's change: name, relationship (`null` clears it), pin, reviewed.
#[utoipa::path(
    patch, path = "/v1/people/{person_id}", tag = "people",
    security(("bearer" = ["people.write"])),
    params(("person_id" = Uuid, Path)),
    request_body = UpdatePerson,
    responses((status = 200, description = "The person as they stand now", body = Person))
)]
pub async fn update(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    Path(id): Path<String>,
    Json(request): Json<UpdatePerson>,
) -> Result<JsonResponse<Person>, ApiError> {
    let id = person_id(&id)?;
    let name = request
        .name
        .as_deref()
        .map(domain::people::name)
        .transpose()
        .map_err(|error| invalid("name", error.to_string()))?;
    let relationship = match request.relationship {
        None => None,
        Some(None) => Some(None),
        Some(Some(text)) => Some(Some(
            domain::people::relationship(&text).map_err(|error| invalid("relationship", error.to_string()))?,
        )),
    };
    if request.reviewed == Some(false) {
        return Err(invalid(
            "reviewed",
            "a reviewed person cannot be put back in Needs review",
        ));
    }
    let change = PersonChange {
        name,
        relationship,
        pinned: request.pinned,
        reviewed: request.reviewed == Some(true),
    };
    let row = state
        .store
        .people()
        .change(&caller.principal, id, &change)
        .await?
        .ok_or_else(not_found)?;
    Ok(JsonResponse(person(row)))
}

/// The owner's correction of a fact (shown instead of it), or `null` to take it back.
#[utoipa::path(
    put, path = "/v1/people/{person_id}/facts/{fact_id}/correction", tag = "people",
    security(("bearer" = ["people.write"])),
    params(("person_id" = Uuid, Path), ("fact_id" = Uuid, Path)),
    request_body = CorrectFact,
    responses((status = 200, description = "The fact as it stands now", body = PersonFact))
)]
pub async fn correct(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    Path((id, fact_id)): Path<(String, String)>,
    Json(request): Json<CorrectFact>,
) -> Result<JsonResponse<PersonFact>, ApiError> {
    let id = person_id(&id)?;
    let fact_id: Uuid = parse_uuid(&fact_id, ErrorCode::PersonFactNotFound)?;
    let correction = request
        .correction
        .flatten()
        .map(|text| Statement::new(&text).map_err(|error| invalid("correction", error.to_string())))
        .transpose()?;
    let people = state.store.people();
    if people.get(&caller.principal, id).await?.is_none() {
        return Err(not_found());
    }
    let row = people
        .correct(&caller.principal, id, fact_id, correction.as_ref())
        .await?
        .ok_or_else(|| ApiError::new(ErrorCode::PersonFactNotFound))?;
    Ok(JsonResponse(fact(row)))
}

/// Records that may be one person (the same name), never a pair the owner told apart.
#[utoipa::path(
    get, path = "/v1/people/duplicates", tag = "people",
    security(("bearer" = ["people.read"])),
    responses((status = 200, description = "The pairs offered", body = Duplicates))
)]
pub async fn duplicates(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
) -> Result<JsonResponse<Duplicates>, ApiError> {
    let pairs = state
        .store
        .people()
        .duplicates(&caller.principal, MAX_DUPLICATES)
        .await?;
    Ok(JsonResponse(Duplicates {
        pairs: pairs
            .into_iter()
            .map(|(first, second)| DuplicatePair {
                first: person(first),
                second: person(second),
            })
            .collect(),
    }))
}

/// `Merge`: the other person's contacts and facts become this person's, and the other record
/// is gone.
#[utoipa::path(
    post, path = "/v1/people/{person_id}/merge", tag = "people",
    security(("bearer" = ["people.write"])),
    params(("person_id" = Uuid, Path)),
    request_body = OtherPerson,
    responses((status = 200, description = "The person kept, as their profile", body = PersonProfile))
)]
pub async fn merge(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    Path(id): Path<String>,
    Json(request): Json<OtherPerson>,
) -> Result<JsonResponse<PersonProfile>, ApiError> {
    let id = person_id(&id)?;
    match state
        .store
        .people()
        .merge(&caller.principal, id, request.other_person_id)
        .await?
    {
        Merged::Done(kept) => Ok(JsonResponse(profile(&state, &caller, kept.id).await?)),
        Merged::NotFound => Err(not_found()),
        Merged::Same => Err(invalid("other_person_id", "a person cannot merge with themselves")),
    }
}

/// `Not the same`: the two are never offered as duplicates again.
#[utoipa::path(
    post, path = "/v1/people/{person_id}/not-the-same", tag = "people",
    security(("bearer" = ["people.write"])),
    params(("person_id" = Uuid, Path)),
    request_body = OtherPerson,
    responses((status = 204, description = "Told apart"))
)]
pub async fn not_the_same(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    Path(id): Path<String>,
    Json(request): Json<OtherPerson>,
) -> Result<StatusCode, ApiError> {
    let id = person_id(&id)?;
    if id == request.other_person_id {
        return Err(invalid("other_person_id", "a person is the same as themselves"));
    }
    if state
        .store
        .people()
        .distinguish(&caller.principal, id, request.other_person_id)
        .await?
    {
        Ok(StatusCode::NO_CONTENT)
    } else {
        Err(not_found())
    }
}

/// `Repair identity`: split contacts off to a new person (201, the new person's profile), or
/// link a contact to this person (200, this person's profile).
#[utoipa::path(
    post, path = "/v1/people/{person_id}/repair", tag = "people",
    security(("bearer" = ["people.write"])),
    params(("person_id" = Uuid, Path)),
    request_body = RepairIdentity,
    responses(
        (status = 200, description = "Linked: this person's profile", body = PersonProfile),
        (status = 201, description = "Split: the new person's profile", body = PersonProfile)
    )
)]
pub async fn repair(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    Path(id): Path<String>,
    Json(request): Json<RepairIdentity>,
) -> Result<(StatusCode, JsonResponse<PersonProfile>), ApiError> {
    let id = person_id(&id)?;
    let people = state.store.people();
    match request {
        RepairIdentity::Split { contacts, name } => {
            let name = domain::people::name(&name).map_err(|error| invalid("name", error.to_string()))?;
            if contacts.is_empty() {
                return Err(invalid("contacts", "name at least one contact to split off"));
            }
            let contacts = contacts
                .iter()
                .map(|given| stored_contact(given, "contacts"))
                .collect::<Result<Vec<_>, _>>()?;
            match people.split(&caller.principal, id, &contacts, &name).await? {
                Split::Done(new) => Ok((
                    StatusCode::CREATED,
                    JsonResponse(profile(&state, &caller, new.id).await?),
                )),
                Split::NotFound => Err(not_found()),
                Split::NotTheirs => Err(invalid("contacts", "a contact named is not this person's")),
                Split::All => Err(invalid("contacts", "one contact at least stays with the person")),
            }
        }
        RepairIdentity::Link { contact } => {
            let contact = stored_contact(&contact, "contact")?;
            people
                .link(&caller.principal, id, &contact)
                .await?
                .ok_or_else(not_found)?;
            Ok((StatusCode::OK, JsonResponse(profile(&state, &caller, id).await?)))
        }
    }
}

/// `Forget person`: the record, its contacts and facts are gone, and the same addresses and
/// numbers do not make it again (unless the owner links one to a person).
#[utoipa::path(
    delete, path = "/v1/people/{person_id}", tag = "people",
    security(("bearer" = ["people.write"])),
    params(("person_id" = Uuid, Path)),
    responses((status = 204, description = "Forgotten"))
)]
pub async fn forget(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    Path(id): Path<String>,
) -> Result<StatusCode, ApiError> {
    let id = person_id(&id)?;
    if state.store.people().forget(&caller.principal, id).await? {
        Ok(StatusCode::NO_CONTENT)
    } else {
        Err(not_found())
    }
}
