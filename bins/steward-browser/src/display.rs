//! The X display a headed Chromium draws on: on a server, a virtual one (`Xvfb`) this role
//! starts and stops; on a desktop, an existing one named by `BROWSER_DISPLAY`.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

/// How long `Xvfb` may take to say which display it serves.
pub const START_TIMEOUT: Duration = Duration::from_secs(20);

/// The screen every hosted browser window is drawn on.
pub const SCREEN: &str = "1280x800x24";

#[derive(Debug, thiserror::Error)]
pub enum DisplayError {
    #[error("cannot start {program}: {source}")]
    Spawn { program: String, source: std::io::Error },
    #[error("{program} exited before serving a display ({status})")]
    Exited { program: String, status: String },
    #[error("{program} did not serve a display within {} seconds", START_TIMEOUT.as_secs())]
    Timeout { program: String },
}

/// An `Xvfb` server this process started; dropping it stops the server.
pub struct VirtualDisplay {
    child: Child,
    name: String,
}

impl VirtualDisplay {
    /// Starts `xvfb` on a display number it picks itself (`-displayfd`: it writes the number to
    /// its standard output once it accepts clients), listening on no TCP port. Blocking: call
    /// from a blocking context.
    pub fn start(xvfb: &Path) -> Result<VirtualDisplay, DisplayError> {
        let program = xvfb.display().to_string();
        let mut child = Command::new(xvfb)
            .args(["-displayfd", "1", "-nolisten", "tcp", "-screen", "0", SCREEN])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|source| DisplayError::Spawn {
                program: program.clone(),
                source,
            })?;
        let stdout = child.stdout.take();
        let (said, heard) = mpsc::channel();
        std::thread::spawn(move || {
            let mut line = String::new();
            if let Some(stdout) = stdout {
                let _ = BufReader::new(stdout).read_line(&mut line);
            }
            let _ = said.send(line);
        });
        let number = heard.recv_timeout(START_TIMEOUT).ok();
        match number.as_deref().map(str::trim) {
            Some(number) if !number.is_empty() && number.bytes().all(|byte| byte.is_ascii_digit()) => {
                Ok(VirtualDisplay {
                    child,
                    name: format!(":{number}"),
                })
            }
            heard => {
                let exited = child.try_wait().ok().flatten();
                let _ = child.kill();
                let _ = child.wait();
                Err(match (heard, exited) {
                    (_, Some(status)) => DisplayError::Exited {
                        program,
                        status: status.to_string(),
                    },
                    (Some(_), None) => DisplayError::Exited {
                        program,
                        status: "no display number".to_owned(),
                    },
                    (None, None) => DisplayError::Timeout { program },
                })
            }
        }
    }

    /// The display's name, the value of `DISPLAY` (`:<number>`).
    pub fn name(&self) -> &str {
        &self.name
    }
}

impl Drop for VirtualDisplay {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
