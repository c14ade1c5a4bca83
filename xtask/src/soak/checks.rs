//! What the soak checks once everything has settled, and what it waits for before: SQL that
//! counts what breaks each promise, run as the cluster's superuser.

use anyhow::Context;
use pgcluster::Binaries;

pub(super) use crate::postgres::psql;

/// The number `sql` counts.
pub(super) fn count(binaries: &Binaries, url: &str, sql: &str) -> anyhow::Result<i64> {
    let text = psql(binaries, url, sql)?;
    text.parse().with_context(|| format!("`{sql}` gave `{text}`"))
}

/// The checks: (what, the SQL counting what breaks it). Each must count 0.
pub(super) const CHECKS: &[(&str, &str)] = &[
    (
        "approved `notes.add` calls without exactly one note (one of unknown outcome: at most one)",
        "SELECT count(*) FROM approvals a JOIN tool_invocations i ON i.id = a.invocation_id
           CROSS JOIN LATERAL (SELECT count(*) AS notes FROM notes n WHERE n.invocation_id = a.invocation_id) n
           WHERE a.tool = 'notes.add' AND a.status = 'APPROVED'
             AND (n.notes > 1 OR (n.notes = 0 AND i.state <> 'outcome_unknown'))",
    ),
    (
        "notes without an approved call",
        "SELECT count(*) FROM notes n WHERE NOT EXISTS (SELECT 1 FROM approvals a
           WHERE a.invocation_id = n.invocation_id AND a.status = 'APPROVED')",
    ),
    (
        "sessions whose events are not contiguous from 1",
        "SELECT count(*) FROM (SELECT s.id FROM sessions s LEFT JOIN events e ON e.session_id = s.id
           GROUP BY s.id, s.last_event_seq
           HAVING count(e.seq) <> s.last_event_seq OR coalesce(max(e.seq), 0) <> s.last_event_seq) gaps",
    ),
    (
        "runs not ended",
        "SELECT count(*) FROM runs WHERE state NOT IN ('completed', 'failed', 'cancelled')",
    ),
    ("runs failed", "SELECT count(*) FROM runs WHERE state = 'failed'"),
    (
        "tool calls stuck (queued, approved or dispatching)",
        "SELECT count(*) FROM tool_invocations WHERE state IN ('queued', 'approved', 'dispatching')",
    ),
    (
        "email operations unsettled",
        "SELECT count(*) FROM email_operations
           WHERE state IN ('queued', 'dispatching') OR (state = 'uncertain' AND reconciled_at IS NULL)",
    ),
    (
        "approvals not queued for notification exactly once",
        "SELECT count(*) FROM approvals a WHERE (SELECT count(*) FROM notification_outbox n WHERE n.approval_id = a.id) <> 1",
    ),
    (
        "questions not queued for notification exactly once",
        "SELECT count(*) FROM questions q WHERE (SELECT count(*) FROM notification_outbox n WHERE n.question_id = q.id) <> 1",
    ),
    (
        "schedules (each due during the day) without exactly one completed occurrence",
        "SELECT count(*) FROM schedules s WHERE s.title LIKE 'Soak %'
           AND (SELECT count(*) FROM schedule_occurrences o JOIN runs r ON r.id = o.run_id
                WHERE o.schedule_id = s.id AND r.state = 'completed') <> 1",
    ),
    (
        "notifications due for 20 seconds and not delivered",
        "SELECT count(*) FROM notification_outbox WHERE delivered_at IS NULL AND obsolete_at IS NULL
           AND acknowledged_at IS NULL AND deliver_after < now() - interval '20 seconds'",
    ),
    (
        "mail reconciliations open",
        "SELECT count(*) FROM mail_reconciliations WHERE state IN ('dispatching', 'pending')",
    ),
];

/// What the settling waits to see at 0: every run ended, every operation and reconciliation
/// settled, every schedule fired, every notification delivered or obsolete.
pub(super) const SETTLED: &[&str] = &[
    "SELECT count(*) FROM runs WHERE state NOT IN ('completed', 'failed', 'cancelled')",
    "SELECT count(*) FROM email_operations
       WHERE state IN ('queued', 'dispatching') OR (state = 'uncertain' AND reconciled_at IS NULL)",
    "SELECT count(*) FROM mail_reconciliations WHERE state IN ('dispatching', 'pending')",
    "SELECT count(*) FROM schedules s WHERE s.title LIKE 'Soak %'
       AND NOT EXISTS (SELECT 1 FROM schedule_occurrences o WHERE o.schedule_id = s.id)",
    "SELECT count(*) FROM notification_outbox WHERE delivered_at IS NULL AND obsolete_at IS NULL
       AND acknowledged_at IS NULL",
];
