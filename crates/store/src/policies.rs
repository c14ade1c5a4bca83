//! The database logins and their privileges (`policies/`): the login names every role connects
//! with, and applying `policies/grants.sql` after the migrations.

use sqlx::{Connection, PgConnection};

/// Creates or corrects every login (cluster-wide; run by an administrator).
pub const LOGINS_SQL: &str = include_str!("../../../policies/logins.sql");
/// Grants and row-security policies (per database; run by the migration owner).
pub const GRANTS_SQL: &str = include_str!("../../../policies/grants.sql");

/// The login that owns the schema and runs migrations.
pub const OWNER_LOGIN: &str = "steward_owner";

/// Each role's login, in the order of `policies/privileges.md`'s columns.
pub const ROLE_LOGINS: [(&str, &str); 8] = [
    ("api", "steward_api"),
    ("worker", "steward_worker"),
    ("async-worker", "steward_async_worker"),
    ("schedule", "steward_schedule"),
    ("notify", "steward_notify"),
    ("maintenance", "steward_maintenance"),
    ("call", "steward_call"),
    ("ingress", "steward_ingress"),
];

/// The login of `role` (`api`, `worker`, ...).
pub fn login(role: &str) -> Option<&'static str> {
    ROLE_LOGINS
        .iter()
        .find(|(name, _)| *name == role)
        .map(|(_, login)| *login)
}

/// Which conditional grants apply.
#[derive(Clone, Copy, Debug, Default)]
pub struct GrantOptions {
    /// `AGENT_CALL_NOTIFICATIONS_ENABLED=1`: the call login may enqueue notifications.
    pub call_notifications: bool,
}

/// Applies `policies/grants.sql` in one transaction, so no role ever sees a half-granted schema.
/// Idempotent: every privilege is revoked and granted again.
pub async fn apply_grants(connection: &mut PgConnection, options: GrantOptions) -> crate::Result<()> {
    let mut transaction = connection.begin().await?;
    let flag = if options.call_notifications { "on" } else { "off" };
    sqlx::query("SELECT set_config('steward.call_notifications', $1, true)")
        .bind(flag)
        .execute(&mut *transaction)
        .await?;
    sqlx::raw_sql(GRANTS_SQL).execute(&mut *transaction).await?;
    transaction.commit().await?;
    Ok(())
}

/// Creates or corrects every login; needs an administrator's connection.
pub async fn apply_logins(connection: &mut PgConnection) -> crate::Result<()> {
    sqlx::raw_sql(LOGINS_SQL).execute(connection).await?;
    Ok(())
}
