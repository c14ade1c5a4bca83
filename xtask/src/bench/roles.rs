//! The roles: each started alone (memory, start to READY), and the processes the other rows
//! run against.

use super::*;

impl Bench {
    pub(super) fn role(&self, role: &Role, report: &mut Report) -> anyhow::Result<()> {
        let started = Instant::now();
        let mut process = self.start_role(role, &[])?;
        let ready = process.ready.unwrap_or(started.elapsed());
        std::thread::sleep(Duration::from_secs(3));
        let rss = self.steward_bench(&["rss", &process.child.id().to_string()])?;
        let rss = number(&rss, "rss_kib")? / 1024.0;
        process.stop();
        let limit = 15.0;
        report.push(
            Row::new(
                format!("`{}` resident memory, idle", role.binary),
                format!("{rss:.1} MiB"),
            )
            .goal(rss, Goal::AtMost(limit), format!("≤ {limit:.0} MiB")),
        );
        let ms = ready.as_secs_f64() * 1000.0;
        report.push(
            Row::new(format!("`{}` start to READY", role.binary), format!("{ms:.0} ms")).goal(
                ms,
                Goal::AtMost(100.0),
                "≤ 100 ms",
            ),
        );
        Ok(())
    }

    /// Starts a role with its own login and the fixtures it needs, and waits for its `READY=1`.
    pub(super) fn start_role(&self, role: &Role, extra: &[(&str, String)]) -> anyhow::Result<Process> {
        let socket_path = self.work.join(format!("{}.notify", role.binary));
        let _ = std::fs::remove_file(&socket_path);
        let socket = UnixDatagram::bind(&socket_path).context("bind the notify socket")?;
        socket.set_read_timeout(Some(Duration::from_secs(30)))?;
        let mut env: Vec<(&str, String)> = vec![
            ("DATABASE_URL", pgcluster::with_user(&self.database_url, role.login)),
            (crate::postgres::ALLOW_ROOT.0, crate::postgres::ALLOW_ROOT.1.to_owned()),
            ("LOG_LEVEL", "warn".to_owned()),
            ("NOTIFY_SOCKET", path(&socket_path).to_owned()),
        ];
        let mut base = String::new();
        match role.binary {
            "steward-api" => {
                let port = free_port()?;
                base = format!("http://127.0.0.1:{port}");
                env.extend([
                    ("API_TOKEN_FILE", path(&self.token_file).to_owned()),
                    ("API_LISTEN_ADDR", format!("127.0.0.1:{port}")),
                    ("AUTH_SCOPES", "sessions.read,sessions.write".to_owned()),
                    ("DATABASE_MAX_CONNECTIONS", self.options.clients.to_string()),
                    // The idle streams are as many connections, beyond the default cap of 1024.
                    ("API_MAX_CONNECTIONS", (self.options.idle_streams + 1024).to_string()),
                ]);
            }
            "steward-notify" => {
                let key = self.work.join("apns.p8");
                let pair = rcgen::KeyPair::generate_for(&rcgen::PKCS_ECDSA_P256_SHA256).context("generate a key")?;
                write_secret(&key, &pair.serialize_pem())?;
                env.extend([
                    ("AGENT_NOTIFICATION_API_ENABLED", "1".to_owned()),
                    ("AGENT_NOTIFICATION_DISPATCH_ENABLED", "1".to_owned()),
                    ("APNS_KEY_FILE", path(&key).to_owned()),
                    ("APNS_TEAM_ID", "TEAM123456".to_owned()),
                    ("APNS_KEY_ID", "KEY1234567".to_owned()),
                    ("APNS_TOPIC", "dev.steward.client".to_owned()),
                ]);
            }
            _ => {}
        }
        env.extend(extra.iter().cloned());
        let started = Instant::now();
        let child = Command::new(self.bin.join(role.binary))
            .env_clear()
            .envs(env)
            .stdin(Stdio::null())
            .spawn()
            .with_context(|| format!("start {}", role.binary))?;
        let mut process = Process {
            child,
            base,
            ready: None,
        };
        let mut message = [0_u8; 1024];
        loop {
            let length = match socket.recv(&mut message) {
                Ok(length) => length,
                Err(error) => {
                    process.stop();
                    return Err(error).with_context(|| format!("{} sent no READY=1", role.binary));
                }
            };
            if String::from_utf8_lossy(&message[..length])
                .lines()
                .any(|line| line == "READY=1")
            {
                process.ready = Some(started.elapsed());
                break;
            }
        }
        let _ = std::fs::remove_file(&socket_path);
        Ok(process)
    }

    /// The API, answering `GET /health/ready`.
    pub(super) fn start_api(&self) -> anyhow::Result<Process> {
        self.start_api_with(&[])
    }

    /// [`Bench::start_api`] with `extra` in its environment.
    pub(super) fn start_api_with(&self, extra: &[(&str, String)]) -> anyhow::Result<Process> {
        let mut api = self.start_role(role("steward-api"), extra)?;
        let deadline = Instant::now() + Duration::from_secs(30);
        let address = api.base.trim_start_matches("http://").to_owned();
        while !health_ready(&address) {
            if Instant::now() > deadline || api.child.try_wait()?.is_some() {
                api.stop();
                bail!("steward-api did not become ready");
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        Ok(api)
    }
}

/// A daemon role and the database login it runs as.
pub(super) struct Role {
    pub(super) binary: &'static str,
    pub(super) login: &'static str,
}

pub(super) const ROLES: &[Role] = &[
    Role {
        binary: "steward-api",
        login: "steward_api",
    },
    Role {
        binary: "steward-worker",
        login: "steward_worker",
    },
    Role {
        binary: "steward-schedule",
        login: "steward_schedule",
    },
    Role {
        binary: "steward-notify",
        login: "steward_notify",
    },
    // steward-call-ingress requires calling, which this release refuses at start: it is
    // measured again when calling lands.
];

pub(super) fn role(binary: &str) -> &'static Role {
    ROLES.iter().find(|role| role.binary == binary).expect("a listed role")
}

/// A started role, stopped (SIGTERM, then waited for) when dropped.
pub(super) struct Process {
    pub(super) child: Child,
    /// The base URL of a role that serves HTTP.
    pub(super) base: String,
    pub(super) ready: Option<Duration>,
}

impl Process {
    pub(super) fn stop(&mut self) {
        if matches!(self.child.try_wait(), Ok(None)) {
            let _ = kill(Pid::from_raw(self.child.id() as i32), Signal::SIGTERM);
        }
        let _ = self.child.wait();
    }
}

impl Drop for Process {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Whether `GET /health/ready` answers 200 at `address`.
pub(super) fn health_ready(address: &str) -> bool {
    http_ok(address, "/health/ready")
}

/// Whether `GET path` answers 200 at `address`.
pub(super) fn http_ok(address: &str, path: &str) -> bool {
    use std::io::Read as _;
    let Ok(mut stream) = std::net::TcpStream::connect(address) else {
        return false;
    };
    let _ = stream.set_read_timeout(Some(Duration::from_secs(2)));
    if stream
        .write_all(format!("GET {path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n").as_bytes())
        .is_err()
    {
        return false;
    }
    let mut head = [0_u8; 12];
    stream.read_exact(&mut head).is_ok() && &head[9..12] == b"200"
}
