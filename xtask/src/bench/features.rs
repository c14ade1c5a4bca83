//! Feature rows: the lateness of schedules due at one instant, and Email mode's inbox and
//! refresh.

use super::*;

impl Bench {
    /// Inserts `count` active daily schedules of the newest `default` agent, all next due at
    /// `due` (an SQL expression), titled `title` and a number, each with `instruction`.
    pub(super) fn insert_due_schedules(
        &self,
        database: &str,
        count: usize,
        (title, instruction): (&str, &str),
        due: &str,
        misfire_grace_seconds: u32,
    ) -> anyhow::Result<()> {
        self.psql(
            database,
            &format!(
                "INSERT INTO schedules (id, principal_id, title, instruction, agent_id, agent_version, policy_profile,
                     requested_scopes, max_steps, max_model_calls, max_tool_calls, max_cost_micros, run_timeout_seconds,
                     cadence_kind, local_time, timezone, misfire_grace_seconds, max_consecutive_failures, state, next_fire_at)
                 SELECT gen_random_uuid(), 'owner', '{title} ' || n, '{instruction}', v.agent_id, v.version, 'default',
                     '{{}}', 8, 8, 8, 1000000, 300, 'DAILY', to_char(d.due AT TIME ZONE 'UTC', 'HH24:MI:SS'), 'UTC',
                     {misfire_grace_seconds}, 3, 'active', d.due
                 FROM generate_series(1, {count}) AS n
                 CROSS JOIN (SELECT agent_id, version FROM agent_versions WHERE agent_id = 'default'
                             ORDER BY first_registered_at DESC LIMIT 1) AS v
                 CROSS JOIN (SELECT {due} AS due) AS d"
            ),
        )?;
        Ok(())
    }

    /// Lateness of `schedules` schedules all due at one instant, fired by one `steward-schedule`.
    pub(super) fn schedules(&self, report: &mut Report) -> anyhow::Result<()> {
        let count = self.options.schedules;
        // The due instant: a whole second far enough ahead for the role to be up.
        let due = self.psql(
            "steward_bench",
            "SELECT to_char(date_trunc('second', now()) + interval '6 seconds', 'YYYY-MM-DD\"T\"HH24:MI:SSOF')",
        )?;
        self.insert_due_schedules(
            "steward_bench",
            count,
            ("bench", "benchmark instruction"),
            &format!("'{due}'::timestamptz"),
            86400,
        )?;
        let _profile = self.profile("schedules");
        let mut scheduler = self.start_role(role("steward-schedule"), &[])?;
        let deadline = Instant::now() + Duration::from_secs(600);
        let fired = loop {
            std::thread::sleep(Duration::from_millis(500));
            let fired: usize = self
                .psql(
                    "steward_bench",
                    "SELECT count(*) FROM schedule_occurrences o JOIN schedules s ON s.id = o.schedule_id
                     WHERE s.title LIKE 'bench %'",
                )?
                .parse()?;
            if fired >= count || Instant::now() > deadline || scheduler.child.try_wait()?.is_some() {
                break fired;
            }
        };
        scheduler.stop();
        if fired < count {
            bail!("only {fired} of {count} schedules fired");
        }
        let lateness = self.psql(
            "steward_bench",
            "WITH late AS (
                 SELECT extract(epoch FROM r.created_at - o.scheduled_for) * 1000 AS ms
                 FROM schedule_occurrences o JOIN schedules s ON s.id = o.schedule_id
                 JOIN runs r ON r.occurrence_id = o.id WHERE s.title LIKE 'bench %')
             SELECT count(*), percentile_cont(0.5) WITHIN GROUP (ORDER BY ms),
                    percentile_cont(0.99) WITHIN GROUP (ORDER BY ms) FROM late",
        )?;
        let figures: Vec<f64> = lateness.split('|').filter_map(|part| part.parse().ok()).collect();
        let [runs, p50, p99] = figures[..] else {
            bail!("unreadable lateness: {lateness}");
        };
        report.push(
            Row::new(
                format!("lateness of {count} schedules due at one instant, p50 / p99"),
                format!("{:.0} / {:.0} ms", p50, p99),
            )
            .reference(format!("{runs:.0} runs created"))
            .goal(p99 / 1000.0, Goal::AtMost(1.0), "p99 ≤ 1 s"),
        );
        Ok(())
    }

    /// Idle resident memory and start-to-READY time of one role.
    /// The priority inbox's first page over 50,000 projected threads, beside the session
    /// index's first page on the same API.
    pub(super) fn email_inbox(&self, report: &mut Report) -> anyhow::Result<()> {
        self.psql(
            "steward_bench",
            "INSERT INTO email_accounts (account_id, address, history_id, coverage_from, updated_at)
                 VALUES ('inbox-bench', 'owner@bench.example', '1', now() - interval '30 days', now());
             INSERT INTO email_threads (account_id, provider_thread_id, subject, correspondents, latest_at,
                 message_count, labels, importance, reply_need, gist, classifier, rule, assessed_at)
             SELECT 'inbox-bench', 't' || g, 'Subject ' || g,
                 jsonb_build_array(jsonb_build_object('name', 'Person ' || (g % 500), 'address', 'p' || (g % 500) || '@example.com')),
                 now() - make_interval(mins => g), 1 + g % 4,
                 CASE WHEN g % 10 < 8 THEN ARRAY['INBOX'] ELSE ARRAY[]::text[] END,
                 CASE WHEN g % 5 = 0 THEN 'important' ELSE 'other' END,
                 CASE WHEN g % 15 = 0 THEN 'needs_reply' WHEN g % 5 = 0 AND g % 3 = 1 THEN 'for_your_attention' END,
                 'The gist of conversation ' || g, 'jev-1.13.0', 'known_correspondent', now()
             FROM generate_series(1, 50000) g;
             ANALYZE email_threads;",
        )?;
        let mut api = self.start_api_with(&[
            ("AGENT_EMAIL_MODE_ENABLED", "1".to_owned()),
            ("AUTH_SCOPES", "sessions.read,sessions.write,email.read".to_owned()),
        ])?;
        let measured = self.steward_bench(&["inbox", &api.base, path(&self.token_file), "2000"]);
        api.stop();
        let inbox = measured?;
        let p99 = number(&inbox, "p99_ms")?;
        report.push(
            Row::new(
                "Email inbox first page (5 of 50,000 projected threads), p50 / p99",
                format!("{:.2} / {p99:.2} ms", number(&inbox, "p50_ms")?),
            )
            .reference(format!(
                "session index first page of 5: {:.2} / {:.2} ms",
                number(&inbox, "reference_p50_ms")?,
                number(&inbox, "reference_p99_ms")?
            ))
            .goal(p99, Goal::AtMost(20.0), "p99 ≤ 20 ms"),
        );
        Ok(())
    }

    /// An incremental update of 100 new messages against the local provider stand-in, beside
    /// the same provider reads alone.
    pub(super) fn email_refresh(&self, report: &mut Report) -> anyhow::Result<()> {
        let login = pgcluster::with_user(&self.database_url, "steward_async_worker");
        let refresh = self.steward_bench(&["refresh", &login])?;
        let seconds = number(&refresh, "update_ms")? / 1000.0;
        report.push(
            Row::new(
                "Email incremental refresh of 100 new messages (local stand-in, Gmail's quota pacing)",
                format!("{seconds:.2} s"),
            )
            .reference(format!(
                "the history and 100 raw reads alone, paced alike: {:.2} s",
                number(&refresh, "reference_ms")? / 1000.0
            ))
            .goal(seconds, Goal::AtMost(2.0), "≤ 2 s"),
        );
        Ok(())
    }
}
