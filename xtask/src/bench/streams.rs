//! Streams: submits, persisted events and model deltas reaching stream clients, idle streams
//! against bare axum, and a replay against `psql \copy`.

use super::*;

impl Bench {
    pub(super) fn against_api(&self, api: &mut Process, report: &mut Report) -> anyhow::Result<()> {
        let base = api.base.clone();
        let clients = self.options.clients.to_string();
        let submits = self.steward_bench(&[
            "submits",
            &base,
            path(&self.token_file),
            "200",
            &self.options.submits.to_string(),
            &clients,
        ])?;
        let rate = number(&submits, "submits_per_second")?;
        report.push(Row::new(
            "submit → first persisted event on the stream, p50 / p99 (sequential)",
            format!(
                "{:.2} / {:.2} ms",
                number(&submits, "first_event_p50_ms")?,
                number(&submits, "first_event_p99_ms")?
            ),
        ));
        let submits = format!("message submits per second ({clients} clients)");
        let ceiling = self.commit_ceiling(&clients);
        match self.submit_ceiling(self.options.clients) {
            Ok(same_work) => {
                report.push(
                    Row::new(
                        submits,
                        format!("{rate:.0}/s = {:.0}% of the same work", 100.0 * rate / same_work),
                    )
                    .reference(format!("pgbench calling `submit_message`: {same_work:.0}/s"))
                    .goal(rate / same_work, Goal::AtLeast(0.8), "≥ 80% of the same work"),
                );
                match &ceiling {
                    Ok(ceiling) => report.push(
                        Row::new(
                            format!("database work of a submit: pgbench calling `submit_message` ({clients} clients)"),
                            format!("{same_work:.0}/s = {:.0}% of the ceiling", 100.0 * same_work / ceiling),
                        )
                        .reference(format!("PostgreSQL one-row insert commits (pgbench): {ceiling:.0}/s"))
                        .goal(same_work / ceiling, Goal::AtLeast(0.5), "≥ 50% of the ceiling"),
                    ),
                    Err(error) => report.missed("database work of a submit against the one-row ceiling", error),
                }
            }
            Err(error) => report.push(Row::new(
                submits,
                format!("{rate:.0}/s; the same work in pgbench not measured: {error:#}"),
            )),
        }
        self.submit_rate.set(Some(rate));
        // No worker ran during the submits: their runs wait in the queue. Set them aside, so the
        // stream figures measure their own runs, not a worker draining thousands first.
        self.psql(
            "steward_bench",
            "UPDATE runs SET state = 'cancelled', outcome_reason = 'requested', finished_at = now(), updated_at = now() \
             WHERE state = 'queued'",
        )?;

        let mut worker = self.start_role(role("steward-worker"), &[])?;
        let events = self.steward_bench(&[
            "events",
            &base,
            path(&self.token_file),
            &self.options.streams.to_string(),
            "15",
        ]);
        worker.stop();
        match events {
            Ok(events) => {
                let p99 = number(&events, "p99_ms")?;
                report.push(
                    Row::new(
                        format!(
                            "persisted event → SSE client, p50 / p99 ({} live streams)",
                            self.options.streams
                        ),
                        format!("{:.2} / {p99:.2} ms", number(&events, "p50_ms")?),
                    )
                    .reference(format!(
                        "{} frames of {} runs",
                        number(&events, "frames")?,
                        number(&events, "runs")?
                    ))
                    .goal(p99, Goal::AtMost(20.0), "p99 ≤ 20 ms"),
                );
            }
            Err(error) => report.missed("persisted event → SSE client latency", &error),
        }

        let idle = self.steward_bench(&[
            "idle",
            &base,
            path(&self.token_file),
            &self.options.idle_streams.to_string(),
            &api.child.id().to_string(),
            "20",
        ]);
        // The same streams held by bare axum on the same HTTP stack (no database, no state):
        // what an idle stream costs before any of Steward's own work.
        let floor = self.floor_streams();
        match idle {
            Ok(idle) => {
                let mib = number(&idle, "rss_kib")? / 1024.0;
                let before = number(&idle, "rss_before_kib")? / 1024.0;
                let measurement = format!(
                    "`steward-api` resident memory holding {} idle streams",
                    self.options.idle_streams
                );
                match floor {
                    Ok((floor_before, floor_held)) => {
                        let floor_held = floor_held / 1024.0;
                        report.push(
                            Row::new(
                                measurement,
                                format!("{mib:.1} MiB = {:.2}× bare axum", mib / floor_held),
                            )
                            .reference(format!(
                                "{before:.1} MiB before; bare axum holding the same streams: {floor_held:.1} MiB \
                                     ({:.1} before)",
                                floor_before / 1024.0
                            ))
                            .goal(
                                mib / floor_held,
                                Goal::AtMost(1.25),
                                "≤ 1.25× bare axum",
                            ),
                        );
                    }
                    Err(error) => report.push(
                        Row::new(measurement, format!("{mib:.1} MiB"))
                            .reference(format!("{before:.1} MiB before; bare axum not measured: {error:#}")),
                    ),
                }
            }
            Err(error) => report.missed("idle streams", &error),
        }

        if let Err(error) = self.replay(&base, report) {
            report.missed("replay", &error);
        }
        if let Err(error) = self.web_client(&base, report) {
            report.missed("web client", &error);
        }
        Ok(())
    }

