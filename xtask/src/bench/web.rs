//! The web client in Chromium: first load, first paint and a long conversation.

use super::*;

impl Bench {
    /// The web client's budgets, measured in Debian's Chromium by `web/e2e/bench.mjs`: what the
    /// first load transfers of script and style, the first paint beside a static page's served
    /// by Node on loopback, and a conversation of 2,000 persisted events (runs of a message, a
    /// Markdown answer and the run's end) opened and scrolled through end to end.
    pub(super) fn web_client(&self, base: &str, report: &mut Report) -> anyhow::Result<()> {
        const EVENTS: usize = 2000;
        crate::e2e::ensure_chromium()?;
        let e2e = crate::workspace_root().join("web/e2e");
        crate::e2e::ensure_packages(&e2e)?;
        // Runs of a message, a Markdown answer and the run's end.
        let session = self.fill_empty_session(
            EVENTS,
            "CASE n % 3 WHEN 1 THEN 'user.message.created' WHEN 2 THEN 'assistant.message' ELSE 'run.completed' END",
            r"CASE n % 3
                     WHEN 1 THEN jsonb_build_object('run_id', md5('run' || (n - 1) / 3)::uuid, 'message',
                       jsonb_build_object('text', 'Question number ' || (n - 1) / 3 || ': what about the **plan**?',
                                          'attachments', '[]'::jsonb))
                     WHEN 2 THEN jsonb_build_object('run_id', md5('run' || (n - 1) / 3)::uuid, 'step', 1,
                       'tool_calls', '[]'::jsonb,
                       'usage', jsonb_build_object('input_tokens', 10, 'output_tokens', 40, 'cost', '0'),
                       'text', 'Here is answer ' || (n - 1) / 3 || E':\n\n- first, **check** the list\n- then `run it`\n\n'
                               || E'```\ncargo xtask dev\n```\n\n| a | b |\n|---|---|\n| 1 | 2 |')
                     ELSE jsonb_build_object('run_id', md5('run' || (n - 1) / 3)::uuid, 'state', 'completed',
                       'usage', jsonb_build_object('steps', 1, 'model_calls', 1, 'tool_calls', 0,
                                                   'input_tokens', 10, 'output_tokens', 40, 'cost', '0'))
                   END",
        )?;
        let output = Command::new("node")
            .args(["bench.mjs", &session, &EVENTS.to_string()])
            .current_dir(&e2e)
            .env("STEWARD_URL", base)
            .env("STEWARD_TOKEN_FILE", &self.token_file)
            .env("STEWARD_ARTIFACTS", self.work.join("web"))
            .env("CHROMIUM", crate::e2e::CHROMIUM)
            .stderr(std::process::Stdio::inherit())
            .output()
            .context("run node web/e2e/bench.mjs")?;
        if !output.status.success() {
            bail!("web/e2e/bench.mjs failed ({})", output.status);
        }
        let web: Value = serde_json::from_slice(&output.stdout).context("web/e2e/bench.mjs printed no JSON")?;
        let kb = number(&web, "shell_bytes")? / 1000.0;
        report.push(
            Row::new(
                "web client first load: script and style, compressed",
                format!("{kb:.1} KB in {} files", number(&web, "shell_assets")?),
            )
            .reference("brotli, as Chromium asks")
            .goal(kb, Goal::AtMost(60.0), "≤ 60 KB"),
        );
        let paint = number(&web, "first_paint_ms")?;
        report.push(
            Row::new(
                "web client first paint (cold, loopback, median of 5)",
                format!("{paint:.0} ms"),
            )
            .reference(format!(
                "a static page from Node on loopback: {:.0} ms",
                number(&web, "reference_first_paint_ms")?
            ))
            .goal(paint, Goal::AtMost(300.0), "≤ 300 ms"),
        );
        let opening = number(&web, "longest_task_opening_ms")?;
        let scrolling = number(&web, "longest_task_scrolling_ms")?;
        report.push(
            Row::new(
                format!("web client: conversation of {EVENTS} events, longest task opening / scrolling"),
                format!(
                    "{opening:.0} / {scrolling:.0} ms (last answer shown after {:.0} ms; {} messages rendered)",
                    number(&web, "open_ms")?,
                    number(&web, "messages")?
                ),
            )
            .reference("long tasks as Chromium reports them (50 ms and over; 0: none)")
            .goal(opening.max(scrolling), Goal::AtMost(100.0), "no task over 100 ms"),
        );
        Ok(())
    }
}
