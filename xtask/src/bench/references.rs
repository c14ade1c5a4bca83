//! References measured in the same run: PostgreSQL's commit ceiling and the LangGraph API
//! server.

use super::*;

impl Bench {
    /// The submit workload against the LangGraph API server (`langgraph-cli[inmem]`, in memory)
    /// with a one-node graph, installed into a temporary virtual environment.
    pub(super) fn langgraph(&self, report: &mut Report) -> anyhow::Result<()> {
        let venv = self.work.join("langgraph-venv");
        let python = venv.join("bin/python");
        let quiet = |command: &mut Command, what: &str| -> anyhow::Result<()> {
            let output = command
                .stdin(Stdio::null())
                .output()
                .with_context(|| format!("run {what}"))?;
            if !output.status.success() {
                let text = String::from_utf8_lossy(&output.stderr);
                bail!("{what} failed: {}", text.lines().last().unwrap_or_default());
            }
            Ok(())
        };
        quiet(
            Command::new("python3").args(["-m", "venv"]).arg(&venv),
            "python3 -m venv",
        )?;
        quiet(
            Command::new(&python).args(["-m", "pip", "install", "--quiet", "langgraph-cli[inmem]"]),
            "pip install langgraph-cli[inmem]",
        )?;
        let project = self.work.join("langgraph-project");
        std::fs::create_dir_all(&project)?;
        std::fs::write(project.join("graph.py"), LANGGRAPH_GRAPH)?;
        std::fs::write(project.join("langgraph.json"), LANGGRAPH_CONFIG)?;
        let port = free_port()?;
        let mut server = Process {
            child: Command::new(venv.join("bin/langgraph"))
                .args([
                    "dev",
                    "--host",
                    "127.0.0.1",
                    "--port",
                    &port.to_string(),
                    "--no-browser",
                    "--no-reload",
                ])
                .current_dir(&project)
                // No usage report, no version check, no tracing; warnings only, as the roles
                // here log (its per-run info lines halve its rate).
                .env("LANGGRAPH_CLI_NO_ANALYTICS", "1")
                .env("LANGGRAPH_NO_VERSION_CHECK", "true")
                .env("LANGSMITH_TRACING", "false")
                .env("LOG_LEVEL", "WARNING")
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .context("start langgraph dev")?,
            base: format!("http://127.0.0.1:{port}"),
            ready: None,
        };
        let deadline = Instant::now() + Duration::from_secs(120);
        while !http_ok(&format!("127.0.0.1:{port}"), "/ok") {
            if Instant::now() > deadline || server.child.try_wait()?.is_some() {
                bail!("the LangGraph server did not start");
            }
            std::thread::sleep(Duration::from_millis(200));
        }
        let runs = self.options.submits.min(2000).to_string();
        let measured = self.steward_bench(&[
            "langgraph",
            &server.base,
            "bench",
            &runs,
            &self.options.clients.to_string(),
        ]);
        server.stop();
        let rate = number(&measured?, "runs_per_second")?;
        match self.submit_rate.get() {
            Some(submits) => report.push(
                Row::new(
                    "message submits against the LangGraph API server",
                    format!("{:.1}× LangGraph", submits / rate),
                )
                .reference(format!("LangGraph in memory, `POST /threads/{{id}}/runs`: {rate:.0}/s"))
                .goal(submits / rate, Goal::AtLeast(10.0), "≥ 10×"),
            ),
            None => report.push(Row::new("LangGraph API server runs per second", format!("{rate:.0}/s"))),
        }
        Ok(())
    }

    /// One-row insert transactions per second that pgbench reaches on the cluster with
    /// `clients` connections for 10 seconds (`-M prepared`, no vacuum), in a database of its own.
    pub(super) fn commit_ceiling(&self, clients: &str) -> anyhow::Result<f64> {
        self.psql("postgres", "CREATE DATABASE commit_ceiling")?;
        self.psql(
            "commit_ceiling",
            "CREATE TABLE one_row (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, v integer NOT NULL)",
        )?;
        let script = self.work.join("ceiling.sql");
        std::fs::write(&script, "INSERT INTO one_row (v) VALUES (1);\n").context("write the pgbench script")?;
        let output = Command::new(client_tool(&self.binaries, "pgbench"))
            .args(["-n", "-M", "prepared", "-T", "10", "-c", clients, "-j", "2", "-f"])
            .arg(&script)
            .arg(self.cluster.url("commit_ceiling"))
            .output()
            .context("run pgbench")?;
        if !output.status.success() {
            bail!("pgbench failed: {}", String::from_utf8_lossy(&output.stderr).trim());
        }
        tps(&output.stdout)
    }
}

