//! An Azurite blob service of a test's own (`tests/azurite/run.sh` installs Azurite and names it
//! in `AZURITE_BLOB`; the tests that need it are ignored by a plain `cargo test`).

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};

/// Azurite's well-known development account and key (its `EMULATOR_ACCOUNT_KEY_STR`).
pub(crate) const ACCOUNT: &str = "devstoreaccount1";
pub(crate) const KEY: &str =
    "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==";

/// An Azurite blob service of the test's own, on a free port, stopped when dropped.
pub(crate) struct Azurite {
    child: Child,
    /// `http://127.0.0.1:<port>/devstoreaccount1`.
    pub service: String,
    _location: tempfile::TempDir,
}

impl Azurite {
    pub(crate) fn start() -> Azurite {
        let program = std::env::var("AZURITE_BLOB")
            .expect("AZURITE_BLOB names azurite-blob: run tests/azurite/run.sh, which installs Azurite and sets it");
        let location = tempfile::tempdir().unwrap();
        let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let mut child = Command::new(program)
            .args(["--blobHost", "127.0.0.1", "--blobPort", &port.to_string(), "--location"])
            .arg(location.path())
            .args(["--skipApiVersionCheck", "--disableTelemetry", "--silent"])
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("azurite-blob starts");
        // Ready once it says where it listens.
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        loop {
            let line =
                lines.next().expect("azurite-blob said where it listens before it ended").unwrap();
            if line.contains("successfully listens on") {
                break;
            }
        }
        Azurite {
            child,
            service: format!("http://127.0.0.1:{port}/{ACCOUNT}"),
            _location: location,
        }
    }

    /// Its connection string, as Azurite's README gives it.
    pub(crate) fn connection_string(&self) -> String {
        format!(
            "DefaultEndpointsProtocol=http;AccountName={ACCOUNT};AccountKey={KEY};BlobEndpoint={};",
            self.service
        )
    }
}

impl Drop for Azurite {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