    /// The resident memory (KiB) of `steward-bench floor` before and while holding the idle
    /// streams.
    pub(super) fn floor_streams(&self) -> anyhow::Result<(f64, f64)> {
        let (server, port) = self.bench_server("floor")?;
        let held = self.steward_bench_profiled(
            "floor",
            &[
                "idle",
                &format!("http://127.0.0.1:{port}"),
                path(&self.token_file),
                &self.options.idle_streams.to_string(),
                &server.child.id().to_string(),
                "5",
            ],
        )?;
        drop(server);
        Ok((number(&held, "rss_before_kib")?, number(&held, "rss_kib")?))
    }

    /// `steward-bench NAME PORT_FILE` (a server of its own: `floor`, `model`) running, and the
    /// port it listens on.
    pub(super) fn bench_server(&self, name: &str) -> anyhow::Result<(Process, String)> {
        let port_file = self.work.join(format!("{name}.port"));
        let _ = std::fs::remove_file(&port_file);
        let child = Command::new(self.bin.join("steward-bench"))
            .args([name, path(&port_file)])
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .spawn()
            .with_context(|| format!("start steward-bench {name}"))?;
        let server = Process {
            child,
            base: String::new(),
            ready: None,
        };
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            if let Some(port) = std::fs::read_to_string(&port_file).ok().filter(|port| !port.is_empty()) {
                return Ok((server, port));
            }
            if Instant::now() > deadline {
                bail!("the {name} server did not start");
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Model tokens from the worker to a stream client, beside the same tokens read directly from
    /// the model server: the worker streams from `steward-bench model` (each piece stamped with
    /// its send time), so a token's latency is its whole path: the worker reading the model,
    /// sealing and `NOTIFY`, the API opening and relaying it, the client reading it. And from each
    /// submit's answer to the model server receiving the request it caused: the agent loop's
    /// overhead before the model works.
    pub(super) fn model_deltas(&self, report: &mut Report) -> anyhow::Result<()> {
        let (model, port) = self.bench_server("model")?;
        let definitions = self.work.join("stream-agents.json");
        std::fs::write(
            &definitions,
            r#"[{"id": "default", "instructions": "Answer.", "model": {"provider": "openai", "model": "bench-stream"}}]"#,
        )?;
        let key = self.work.join("model-api-key");
        write_secret(&key, "bench-model-key-0123456789")?;
        let mut api = self.start_api_with(&[("AGENT_DEFINITIONS_FILE", path(&definitions).to_owned())])?;
        let mut worker = self.start_role(
            role("steward-worker"),
            &[
                ("OPENAI_BASE_URL", format!("http://127.0.0.1:{port}/v1")),
                ("OPENAI_API_KEY_FILE", path(&key).to_owned()),
                // One run per stream at once: every stream's answer streams for a second.
                ("WORKER_CONCURRENCY", self.options.streams.to_string()),
            ],
        )?;
        let streams = self.options.streams.to_string();
        let model_base = format!("http://127.0.0.1:{port}");
        let events = self.steward_bench(&["events", &api.base, path(&self.token_file), &streams, "10", &model_base]);
        worker.stop();
        api.stop();
        // The reference: the same model server's tokens read directly, as many streams at once.
        let direct = self.steward_bench(&["direct", &model_base, &streams, "10"]);
        drop(model);
        let events = events?;
        let (deltas, event_p99) = (number(&events, "deltas")?, number(&events, "p99_ms")?);
        if deltas < 1.0 {
            bail!("no stamped delta reached a stream");
        }
        let delta_p99 = number(&events, "delta_p99_ms")?;
        let token = Row::new(
            format!("model token (worker) → SSE client, p50 / p99 ({streams} live streams)"),
            format!("{:.2} / {delta_p99:.2} ms", number(&events, "delta_p50_ms")?),
        );
        match direct {
            Ok(direct) => {
                let direct_p99 = number(&direct, "p99_ms")?;
                report.push(
                    token
                        .reference(format!(
                            "the same tokens read directly from the model server: {:.2} / {direct_p99:.2} ms; \
                             persisted events in the same run: p99 {event_p99:.2} ms; {deltas} tokens",
                            number(&direct, "p50_ms")?
                        ))
                        .goal(
                            delta_p99 - direct_p99,
                            Goal::AtMost(10.0),
                            "p99 ≤ 10 ms above the direct read",
                        ),
                );
            }
            Err(error) => report.push(token.reference(format!(
                "persisted events in the same run: p99 {event_p99:.2} ms; the direct read was not measured: {error:#}"
            ))),
        }
        let requests = number(&events, "model_requests")?;
        if requests >= 1.0 {
            report.push(
                Row::new(
                    format!("submit answered → model request, p50 / p99 ({streams} live streams)"),
                    format!(
                        "{:.2} / {:.2} ms",
                        number(&events, "model_request_p50_ms")?,
                        number(&events, "model_request_p99_ms")?
                    ),
                )
                .reference(format!("{requests} requests")),
            );
        } else {
            report.missed(
                "submit → model request",
                &anyhow::anyhow!("no submit's request reached the model"),
            );
        }
        Ok(())
    }

    /// A session of `count` events replayed from `Last-Event-ID: 0`, against `psql \copy` of the
    /// same rows.
    pub(super) fn replay(&self, base: &str, report: &mut Report) -> anyhow::Result<()> {
        let count = self.options.replay_events;
        let session = self.fill_empty_session(
            count,
            "'user.message.created'",
            "jsonb_build_object('run_id', gen_random_uuid(), 'message',
                 jsonb_build_object('text', 'replayed message ' || n, 'attachments', '[]'::jsonb))",
        )?;
        self.psql("steward_bench", "VACUUM ANALYZE events")?;
        let replay = self.steward_bench(&["replay", base, path(&self.token_file), &session, &count.to_string()])?;
        let seconds = number(&replay, "seconds")?;
        let started = Instant::now();
        self.psql(
            "steward_bench",
            &format!(
                "\\copy (SELECT session_id, seq, run_id, kind, payload, created_at FROM events \
                 WHERE session_id = '{session}' ORDER BY seq) TO '/dev/null'"
            ),
        )?;
        let copy = started.elapsed().as_secs_f64();
        let (rate, reference) = (count as f64 / seconds, count as f64 / copy);
        report.push(
            Row::new(
                format!("replay of {count} events from `Last-Event-ID: 0`"),
                format!("{rate:.0} events/s = {:.0}% of `\\copy`", 100.0 * rate / reference),
            )
            .reference(format!("`psql \\copy` of the same rows: {reference:.0} rows/s"))
            .goal(rate / reference, Goal::AtLeast(0.5), "≥ 50% of `\\copy`"),
        );
        Ok(())
    }
}