impl Bench {
    /// The database work of the submits alone, the honest ceiling for Steward's own schema:
    /// pgbench calling the store's `submit_message` function (the one statement
    /// `Store::submit_message` sends, with a message, limits, the offered models and a stored answer of the
    /// API's sizes) as the API's login, one message into each of as many fresh sessions,
    /// `clients` connections, `-M prepared`, in a database of its own migrated alike.
    pub(super) fn submit_ceiling(&self, clients: usize) -> anyhow::Result<f64> {
        const DATABASE: &str = "submit_ceiling";
        const PER_CLIENT: usize = 1000;
        let sessions = clients * PER_CLIENT;
        crate::postgres::prepare_database(&self.bin, &self.cluster.url(DATABASE), &[])?;
        // Session ids are numbered, so each transaction takes the next fresh one.
        let session = "('00000000-0000-4000-8000-' || lpad(to_hex(nextval('bench_session')), 12, '0'))::uuid";
        self.psql(
            DATABASE,
            &format!(
                "BEGIN;
                 INSERT INTO agent_versions (agent_id, version, configuration) VALUES ('bench', '1', '{{}}');
                 INSERT INTO sessions (id, principal_id, index_position, agent_id, agent_version)
                 SELECT ('00000000-0000-4000-8000-' || lpad(to_hex(n), 12, '0'))::uuid, 'owner', n, 'bench', '1'
                 FROM generate_series(1, {sessions}) AS n;
                 UPDATE session_index_clock SET position = {sessions};
                 CREATE SEQUENCE bench_session;
                 GRANT USAGE ON SEQUENCE bench_session TO steward_api;
                 COMMIT;"
            ),
        )?;
        self.psql(DATABASE, "VACUUM ANALYZE")?;
        let script = self.work.join("submit.sql");
        std::fs::write(
            &script,
            format!(
                "SELECT o_outcome FROM submit_message(gen_random_uuid(), {session}, 'owner', gen_random_uuid()::text, \
                 'message.submit', md5(random()::text) || md5(random()::text), '{{}}', 16, 16, 16, 1000000, 300, now(), \
                 'offline', 'none', 'offline', 'none', '{{offline}}', '{{none}}', '{{offline}}', '{{none}}', \
                 'user.message.created', \
                 jsonb_build_object('run_id', gen_random_uuid(), 'message', jsonb_build_object('text', 'hello', 'attachments', '[]'::jsonb)), \
                 'hello', 202, convert_to('{SUBMIT_ANSWER_HEAD}', 'UTF8'), convert_to('}}}}', 'UTF8'));\n"
            ),
        )
        .context("write the pgbench script")?;
        let output = Command::new(client_tool(&self.binaries, "pgbench"))
            .args(["-n", "-M", "prepared", "-j", "2", "-c"])
            .arg(clients.to_string())
            .arg("-t")
            .arg(PER_CLIENT.to_string())
            .arg("-f")
            .arg(&script)
            .arg(pgcluster::with_user(&self.cluster.url(DATABASE), "steward_api"))
            .output()
            .context("run pgbench")?;
        if !output.status.success() {
            bail!("pgbench failed: {}", String::from_utf8_lossy(&output.stderr).trim());
        }
        // Every transaction must have submitted: a refusal is cheaper and would flatter the rate.
        let submitted: usize = self
            .psql(DATABASE, "SELECT count(*) FROM runs WHERE message_seq IS NOT NULL")?
            .parse()
            .context("count the submitted runs")?;
        if submitted != sessions {
            bail!("pgbench submitted {submitted} messages of {sessions}");
        }
        tps(&output.stdout)
    }
}

/// The start of a submit's stored answer as the API renders it (the run, up to its message
/// sequence), so the pgbench row stores an answer of the same size.
const SUBMIT_ANSWER_HEAD: &str = "{\"run\": {\"id\": \"019a0000-0000-7000-8000-000000000000\", \
    \"session_id\": \"019a0000-0000-7000-8000-000000000001\", \"state\": \"queued\", \
    \"limits\": {\"max_steps\": 16, \"max_model_calls\": 16, \"max_tool_calls\": 16, \
    \"max_cost_micros\": 1000000, \"run_timeout_seconds\": 300}, \"deadline_at\": \
    \"2026-11-29T12:05:00.000000Z\", \"created_at\": \"2026-11-29T12:00:00.000000Z\", \
    \"updated_at\": \"2026-11-29T12:00:00.000000Z\", \"message_seq\": ";

/// The `tps = …` figure pgbench printed.
fn tps(stdout: &[u8]) -> anyhow::Result<f64> {
    String::from_utf8_lossy(stdout)
        .lines()
        .find_map(|line| line.strip_prefix("tps = "))
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|tps| tps.parse().ok())
        .context("pgbench printed no tps")
}

/// A one-node LangGraph graph: the node answers without a model.
pub(super) const LANGGRAPH_GRAPH: &str = "\
from typing import TypedDict
from langgraph.graph import StateGraph, START, END

class State(TypedDict):
    messages: list

def answer(state: State) -> dict:
    return {\"messages\": state.get(\"messages\", []) + [{\"role\": \"assistant\", \"content\": \"ok\"}]}

builder = StateGraph(State)
builder.add_node(\"answer\", answer)
builder.add_edge(START, \"answer\")
builder.add_edge(\"answer\", END)
graph = builder.compile()
";

pub(super) const LANGGRAPH_CONFIG: &str = r#"{"dependencies": ["."], "graphs": {"bench": "./graph.py:graph"}}"#;
