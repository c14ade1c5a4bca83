//! The memory route group, mounted only with `AGENT_MEMORY_API_ENABLED=1`. Governed memories
//! arrive with the memory issue; until then the list is always empty.

use axum::Json;
use serde::Serialize;
use utoipa::ToSchema;

#[derive(Serialize, ToSchema)]
pub struct MemoryPage {
    /// Governed beliefs; none are recorded yet.
    memories: Vec<serde_json::Value>,
    /// Always null: there is nothing after the end.
    next_cursor: Option<String>,
}

/// Lists memories.
#[utoipa::path(
    get, path = "/v1/memories", tag = "memory",
    security(("bearer" = ["memory.read"])),
    responses((status = 200, description = "Memories", body = MemoryPage))
)]
pub async fn list() -> Json<MemoryPage> {
    Json(MemoryPage {
        memories: Vec::new(),
        next_cursor: None,
    })
}
